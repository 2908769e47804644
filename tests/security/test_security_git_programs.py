"""Git programs come from the user, not the repository (issue 43, item 4), tried with real git.

A repository that arrives with its `.git` (an archive, a shared folder) sets `commit.gpgSign` and `gpg.program`,
and the program-naming keys of coder/host/gitconfig.py, in every place git reads configuration from the
repository: `.git/config`, `.git/config.worktree`, a file in the work tree that `.git/config` includes (the common
`git config include.path ../.gitconfig` step), and a file in the work tree that the user's *global* config
includes. coder's commit (`coder run --commit` and `commit_changes`), checkpoints, status and diff must run none of
those programs; a control shows plain git does run each plant. And the user's own signing (in `~/.gitconfig`) still
works: coder's commit is signed by the user's program, never by the repository's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from repo_support import git
from security_run_support import run_scripted, take_fired

from coder.host import git as hostgit
from coder.host.gitconfig import PROGRAM_KEYS
from coder.vcs.checkpoints import Checkpoints
from coder.vcs.commit import commit_changes
from coder.vcs.repo import Repo

#: where the repository's configuration is planted (each is read by plain git in the repository)
PLACES = ("local", "worktree", "include-in-work-tree", "global-include-into-work-tree")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The test's own folder outside the repository: the planted program writes its marker here."""
    path = tmp_path / "outside"
    path.mkdir()
    for name in ("gpg", "keycommand", "fsmonitor", "alternates"):  # git runs some by path, some by the shell
        evil = path / f"evil-{name}"
        evil.write_text(f'#!/bin/sh\necho "evil:{name}" >> {path / "marker"}\ncat >/dev/null\nexit 1\n')
        evil.chmod(0o755)
    user = path / "user-gpg.sh"  # the user's own signing program: signs anything (a fake signature)
    user.write_text(f'#!/bin/sh\necho user-gpg >> {path / "marker"}\ncat >/dev/null\n'
                    "printf '\\n[GNUPG:] SIG_CREATED D 1 8 00 1 0000\\n' >&2\n"
                    "printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n-----END PGP SIGNATURE-----\\n'\n")
    user.chmod(0o755)
    return path



def _plant_text(outside: Path) -> str:
    return (f'[commit]\n\tgpgSign = true\n[tag]\n\tgpgSign = true\n[gpg]\n\tprogram = {outside / "evil-gpg"}\n'
            f'[gpg "ssh"]\n\tdefaultKeyCommand = {outside / "evil-keycommand"}\n'
            f'[core]\n\tfsmonitor = {outside / "evil-fsmonitor"}\n'
            f'\talternateRefsCommand = {outside / "evil-alternates"}\n')


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def _plant(repo: Path, place: str, text: str) -> None:
    if place == "local":
        with open(repo / ".git" / "config", "a") as fh:
            fh.write(text)
    elif place == "worktree":
        git(repo, "config", "extensions.worktreeConfig", "true")
        (repo / ".git" / "config.worktree").write_text(text)
    elif place == "include-in-work-tree":
        git(repo, "config", "include.path", "../.gitconfig")  # the step many projects' READMEs ask for
        (repo / ".gitconfig").write_text(text)
    else:
        (repo / ".shared.gitconfig").write_text(text)
        with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as fh:
            fh.write(f"[include]\n\tpath = {repo / '.shared.gitconfig'}\n")


def _plain_commit(repo: Path) -> None:
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "control"], cwd=repo, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("place", PLACES)
def test_the_repositorys_signing_program_never_runs(tmp_path: Path, outside: Path, place: str) -> None:
    repo = _repo(tmp_path)
    _plant(repo, place, _plant_text(outside))
    (repo / "a.txt").write_text("two\n")
    # every host path: checkpoints, status and diff, the question "does the user sign?", the commit itself
    checkpoints = Checkpoints(Repo.open(repo), "s1")
    (repo / "b.txt").write_text("new\n")
    assert checkpoints.snapshot("turn 1") is not None
    for args in (["status", "--porcelain"], ["diff", "HEAD"], ["log", "-1", "--format=%H %G?"]):
        assert hostgit.run(repo, args).returncode == 0, args
    assert hostgit.run(repo, ["config", "--type=bool", "commit.gpgSign"]).stdout.strip() == "false"
    result = commit_changes(Repo.open(repo), "feat: two", run_hooks_in="skip")
    assert result.committed, result
    assert "gpgsig" not in git(repo, "cat-file", "commit", "HEAD")
    assert take_fired(outside) == []
    # control: plain git in the same repository runs the plant (signing, fsmonitor)
    _plain_commit(repo)
    fired = take_fired(outside)
    assert "evil:gpg" in fired and "evil:fsmonitor" in fired, fired


def test_the_users_own_signing_still_runs(tmp_path: Path, outside: Path) -> None:
    """`~/.gitconfig` signs every commit with the user's program; the repository names its own program and turns
    worktree config on: coder's commit is signed, by the user's program only."""
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as fh:
        fh.write(f'[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = "{outside / "user-gpg.sh"}"\n')
    repo = _repo(tmp_path)
    take_fired(outside)  # the initial commit was signed by the user's program already
    _plant(repo, "include-in-work-tree", _plant_text(outside))
    (repo / "a.txt").write_text("two\n")
    result = commit_changes(Repo.open(repo), "feat: signed", run_hooks_in="skip")
    assert result.committed, result
    assert "gpgsig -----BEGIN PGP SIGNATURE-----" in git(repo, "cat-file", "commit", "HEAD")
    assert take_fired(outside) == ["user-gpg"]
    # a repository may turn signing off (that runs nothing): coder honours it
    git(repo, "config", "commit.gpgSign", "false")
    (repo / "a.txt").write_text("three\n")
    assert commit_changes(Repo.open(repo), "feat: unsigned", run_hooks_in="skip").committed
    assert "gpgsig" not in git(repo, "cat-file", "commit", "HEAD") and take_fired(outside) == []


def test_coder_run_commit_in_a_repository_that_signs_with_its_own_program(tmp_path: Path, outside: Path) -> None:
    """The issue's case: `coder run --commit` in a repository whose `.git/config` turns signing on and names a
    program. The whole run (checkpoints, review, commit) runs nothing of the repository's."""
    repo = _repo(tmp_path)
    _plant(repo, "local", _plant_text(outside))
    edit = {"command": "str_replace", "path": "a.txt", "old_str": "one", "new_str": "one and two"}
    turns = [{"tool_calls": [{"name": "str_replace_based_edit_tool", "input": edit}]}, {"text": "done"},
             {"when": "prepare the review of a code change", "repeat": True, "text": "- Is it right?"},
             {"when": "You review a code change made by a coding agent", "repeat": True, "text": '{"findings": []}'},
             {"when": "Write the git commit message", "repeat": True, "text": "docs: say two"}]
    events = run_scripted(repo, turns, "--permission-mode", "auto", "--commit")
    commits = [e for e in events if e["type"] == "commit"]
    assert commits and commits[0]["sha"], json.dumps(events)[-2000:]
    assert git(repo, "log", "-1", "--format=%s").strip() == "docs: say two"
    assert "gpgsig" not in git(repo, "cat-file", "commit", "HEAD")
    assert take_fired(outside) == []
    _plain_commit(repo)  # control
    assert "evil:gpg" in take_fired(outside)


#: one concrete key for each row of PROGRAM_KEYS, and a value the repository sets
EXAMPLES = {
    "gpg.program": "/evil/gpg", "gpg.x509.program": "/evil/gpgsm", "gpg.ssh.program": "/evil/ssh-keygen",
    "gpg.format": "ssh", "gpg.ssh.defaultKeyCommand": "/evil/key", "commit.gpgSign": "true",
    "filter.x.smudge": "/evil/smudge", "diff.x.textconv": "/evil/textconv", "merge.x.driver": "/evil/merge",
    "core.alternateRefsCommand": "/evil/alt", "remote.origin.uploadpack": "/evil/up",
    "remote.origin.receivepack": "/evil/recv", "pager.log": "/evil/pager",
    "lfs.customtransfer.x.path": "/evil/lfs",
}


def test_every_program_key_is_covered_by_an_example() -> None:
    for spec in PROGRAM_KEYS:
        assert any(spec.pattern.fullmatch(key.lower()) for key in EXAMPLES), spec.why


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_program_key_takes_the_users_value_or_a_neutral_one(tmp_path: Path, key: str) -> None:
    """What git itself reads through coder's host git, for a key the repository sets: the neutral value, and the
    user's own value when the user's global config sets one."""
    repo = _repo(tmp_path)
    git(repo, "config", key, EXAMPLES[key])
    assert git(repo, "config", key).strip() == EXAMPLES[key]  # control: plain git reads the repository's
    read = hostgit.run(repo, ["config", key]).stdout.strip()
    assert read != EXAMPLES[key] and not read.startswith("/evil"), read
    subprocess.run(["git", "config", "--global", key, "/users/own"], check=True, timeout=60)
    if key not in ("gpg.format", "commit.gpgSign"):
        assert hostgit.run(repo, ["config", key]).stdout.strip() == "/users/own"
