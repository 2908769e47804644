"""The hardened host git keeps what the user's own configuration asks for: their hooks directory (for commit.py's
sandboxed hook runs), filters from their global config, their identity; and it reaches no other repository."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from coder.host import git as hostgit
from coder.vcs.commit import commit_changes, find_hooks
from coder.vcs.repo import Repo


def _hook(where: Path, name: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    hook = where / name
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return hook


def test_find_hooks_reads_the_users_hooks_path_not_the_override(git_repo: Path, g) -> None:
    assert find_hooks(Repo.open(git_repo).hooks_dir()) == {}
    default = _hook(git_repo / ".git" / "hooks", "pre-commit")
    assert find_hooks(Repo.open(git_repo).hooks_dir()) == {"pre-commit": default}
    g(git_repo, "config", "core.hooksPath", "githooks")
    mine = _hook(git_repo / "githooks", "commit-msg")
    hooks = find_hooks(Repo.open(git_repo).hooks_dir())
    assert hooks == {"commit-msg": git_repo / "githooks" / "commit-msg"} and mine.exists()


def test_filters_from_the_users_global_config_still_run(git_repo: Path, g) -> None:
    upper = "tr a-z A-Z"
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as fh:
        fh.write(f'[filter "up"]\n\tclean = {upper}\n\tsmudge = cat\n')
    (git_repo / ".gitattributes").write_text("*.up filter=up\n")
    (git_repo / "a.up").write_text("hello\n")
    tree = Repo.open(git_repo).worktree_tree()
    assert g(git_repo, "cat-file", "blob", f"{tree}:a.up") == "HELLO\n"
    assert hostgit.untrusted_drivers(git_repo) == []
    assert commit_changes(Repo.open(git_repo), "add a.up").committed
    # the same driver in the repository's config is not run
    g(git_repo, "config", "filter.local.clean", upper)
    (git_repo / ".gitattributes").write_text("*.up filter=local\n")
    (git_repo / "b.up").write_text("hello\n")
    assert g(git_repo, "cat-file", "blob", f"{Repo.open(git_repo).worktree_tree()}:b.up") == "hello\n"


def test_host_git_reaches_no_other_repository_unless_asked(git_repo: Path, tmp_path: Path) -> None:
    blocked = hostgit.run(tmp_path, ["clone", "-q", str(git_repo), str(tmp_path / "a")])
    assert blocked.returncode != 0 and "not allowed" in blocked.stderr
    allowed = hostgit.run(tmp_path, ["clone", "-q", str(git_repo), str(tmp_path / "b")], protocols="file")
    assert allowed.returncode == 0 and (tmp_path / "b" / "README.md").exists()


def test_status_does_not_rewrite_the_users_index(git_repo: Path) -> None:
    index = git_repo / ".git" / "index"
    old = index.stat().st_mtime_ns - 10_000_000_000
    os.utime(index, ns=(old, old))
    os.utime(git_repo / "README.md")  # stat-dirty: a plain `git status` would refresh and rewrite the index
    assert hostgit.run(git_repo, ["status", "--porcelain"]).stdout == ""
    assert index.stat().st_mtime_ns == old


def test_linked_worktrees_and_submodule_checkouts_keep_working_with_the_pinned_git_dir(git_repo: Path, g,
                                                                                       tmp_path: Path) -> None:
    """A `.git` file is handed to git as GIT_DIR with the work tree pinned to its folder: a linked worktree (whose
    git dir has a legitimate `commondir`) and a submodule (whose git dir sets `core.worktree`) still work."""
    from coder.vcs.checkpoints import Checkpoints
    from coder.vcs.repo import Repo

    wt = tmp_path / "wt"
    g(git_repo, "worktree", "add", "-q", "-b", "side", str(wt))
    assert Repo.open(wt / "src").root == wt and hostgit.repo_top(wt / "src") == wt
    cps = Checkpoints(Repo.open(wt), "wt-session")
    (wt / "README.md").write_text("in the worktree\n")
    assert cps.snapshot("turn") is not None
    assert commit_changes(Repo.open(wt), "docs: worktree").committed
    assert g(git_repo, "log", "-1", "--format=%s", "side").strip() == "docs: worktree"
    cps.undo()  # back to the baseline: the committed edit is undone in the work tree only
    assert (wt / "README.md").read_text() == "# demo\n"
    g(git_repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(wt), "mod")
    assert (git_repo / "mod" / ".git").is_file()
    assert g(git_repo, "config", "--file", ".git/modules/mod/config", "core.worktree").strip()  # git's own
    mod = git_repo / "mod"
    assert Repo.open(mod).root == mod and hostgit.run(mod, ["rev-parse", "--show-toplevel"]).stdout.strip() == str(mod)
    assert hostgit.run(mod, ["status", "--porcelain"]).stdout == ""


def test_repo_top_is_the_nearest_git_entry(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert hostgit.repo_top(deep) is None
    (tmp_path / "a" / ".git").write_text("gitdir: nowhere\n")
    assert hostgit.repo_top(deep) == tmp_path / "a"
    assert hostgit.pinned_repo(deep) == {"GIT_DIR": str(tmp_path / "a" / ".git"), "GIT_WORK_TREE": str(tmp_path / "a")}
    assert hostgit.run(deep, ["rev-parse", "--show-toplevel"]).returncode != 0  # an invalid .git is no repository


def test_driver_listing_is_skipped_only_for_commands_that_read_no_content() -> None:
    from coder.host.git import _may_run_programs

    assert not _may_run_programs("check-ignore", ["check-ignore", "--stdin"])
    assert not _may_run_programs("ls-files", ["ls-files", "--stage", "-z"])
    assert not _may_run_programs("rev-parse", ["rev-parse", "HEAD"])
    for args in (["ls-files", "-m"], ["ls-files", "--modified"], ["ls-files", "-zm"]):  # re-hashes racy entries
        assert _may_run_programs("ls-files", args), args
    assert _may_run_programs("add", ["add", "-A"]) and _may_run_programs("cat-file", ["cat-file", "--filters", "x"])
