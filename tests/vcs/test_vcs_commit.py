"""Commits in the normal and the odd repository states, hooks in the sandbox and on the host."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from coder.vcs.commit import check_can_commit, commit_changes, find_hooks, repo_state
from coder.vcs.repo import NotARepository, Repo, VcsError


def hook(repo: Path, name: str, body: str) -> Path:
    path = repo / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def index_hash(repo: Path) -> str:
    return hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()


def test_commit_all_changes_with_message(git_repo: Path, g) -> None:
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (git_repo / "src" / "new.py").write_text("X = 1\n")
    result = commit_changes(Repo.open(git_repo), "fix(src): use an f-string\n\nGenerated-by: coder (test)\n")
    assert result.committed and result.branch == "main"
    assert result.sha == g(git_repo, "rev-parse", "HEAD").strip()
    assert sorted(result.files) == ["src/app.py", "src/new.py"]
    assert g(git_repo, "log", "-1", "--format=%B").strip().endswith("Generated-by: coder (test)")
    assert g(git_repo, "status", "--porcelain") == ""
    assert "committed" in result.summary()


def test_commit_only_selected_paths(git_repo: Path, g) -> None:
    (git_repo / "README.md").write_text("# user's own edit\n")
    (git_repo / "src" / "app.py").write_text("# agent\n")
    result = commit_changes(Repo.open(git_repo), "chore: agent change", paths=["src/app.py"])
    assert result.files == ["src/app.py"]
    assert g(git_repo, "status", "--porcelain").strip() == "M README.md"


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(NotARepository, match="not inside a git repository"):
        commit_changes(Repo.open(tmp_path), "feat: x")


def test_empty_diff(git_repo: Path) -> None:
    with pytest.raises(VcsError, match="Nothing to commit"):
        commit_changes(Repo.open(git_repo), "feat: nothing")
    (git_repo / "README.md").write_text("changed\n")
    with pytest.raises(VcsError, match="Nothing to commit"):
        commit_changes(Repo.open(git_repo), "feat: nothing", paths=["src"])


def test_detached_head_refused_then_allowed_on_a_new_branch(git_repo: Path, g) -> None:
    head = g(git_repo, "rev-parse", "HEAD").strip()
    g(git_repo, "checkout", "-q", "--detach")
    (git_repo / "README.md").write_text("work on detached head\n")
    with pytest.raises(VcsError, match="detached"):
        commit_changes(Repo.open(git_repo), "docs: readme")
    result = commit_changes(Repo.open(git_repo), "docs: readme", branch="coder/readme")
    assert result.committed and result.branch == "coder/readme"
    assert g(git_repo, "symbolic-ref", "--short", "HEAD").strip() == "coder/readme"
    assert g(git_repo, "rev-parse", "HEAD~1").strip() == head
    assert g(git_repo, "rev-parse", "main").strip() == head  # main untouched


def test_new_branch_must_be_new_and_valid(git_repo: Path) -> None:
    (git_repo / "README.md").write_text("x\n")
    with pytest.raises(VcsError, match="already exists"):
        commit_changes(Repo.open(git_repo), "docs: x", branch="main")
    with pytest.raises(VcsError, match="not a valid branch name"):
        commit_changes(Repo.open(git_repo), "docs: x", branch="bad..name")


def _conflict(repo: Path, g) -> None:
    g(repo, "checkout", "-q", "-b", "other")
    (repo / "README.md").write_text("other side\n")
    g(repo, "commit", "-q", "-am", "other")
    g(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main side\n")
    g(repo, "commit", "-q", "-am", "main")


def test_merge_in_progress(git_repo: Path, g) -> None:
    _conflict(git_repo, g)
    g(git_repo, "merge", "other", check=False)
    assert repo_state(Repo.open(git_repo)).operations == ["merge"]
    with pytest.raises(VcsError, match=r"merge is in progress.*git merge --abort"):
        commit_changes(Repo.open(git_repo), "fix: resolve")


def test_rebase_in_progress(git_repo: Path, g) -> None:
    _conflict(git_repo, g)
    g(git_repo, "checkout", "-q", "other")
    g(git_repo, "rebase", "main", check=False)
    state = repo_state(Repo.open(git_repo))
    assert "rebase" in state.operations and state.detached
    with pytest.raises(VcsError, match="rebase --abort"):
        check_can_commit(Repo.open(git_repo))


def test_failing_pre_commit_hook_on_host_leaves_everything_as_it_was(git_repo: Path, g) -> None:
    hook(git_repo, "pre-commit", "echo 'lint failed: src/app.py' >&2\nexit 1\n")
    (git_repo / "src" / "app.py").write_text("bad = 1\n")
    (git_repo / "extra.py").write_text("y = 2\n")
    head, index = g(git_repo, "rev-parse", "HEAD").strip(), index_hash(git_repo)
    result = commit_changes(Repo.open(git_repo), "fix: thing", branch="coder/try", run_hooks_in="host")
    assert not result.committed
    assert "pre-commit hook failed (exit 1)" in result.error and "lint failed: src/app.py" in result.error
    assert g(git_repo, "rev-parse", "HEAD").strip() == head
    assert index_hash(git_repo) == index  # staging was rolled back byte for byte
    assert g(git_repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert "coder/try" not in g(git_repo, "branch", "--list")
    assert (git_repo / "extra.py").read_text() == "y = 2\n"  # the work is still there


def test_hooks_run_in_the_sandbox(git_repo: Path, g) -> None:
    hook(git_repo, "pre-commit", "test \"$CODER_SANDBOX\" = 1 || { echo not sandboxed; exit 3; }\n"
                                 "git diff --cached --name-only\n")
    hook(git_repo, "commit-msg", "echo 'Reviewed-by: hook' >> \"$1\"\n")
    hook(git_repo, "post-commit", "echo done\n")
    assert set(find_hooks(Repo.open(git_repo).hooks_dir())) == {"pre-commit", "commit-msg", "post-commit"}
    (git_repo / "src" / "app.py").write_text("ok = 1\n")
    result = commit_changes(Repo.open(git_repo), "refactor: simplify", run_hooks_in="sandbox")
    assert result.committed, result.error
    assert [(h.name, h.where, h.exit_code) for h in result.hooks] == [
        ("pre-commit", "sandbox", 0), ("commit-msg", "sandbox", 0), ("post-commit", "sandbox", 0)]
    assert "src/app.py" in result.hooks[0].output
    assert g(git_repo, "log", "-1", "--format=%B").strip().endswith("Reviewed-by: hook")


def test_failing_hook_in_the_sandbox(git_repo: Path, g) -> None:
    hook(git_repo, "pre-commit", "echo 'tests failed' ; exit 7\n")
    (git_repo / "README.md").write_text("x\n")
    result = commit_changes(Repo.open(git_repo), "docs: x")
    assert not result.committed and "exit 7" in result.error and "tests failed" in result.error
    assert g(git_repo, "status", "--porcelain").strip() == "M README.md"


def test_skipping_hooks_is_explicit_and_reported(git_repo: Path) -> None:
    hook(git_repo, "pre-commit", "exit 1\n")
    (git_repo / "README.md").write_text("x\n")
    result = commit_changes(Repo.open(git_repo), "docs: x", run_hooks_in="skip")
    assert result.committed and result.hooks_skipped == ["pre-commit"] and result.hooks == []
    assert "hooks NOT run" in result.summary()


def test_core_hooks_path_is_respected(git_repo: Path, g) -> None:
    hooks_dir = git_repo / "githooks"
    hooks_dir.mkdir()
    (hooks_dir / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (hooks_dir / "pre-commit").chmod(0o755)
    g(git_repo, "config", "core.hooksPath", "githooks")
    (git_repo / "README.md").write_text("x\n")
    assert not commit_changes(Repo.open(git_repo), "docs: x", run_hooks_in="host").committed


def test_first_commit_in_an_empty_repository(tmp_path: Path, g) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    g(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("A = 1\n")
    result = commit_changes(Repo.open(repo), "feat: first", branch="start")
    assert result.committed and result.branch == "start"
    assert g(repo, "log", "--format=%s").strip() == "feat: first"
    assert g(repo, "symbolic-ref", "--short", "HEAD").strip() == "start"


def test_hook_that_hangs_times_out(git_repo: Path, g) -> None:
    hook(git_repo, "pre-commit", "echo started\nsleep 30\n")
    (git_repo / "README.md").write_text("x\n")
    result = commit_changes(Repo.open(git_repo), "docs: x", run_hooks_in="host", hook_timeout=1)
    assert not result.committed and result.hooks[0].timed_out and "timed out" in result.error
    assert g(git_repo, "log", "--format=%s").strip() == "initial"
