"""What the sandbox leaves for the user's own git to run later (issue 29, item 3), tried through real sessions.

coder's host git is hardened; the user's is not. A command in the sandbox plants, and the user's next plain
`git status` (full environment, no hardening: a shell prompt does the same) would run the planted program:
- a new gitlink to an embedded repository whose config sets `core.fsmonitor`;
- a gitlink added by `update-index --cacheinfo`, its `.git` a file naming a git dir planted elsewhere in the tree;
- a real submodule moved aside, and a repository with `core.fsmonitor` planted in its place.
In every mode that lets the model's shell write, the session must neutralise each and say so, and the user's git
must then run nothing; a control restores the plant and shows the user's git does run it. The decision that keeps
the index writable is tried too: the model's own `git add` and `git commit` in the sandbox still work.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from repo_support import git
from security_run_support import BASH_MODES, run_scripted, take_fired

from coder.sandbox.aftercheck import DISABLED, dangerous_config


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    evil = path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$1" >> {path / "marker"}\n')
    evil.chmod(0o755)
    return path



def _users_git(repo: Path, *folders: str) -> None:
    """The user's own git: plain, full environment, at the top and in each folder (a prompt there)."""
    for folder in ("", *folders):
        subprocess.run(["git", "status"], cwd=repo / folder, capture_output=True, stdin=subprocess.DEVNULL,
                       timeout=120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a real submodule (`lib`, made by host git: its git dir in `.git/modules/lib`)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    (upstream / "u.txt").write_text("u\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "u")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "lib")
    git(repo, "commit", "-q", "-m", "submodule")
    assert (repo / "lib" / ".git").is_file() and (repo / ".git" / "modules" / "lib").is_dir()
    return repo


def _plants(evil: Path) -> str:
    fsmonitor = f"{evil} fsmonitor"
    return " && ".join([
        # 1. an embedded repository with fsmonitor, added as a gitlink
        "git init -q sub", f"git -C sub config core.fsmonitor '{fsmonitor}'",
        "git -C sub -c user.name=m -c user.email=m@m commit -q --allow-empty -m x", "git add sub 2>/dev/null",
        # 2. a gitlink by plumbing; its `.git` a file naming a git dir planted elsewhere in the tree
        "git init -q --bare .vendorgit", f"git --git-dir=.vendorgit config core.fsmonitor '{fsmonitor}'",
        "git --git-dir=.vendorgit config core.bare false", "mkdir -p vendor/x",
        "echo \"gitdir: $PWD/.vendorgit\" > vendor/x/.git",
        "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),vendor/x",
        # 3. the real submodule moved aside, a planted repository in its place
        "mv lib lib.old", "git init -q lib", f"git -C lib config core.fsmonitor '{fsmonitor}'",
        "echo PLANTED-OK",
    ])


@pytest.mark.parametrize(("mode", "flags"), BASH_MODES, ids=[m for m, _ in BASH_MODES])
def test_what_the_shell_plants_for_the_users_git_is_neutralised(repo: Path, outside: Path, mode: str,
                                                                 flags: tuple[str, ...]) -> None:
    decision = ("echo two > a.txt && git add a.txt && git -c user.name=m -c user.email=m@m commit -q "
                "-m 'the model commits' && echo COMMITTED")
    turns = [{"tool_calls": [{"name": "bash", "input": {"command": _plants(outside / "evil.sh")}}]},
             {"tool_calls": [{"name": "bash", "input": {"command": decision}}]},
             {"text": "done"}]
    events = run_scripted(repo, turns, "--permission-mode", mode, *flags)
    results = [e for e in events if e["type"] == "tool_call_finished"]
    planted = results[0]["output"]
    assert "PLANTED-OK" in planted, planted
    assert "neutralised" in planted and "sub" in planted and "vendor/x" in planted and "lib/.git" in planted
    # the decision: the index stays writable, the model's own git works in the sandbox
    assert "COMMITTED" in results[1]["output"], results[1]
    assert git(repo, "log", "-1", "--format=%s").strip() == "the model commits"
    # the user's git runs nothing
    _users_git(repo, "sub", "vendor/x", "lib")
    assert take_fired(outside) == []
    links = git(repo, "ls-files", "--stage")
    assert "\tsub\n" not in links and "\tvendor/x\n" not in links and "\tlib\n" in links  # the user's own stays
    # control: put the plants back as they were, and the user's git runs them
    (repo / "sub" / DISABLED).rename(repo / "sub" / ".git")
    (repo / "lib" / DISABLED).rename(repo / "lib" / ".git")
    (repo / "vendor" / "x" / DISABLED).rename(repo / "vendor" / "x" / ".git")
    sha = git(repo / "sub", "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},sub")
    _users_git(repo)
    assert "fsmonitor" in take_fired(outside)
    for folder in ("vendor/x", "lib"):
        _users_git(repo / folder)
        assert "fsmonitor" in take_fired(outside), folder


def test_a_background_job_planting_after_its_command_is_caught_before_the_next(repo: Path, outside: Path) -> None:
    """A command that returns at once but plants a moment later (what a job sent to the background does): the
    check before the next command finds it."""
    evil = outside / "evil.sh"
    plant = (f"( sleep 1; git init -q late && git -C late config core.fsmonitor '{evil} fsmonitor' && "
             "touch late/DONE ) > /dev/null 2>&1 & echo STARTED")
    wait = "while [ ! -e late/DONE ]; do sleep 0.1; done; echo WAITED"
    turns = [{"tool_calls": [{"name": "bash", "input": {"command": plant}}]},
             {"tool_calls": [{"name": "bash", "input": {"command": wait}}]},
             {"tool_calls": [{"name": "bash", "input": {"command": "echo third"}}]},
             {"text": "done"}]
    events = run_scripted(repo, turns, "--permission-mode", "auto")
    outputs = [e["output"] for e in events if e["type"] == "tool_call_finished"]
    assert "STARTED" in outputs[0] and "WAITED" in outputs[1]
    assert any("late/.git" in out and "neutralised" in out for out in outputs[1:]), outputs
    assert not (repo / "late" / ".git").exists() and (repo / "late" / DISABLED / "config").is_file()
    _users_git(repo, "late")
    assert take_fired(outside) == []
    (repo / "late" / DISABLED).rename(repo / "late" / ".git")  # control
    _users_git(repo / "late")
    assert "fsmonitor" in take_fired(outside)


def test_a_gitlink_left_by_a_session_that_never_checked_is_caught_by_the_next(repo: Path, outside: Path) -> None:
    """A session killed before its last check leaves a staged gitlink and a repository with fsmonitor: the next
    session's first command finds them (its baseline is HEAD's gitlinks, not whatever the index holds)."""
    from coder.sandbox.exec import run_sandboxed

    git(repo, "init", "-q", "left")
    git(repo / "left", "-c", "user.name=m", "-c", "user.email=m@m", "commit", "-q", "--allow-empty", "-m", "x")
    sha = git(repo / "left", "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},left")
    evil = outside / "evil.sh"
    with open(repo / "left" / ".git" / "config", "a") as fh:
        fh.write(f'[core]\n\tfsmonitor = "{evil} fsmonitor"\n')
    _users_git(repo)
    assert "fsmonitor" in take_fired(outside)  # control: the plant is live for the user's git
    run = run_sandboxed("echo first", repo, None, 60)
    assert "left: a new gitlink" in run.output and "left/.git" in run.output, run.output
    _users_git(repo, "left")
    assert take_fired(outside) == []
    assert "\tlib\n" in git(repo, "ls-files", "--stage")  # the user's submodule is untouched


#: plants the red-team pass tried against the check itself (each ends with the repository at `x` recorded as a
#: gitlink; its git dir holds the fsmonitor)
EVASIONS = {
    # git takes the path after "gitdir: " as it is, leading spaces included; a parser that trims looks elsewhere
    "gitdir-leading-spaces": "mkdir -p x && git init -q --bare 'x/  evil' && "
                             "git --git-dir='x/  evil' config core.bare false && "
                             "git --git-dir='x/  evil' config core.fsmonitor '{fsmonitor}' && "
                             "printf 'gitdir:   evil\\n' > x/.git",
    # the dangerous key after a megabyte of comments: a reader that stops early misses it
    "padded-config": "git init -q x && (head -c 1100000 /dev/zero | tr '\\0' '#'; echo; "
                     "printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n') >> x/.git/config",
    # the config is a link to a file elsewhere in the tree
    "linked-config": "git init -q x && printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n' > cfg && "
                     "rm x/.git/config && ln -s ../../cfg x/.git/config",
    # an active hook instead of config: the user's `git checkout` inside runs it
    "hook": "git init -q x && printf '#!/bin/sh\\n{evil} hook\\n' > x/.git/hooks/post-checkout && "
            "chmod +x x/.git/hooks/post-checkout && printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n' >> "
            "x/.git/config",
}


@pytest.mark.parametrize("plant", sorted(EVASIONS))
def test_plants_that_try_to_slip_past_the_check(repo: Path, outside: Path, plant: str) -> None:
    from coder.sandbox.exec import run_sandboxed

    evil = outside / "evil.sh"
    command = EVASIONS[plant].format(fsmonitor=f"{evil} fsmonitor", evil=evil)
    link = "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),x"
    run = run_sandboxed(f"set -e; {command}; {link}; echo PLANTED-OK", repo, None, 60)
    assert "PLANTED-OK" in run.output, run.output
    assert "x/.git" in run.output and "neutralised" in run.output, run.output
    _users_git(repo, "x")
    assert take_fired(outside) == []
    (repo / "x" / DISABLED).rename(repo / "x" / ".git")  # control: restored, the user's git runs it
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{git(repo, 'rev-parse', 'HEAD').strip()},x")
    _users_git(repo, "x")
    assert "fsmonitor" in take_fired(outside)


def test_the_top_git_dir_cannot_be_redirected_for_the_users_git(tmp_path: Path, outside: Path) -> None:
    """The red-team pass found these: a `commondir` written into the top-level `.git` (git reads it in any git dir:
    the user's git then takes its config from a copy the command made), and `.git/modules/x` planted through a
    missing `modules` folder (which would pass for a submodule host git made)."""
    from coder.sandbox.exec import run_sandboxed

    repo = tmp_path / "plain"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    assert not (repo / ".git" / "modules").exists()  # git init makes none
    evil = outside / "evil.sh"
    plant = (f"cp -r .git evilcommon && git --git-dir=evilcommon config core.fsmonitor '{evil} fsmonitor' && "
             "echo ../evilcommon > .git/commondir && echo PLANTED-OK; "
             "mkdir -p .git/modules/x 2>&1 || echo MODULES-READ-ONLY")
    run = run_sandboxed(plant, repo, None, 60)
    assert "PLANTED-OK" in run.output and "MODULES-READ-ONLY" in run.output, run.output
    assert ".git/commondir" in run.output and "neutralised" in run.output, run.output
    _users_git(repo)
    assert take_fired(outside) == []
    (repo / ".git" / "commondir-disabled-by-coder").rename(repo / ".git" / "commondir")  # control
    _users_git(repo)
    assert "fsmonitor" in take_fired(outside)


def test_a_common_dir_seen_clean_then_armed_is_caught(repo: Path, outside: Path) -> None:
    """The red-team pass: `x/.git/commondir` names a plain folder (not a `.git`, so never read-only) whose config
    was clean at the first look and is armed by the next command; the check must look at it again."""
    from coder.sandbox.exec import run_sandboxed

    evil = outside / "evil.sh"
    first = ("git init -q --bare common && git --git-dir=common config core.bare false && git init -q x && "
             "echo ../../common > x/.git/commondir && echo FIRST-OK")
    clean = run_sandboxed(f"set -e; {first}", repo, None, 60)
    assert "FIRST-OK" in clean.output and "neutralised" not in clean.output, clean.output
    armed = run_sandboxed(f"git --git-dir=common config core.fsmonitor '{evil} fsmonitor' && echo SECOND-OK", repo,
                          None, 60)
    assert "SECOND-OK" in armed.output and "x/.git" in armed.output and "neutralised" in armed.output, armed.output
    _users_git(repo, "x")
    assert take_fired(outside) == []
    (repo / "x" / DISABLED).rename(repo / "x" / ".git")  # control: restored, the user's git runs it
    _users_git(repo / "x")
    assert "fsmonitor" in take_fired(outside)


def test_a_hook_made_executable_by_a_background_job_is_caught(repo: Path, outside: Path, tmp_path: Path) -> None:
    """A hook written without its executable bit (clean at the check after its command), then made executable by
    a job left running: no folder's stat changes, so the check must watch each hook."""
    import time

    from coder.sandbox.profile import SandboxConfig
    from coder.sandbox.shell import PersistentShell

    evil = outside / "evil.sh"
    shell = PersistentShell(repo, SandboxConfig())
    shell.start()
    try:
        first = shell.run("git init -q x && git -C x -c user.name=m -c user.email=m@m commit -q --allow-empty -m x && "
                          f"printf '#!/bin/sh\\n{evil} hook\\n' > x/.git/hooks/post-checkout && "
                          "(sleep 1; chmod +x x/.git/hooks/post-checkout; touch armed) > /dev/null 2>&1 & "
                          "echo STARTED", 60)
        assert "STARTED" in first.output and not any("neutralised" in n for n in first.notes), first
        deadline = time.monotonic() + 60
        while not (repo / "armed").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (repo / "armed").exists()
        second = shell.run("echo next", 60)
        assert any("x/.git" in n and "active hooks post-checkout" in n for n in second.notes), second
    finally:
        shell.close()
    subprocess.run(["git", "checkout", "-q", "-b", "other"], cwd=repo / "x", capture_output=True, timeout=120)
    assert take_fired(outside) == []
    (repo / "x" / DISABLED).rename(repo / "x" / ".git")  # control
    subprocess.run(["git", "checkout", "-q", "-b", "another"], cwd=repo / "x", capture_output=True, timeout=120)
    assert "hook" in take_fired(outside)


@pytest.mark.parametrize(("text", "dangerous"), [
    ("[core]\n\tfsmonitor = /x/evil\n", ["core.fsmonitor"]),
    ("[core]\n\tfsmonitor = true\n", []),
    ("[core] hooksPath = .h\n", ["core.hookspath"]),
    ('[filter "lfs"]\n\tsmudge = x\n', ["filter.lfs.smudge"]),
    ('[diff "x"]\n\ttextconv = x\n', ["diff.x.textconv"]),
    ("[alias]\n\tst = !sh -c x\n\tco = checkout\n", ["alias.st"]),
    ("[include]\n\tpath = ../other\n", ["include.path"]),
    ('[includeIf "gitdir:/"]\n\tpath = x\n', ["includeif.gitdir:/.path"]),
    ("[credential]\n\thelper = !x\n", ["credential.helper"]),
    ("[user]\n\tname = x\n[remote \"o\"]\n\turl = x\n", []),
    ("[core\n", ["a config git cannot parse"]),
])
def test_dangerous_keys_are_read_as_git_reads_them(text: str, dangerous: list[str]) -> None:
    assert dangerous_config(text.encode()) == dangerous
