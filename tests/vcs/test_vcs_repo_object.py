"""The Repo object (issue 48, item 5): one object per repository, opened once, shared by review, commit,
checkpoints and isolated trees; every host git process they start goes through it, and it keeps host git's rules
(the program keys come from the user, read again at every command) however long it lives."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_support import git

from coder.config.layers import settings
from coder.host import git as hostgit
from coder.review.gate import GateRequest, review_and_commit
from coder.vcs.checkpoints import Checkpoints
from coder.vcs.commit import commit_changes
from coder.vcs.repo import NotARepository, Repo

ROOT = Path(__file__).resolve().parents[2]
#: the modules on the path from review to commit, and the one place among them that starts host git
LANES = ("coder/vcs", "coder/review", "coder/engine/finish.py", "coder/commands/git.py")
DOOR = "coder/vcs/repo.py"
#: what in coder/host/git.py starts a git process, or lists the config with one
STARTERS = {"run", "_git", "untrusted_drivers", "config_entries", "program_overrides"}


@pytest.fixture
def git_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[list[str], bool]]]:
    """Every git process host git starts from now on: (its arguments, whether a `Repo` method is on the stack)."""
    started: list[tuple[list[str], bool]] = []
    real = hostgit._git

    def spy(cwd, args, *rest, **kwargs):
        frame, through = sys._getframe(1), False
        while frame is not None and not through:
            through = frame.f_code.co_filename.endswith(DOOR) and frame.f_code.co_qualname.startswith("Repo.")
            frame = frame.f_back
        started.append((list(args), through))
        return real(cwd, args, *rest, **kwargs)

    monkeypatch.setattr(hostgit, "_git", spy)
    yield started


def test_opening_resolves_the_work_tree_git_dir_and_common_dir_at_once(git_repo: Path, tmp_path: Path,
                                                                        git_processes: list) -> None:
    repo = Repo.open(git_repo / "src" / "app.py")
    top = git_repo.resolve()
    assert (repo.root, repo.git_dir, repo.common_dir) == (top, top / ".git", top / ".git")
    assert len(git_processes) == 1  # one `rev-parse` answers all three
    git(git_repo, "worktree", "add", "-q", str(tmp_path / "side"), "-b", "side")
    linked = Repo.open(tmp_path / "side")
    assert linked.root == (tmp_path / "side").resolve() and linked.git_dir == top / ".git" / "worktrees" / "side"
    assert linked.common_dir == top / ".git" and linked.objects_dir() == top / ".git" / "objects"
    assert linked.hooks_dir() == top / ".git" / "hooks"  # hooks live in the common dir
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotARepository, match="git init") as caught:
        Repo.open(tmp_path / "plain")
    assert caught.value.exit_code == 2 and Repo.find(tmp_path / "plain") is None


def _evil(outside: Path) -> str:
    """Config that signs every commit with a program of the repository's, and runs an fsmonitor of its own."""
    for name in ("gpg", "fsmonitor"):
        script = outside / f"evil-{name}"
        script.write_text(f'#!/bin/sh\necho "evil:{name}" >> {outside / "marker"}\ncat >/dev/null\nexit 1\n')
        script.chmod(0o755)
    return (f'[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {outside / "evil-gpg"}\n'
            f'[core]\n\tfsmonitor = {outside / "evil-fsmonitor"}\n')


def test_a_program_the_repository_names_after_the_repo_was_opened_never_runs(git_repo: Path,
                                                                               tmp_path: Path) -> None:
    """The Repo resolves the repository once, but not what the sandbox can write: a config include target in the
    work tree, created after the session opened its Repo (and took its baseline), is overridden like one that was
    there from the start, by every command of the same Repo."""
    outside = tmp_path / "outside"
    outside.mkdir()
    git(git_repo, "config", "include.path", "../.gitconfig")  # the step many READMEs ask for; no file yet
    repo = Repo.open(git_repo)
    checkpoints = Checkpoints(repo, "later")
    (git_repo / ".gitconfig").write_text(_evil(outside))  # what a sandboxed command could write meanwhile
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    assert checkpoints.snapshot("turn 1") is not None
    assert "+    return 'hi ' + name" in repo.diff() and not repo.signs_commits()
    result = commit_changes(repo, "fix: say hi", run_hooks_in="skip")
    assert result.committed and "gpgsig" not in git(git_repo, "cat-file", "commit", "HEAD")
    assert not (outside / "marker").exists()
    # control: plain git in the same repository reads the include and runs both programs
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "control"], cwd=git_repo, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=120)
    fired = (outside / "marker").read_text().split()
    assert "evil:gpg" in fired and "evil:fsmonitor" in fired, fired


def test_every_git_process_of_a_review_and_commit_starts_through_the_repo(git_repo: Path,
                                                                          git_processes: list) -> None:
    """At run time, over the whole process: each git process of the gate (review stages, commit message, commit)
    has a `Repo` method on its stack. The control starts one around it and is seen."""
    (git_repo / "src" / "app.py").write_text("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    (git_repo / "src" / "util.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    config = settings({"review": {"stages": ["apply", "parse", "lint", "hygiene", "gaming"]}})
    gate = review_and_commit(GateRequest(Repo.open(git_repo), "say hi", lambda feedback: True, None, config,
                                         message="feat: say hi"))
    assert gate.committed, gate.message
    assert len(git_processes) > 20 and all(through for _, through in git_processes), \
        [args for args, through in git_processes if not through]
    hostgit.run(git_repo, ["status", "--porcelain"])  # control: host git started around the Repo
    assert git_processes[-1][0][0] == "status" and git_processes[-1][1] is False


def _violations(path: str, source: str) -> list[str]:
    """Where `source` starts host git (or lists its config) itself, outside the Repo."""
    tree = ast.parse(source)
    aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and n.module == "coder.host" for a in n.names if a.name == "git"}
    found = [f"{path}:{n.lineno} imports {a.name} from coder.host.git" for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) and n.module == "coder.host.git" for a in n.names if a.name in STARTERS]
    found += [f"{path}:{n.lineno} {n.value.id}.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
              and isinstance(n.value, ast.Name) and n.value.id in aliases and n.attr in STARTERS]
    return found


def test_nothing_on_the_way_from_review_to_commit_starts_git_but_the_repo() -> None:
    files = [p for lane in LANES for p in ((ROOT / lane).glob("*.py") if (ROOT / lane).is_dir() else [ROOT / lane])]
    assert len(files) > 20
    found = [v for p in files if p.relative_to(ROOT).as_posix() != DOOR
             for v in _violations(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))]
    assert found == []
    assert _violations(DOOR, (ROOT / DOOR).read_text(encoding="utf-8"))  # the door itself is seen
    for planted in ("from coder.host import git as g\ng.run(root, ['status'])\n",
                    "from coder.host.git import untrusted_drivers\n"):
        assert _violations("planted.py", planted), planted
