"""Host git that cannot be steered (issue 14, item 4, and the scrubbed environment of item 7).

Attacks, with real git repositories and the real bubblewrap sandbox: configuration that executes (core.fsmonitor,
core.pager, diff.external, core.sshCommand, core.hooksPath, filters, diff and merge drivers, credential helpers)
planted where the sandbox can write it:
- in a nested repository that the top-level one records as a gitlink (`sub/.git/config`), and in one whose
  `.git` is a file pointing at a git dir in the workspace (`mod/.git` -> `.modgit/`);
- in a git dir that a planted top-level `.git/commondir` redirects to, with a `core.worktree` outside;
- as filter/diff/merge drivers in the repository's own config, selected by an in-tree `.gitattributes`.
Every host path coder runs git on (checkpoints and /undo, `coder review`, commits, codeintel and editor listings,
the TUI status line, batch patches, a full headless `coder run` in each mode that lets bash run) must leave the
marker file in `tmp_path/"outside"` absent; a control shows plain git does fire each planted program.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_support import git

from coder.batch.workspace import workspace_patch
from coder.codeintel.files import list_files
from coder.commands.agents_md import repo_files
from coder.engine.builder import git_root
from coder.ext.hooks import Hook, HookRunner
from coder.frontend.workspace import git_state
from coder.host import git as hostgit
from coder.vcs.checkpoints import Checkpoints
from coder.vcs.commit import commit_changes
from coder.vcs.repo import Repo, VcsError

REPO = Path(__file__).resolve().parents[2]
HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change",
              "reference-transaction", "post-checkout", "pre-auto-gc")


# ---- the planted repository ---------------------------------------------------------------------------------

def _evil_script(outside: Path) -> Path:
    """Appends its first argument to outside/marker; passes stdin through (so a filter 'works')."""
    script = outside / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {outside / "marker"}\ncat\n')
    script.chmod(0o755)
    return script


def _evil_config(evil: Path, hooks: Path) -> str:
    return (
        f'[core]\n\tfsmonitor = "{evil} fsmonitor"\n\tpager = "{evil} pager"\n\tsshCommand = "{evil} ssh"\n'
        f'\thooksPath = {hooks}\n\teditor = "{evil} editor"\n\taskPass = "{evil} askpass"\n'
        f'[diff]\n\texternal = "{evil} diff.external"\n'
        f'[filter "evil"]\n\tclean = "{evil} clean"\n\tsmudge = "{evil} smudge"\n\trequired = true\n'
        f'[diff "evil"]\n\tcommand = "{evil} diff.command"\n\ttextconv = "{evil} textconv"\n'
        f'[merge "evil"]\n\tdriver = "{evil} merge %O %A %B"\n'
        f'[credential]\n\thelper = "!{evil} credential"\n'
    )


def _evil_hooks(where: Path, evil: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name in HOOK_NAMES:
        hook = where / name
        hook.write_text(f"#!/bin/sh\n{evil} hook-{name} </dev/null\n")
        hook.chmod(0o755)
    return where


def _plant(gitdir: Path, evil: Path, hooks: Path) -> None:
    with (gitdir / "config").open("a") as fh:
        fh.write(_evil_config(evil, hooks))


def _fired(outside: Path) -> list[str]:
    marker = outside / "marker"
    return marker.read_text().split() if marker.exists() else []


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


@pytest.fixture
def planted(tmp_path: Path, outside: Path) -> Path:
    """A repository recording two nested repositories as gitlinks (`sub`, and `mod` whose `.git` is a file ->
    `.modgit`), both with executing config planted, every file of theirs selected by a `filter=evil` attribute."""
    evil = _evil_script(outside)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "init", "-q", "-b", "main", "sub")
    git(repo, "init", "-q", "-b", "main", f"--separate-git-dir={repo / '.modgit'}", "mod")
    for name in ("sub", "mod"):
        (repo / name / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
        (repo / name / "f.txt").write_text("inner\n")
        git(repo / name, "add", "-A")
        git(repo / name, "commit", "-q", "-m", "inner")
    (repo / ".gitignore").write_text(".modgit/\n")
    git(repo, "-c", "advice.addEmbeddedRepo=false", "add", "sub", "mod", ".gitignore")
    git(repo, "commit", "-q", "-m", "gitlinks")
    assert (repo / "mod" / ".git").is_file() and set(Repo.open(repo).gitlinks()) == {"sub", "mod"}
    hooks = _evil_hooks(repo / ".evilhooks", evil)
    _plant(repo / "sub" / ".git", evil, hooks)
    _plant(repo / ".modgit", evil, hooks)
    (repo / "sub" / "f.txt").write_text("inner, changed by the agent\n")
    (repo / "mod" / "f.txt").write_text("inner, changed by the agent\n")
    return repo


def _control(repo: Path, outside: Path, *args: str) -> list[str]:
    """Plain git (full environment, no hardening) does run what was planted: the attack is real."""
    subprocess.run(["git", *args], cwd=repo, capture_output=True, stdin=subprocess.DEVNULL)
    fired = _fired(outside)
    (outside / "marker").unlink(missing_ok=True)
    return fired


def test_control_plain_git_runs_what_was_planted(planted: Path, outside: Path) -> None:
    assert "fsmonitor" in _control(planted, outside, "status")  # the submodule's fsmonitor, from the top
    assert "fsmonitor" in _control(planted, outside, "add", "-A")
    assert "fsmonitor" in _control(planted / "mod", outside, "status")  # the `.git` file variant
    assert "clean" in _control(planted / "sub", outside, "add", "-A")
    assert "diff.command" in _control(planted / "sub", outside, "diff", "HEAD")


# ---- every host path --------------------------------------------------------------------------------------------

def test_checkpoint_snapshot_undo_and_restore_run_nothing(planted: Path, outside: Path) -> None:
    cps = Checkpoints(Repo.open(planted), "s1")
    (planted / "a.txt").write_text("two\n")
    (planted / "new.txt").write_text("new\n")
    snap = cps.snapshot("turn 1")
    assert snap is not None and snap.files_changed == ["a.txt", "new.txt"]
    result = cps.undo()
    assert (planted / "a.txt").read_text() == "one\n" and not (planted / "new.txt").exists()
    assert "a.txt" in result.written and "new.txt" in result.deleted
    cps.restore(snap.id)
    assert (planted / "a.txt").read_text() == "two\n"
    # the user's gitlinks are kept as the index has them, and the nested repositories' files never touched
    assert set(Repo.open(planted).gitlinks()) == {"sub", "mod"}
    assert (planted / "sub" / "f.txt").read_text() == "inner, changed by the agent\n"
    assert _fired(outside) == []


def test_checkpoints_leave_new_embedded_repositories_out(planted: Path, outside: Path) -> None:
    cps = Checkpoints(Repo.open(planted), "s2")
    git(planted, "init", "-q", "emb")
    (planted / "emb" / "x.txt").write_text("x\n")
    git(planted / "emb", "add", "x.txt")
    git(planted / "emb", "commit", "-q", "-m", "x")
    _plant(planted / "emb" / ".git", outside / "evil.sh", planted / ".evilhooks")
    (planted / "a.txt").write_text("three\n")
    snap = cps.snapshot("turn")
    assert snap is not None
    tree = git(planted, "ls-tree", "-r", snap.commit)
    assert "emb" not in tree and "160000 commit" in tree  # sub and mod stay, the new one is left out
    cps.undo()
    assert (planted / "emb" / "x.txt").read_text() == "x\n"  # /undo leaves the embedded repository alone
    assert _fired(outside) == []


def test_coder_review_runs_nothing_and_sees_no_provider_key(planted: Path, outside: Path) -> None:
    (planted / "a.txt").write_text("two\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "sk-ant-fake-for-test"}
    for which in ([], ["--staged"], ["--commit", "HEAD"], ["--base", "HEAD~1"]):
        proc = subprocess.run([sys.executable, "-m", "coder", "review", "--no-tests", "--no-llm", "--json", *which,
                               "--cwd", str(planted)], env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode in (0, 1), proc.stderr
        assert "verdict" in json.loads(proc.stdout)
    assert "+two" in Repo.open(planted).diff()
    assert _fired(outside) == []


def test_commit_runs_nothing_and_keeps_the_gitlinks(planted: Path, outside: Path) -> None:
    (planted / "a.txt").write_text("two\n")
    result = commit_changes(Repo.open(planted), "change a")
    assert result.committed and "a.txt" in result.files
    assert git(planted, "ls-tree", "HEAD", "sub").split()[:2] == ["160000", "commit"]
    assert _fired(outside) == []


def test_commit_refuses_a_new_embedded_repository(planted: Path, outside: Path) -> None:
    git(planted, "init", "-q", "emb")
    (planted / "emb" / "x.txt").write_text("x\n")
    git(planted / "emb", "add", "x.txt")
    git(planted / "emb", "commit", "-q", "-m", "x")
    (planted / "a.txt").write_text("two\n")
    index = (planted / ".git" / "index").read_bytes()
    head = git(planted, "rev-parse", "HEAD")
    with pytest.raises(VcsError, match="emb is an embedded git repository"):
        commit_changes(Repo.open(planted), "with emb")
    assert (planted / ".git" / "index").read_bytes() == index and git(planted, "rev-parse", "HEAD") == head
    # control: without it the same commit goes through
    (planted / "emb" / ".git").rename(planted / "emb-gitdir")
    (planted / ".gitignore").write_text(".modgit/\nemb-gitdir/\n")
    assert commit_changes(Repo.open(planted), "files of emb").committed
    assert git(planted, "ls-tree", "HEAD", "emb/x.txt").split()[0] == "100644"
    assert _fired(outside) == []


def test_listings_and_status_in_a_nested_repository_run_nothing(planted: Path, outside: Path) -> None:
    """Discovery lands in the nested repository when coder starts there or lists it: its config is hostile."""
    from coder.edit.listing import _git_ignored, _in_git

    for where in (planted, planted / "sub"):
        assert git_root(where) == where.resolve()
        assert "f.txt" in repo_files(where) or where == planted
        assert list_files(where, all_files=True).from_git
        assert _in_git(where)
        _git_ignored(where)([("f.txt", False)])
        state = git_state(where)
        assert state.branch == "main" and state.dirty
    # `mod/.git` names `.modgit`, outside `mod`, which does not name `mod` back: from `mod` it is a planted
    # pointer, so coder runs no git there at all (and lists the files without it)
    mod = planted / "mod"
    assert git_root(mod) is None
    listing = list_files(mod, all_files=True)
    assert "f.txt" in listing.files and not listing.from_git
    assert _fired(outside) == []


def test_batch_patch_in_a_planted_workspace_runs_nothing(planted: Path, outside: Path) -> None:
    base = git(planted, "rev-parse", "HEAD").strip()
    (planted / "a.txt").write_text("two\n")
    patch = workspace_patch(planted, base)
    assert "+two" in patch
    assert _fired(outside) == []


# ---- drivers in the repository's own config, and a redirected git dir --------------------------------------

def test_repository_filter_and_diff_drivers_never_run(planted: Path, outside: Path) -> None:
    evil = outside / "evil.sh"
    with (planted / ".git" / "config").open("a") as fh:
        fh.write(_evil_config(evil, planted / ".evilhooks"))
    (planted / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (planted / "a.txt").write_text("two\n")
    assert "clean" in _control(planted, outside, "add", "-A", "--dry-run", "a.txt")
    assert "clean" in _control(planted, outside, "hash-object", "a.txt")
    assert hostgit.untrusted_drivers(planted) == ["diff.evil", "filter.evil", "merge.evil"]
    cps = Checkpoints(Repo.open(planted), "s3")
    (planted / "a.txt").write_text("three\n")
    snap = cps.snapshot("turn")
    cps.undo()  # read-tree + checkout-index: the smudge filter must not run either
    assert (planted / "a.txt").read_text() == "two\n"
    repo = Repo.open(planted)
    assert snap is not None and "+two" in repo.diff(base=snap.commit) and "-three" in repo.diff(snap.commit)
    assert "+two" in Repo.open(planted).diff()
    with pytest.raises(VcsError, match="sets git filters \\(filter.evil\\)"):
        commit_changes(Repo.open(planted), "filtered")
    assert _fired(outside) == []


def test_planted_commondir_cannot_redirect_the_repository(planted: Path, outside: Path, tmp_path: Path) -> None:
    """`.git/commondir` (writable by the sandbox today) would move config, refs and objects to a git dir the
    sandbox wrote, whose `core.worktree` points outside: checkpoints would snapshot, and /undo write, there."""
    evil_dir = planted / ".evilgit"
    subprocess.run(["cp", "-a", str(planted / ".git"), str(evil_dir)], check=True)
    (evil_dir / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f"\tworktree = {outside}\n" + _evil_config(outside / "evil.sh", planted / ".evilhooks"))
    (planted / ".gitattributes").write_text("* filter=evil\n")
    cps = Checkpoints(Repo.open(planted), "s4")
    (planted / "a.txt").write_text("two\n")
    (planted / ".git" / "commondir").write_text(str(evil_dir) + "\n")
    assert "fsmonitor" in _control(planted, outside, "status")  # control: git follows it
    with pytest.raises(VcsError, match="commondir exists"):
        cps.snapshot("turn")
    with pytest.raises(VcsError, match="commondir exists"):
        cps.undo()
    with pytest.raises(VcsError, match="commondir exists"):
        commit_changes(Repo.open(planted), "redirected")
    assert git_root(planted) is None and git_state(planted).branch is None  # no git at all, rather than theirs
    assert not list_files(planted).from_git
    assert sorted(p.name for p in outside.iterdir()) == ["evil.sh"]  # no marker, nothing written outside
    assert not (evil_dir / "refs" / "coder").exists()


# ---- environments ---------------------------------------------------------------------------------------------

def test_host_git_and_host_hooks_get_no_provider_key(git_repo: Path, outside: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-test")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0ken")
    monkeypatch.setenv("GIT_DIR", str(outside))  # a caller's git variables never steer host git either
    dump = outside / "env.txt"
    runner = HookRunner([Hook("turn_end", f"env > {dump}", sandbox=False)], git_repo, None)
    outcome = runner._run(runner.hooks[0], {})
    assert outcome.exit_code == 0
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "ANTHROPIC_API_KEY" not in seen and "MY_SERVICE_TOKEN" not in seen
    assert seen["HOME"] == os.environ["HOME"] and seen["PATH"]  # control: the hook did get an environment
    git_env = hostgit.host_git_env()
    assert "ANTHROPIC_API_KEY" not in git_env and "MY_SERVICE_TOKEN" not in git_env and "GIT_DIR" not in git_env
    assert git_env["GIT_CONFIG_GLOBAL"] == os.environ["GIT_CONFIG_GLOBAL"]
    # the user's identity still reaches host git
    assert hostgit.run(git_repo, ["config", "user.email"]).stdout.strip() == "test@example.com"


# ---- a full headless session: the model's bash plants, the post-turn checkpoint runs ------------------------------

BASH_MODES = (("auto", ()), ("ask", ("--allow", "bash(*)")), ("auto-edit", ("--allow", "bash(*)")))


@pytest.mark.parametrize(("mode", "flags"), BASH_MODES, ids=[m for m, _ in BASH_MODES])
def test_headless_session_checkpoint_runs_nothing_the_shell_planted(tmp_path: Path, outside: Path, mode: str,
                                                                     flags: tuple[str, ...]) -> None:
    """The repository records `sub` and `mod` as submodules that are not checked out (as after a plain clone);
    the model's shell makes them repositories with executing config; the checkpoint after the turn runs git."""
    evil = _evil_script(outside)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    for name in ("sub", "mod"):
        git(repo, "init", "-q", name)
        git(repo / name, "commit", "-q", "--allow-empty", "-m", "x")
    git(repo, "-c", "advice.addEmbeddedRepo=false", "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    for name in ("sub", "mod"):
        subprocess.run(["rm", "-rf", str(repo / name)], check=True)
        (repo / name).mkdir()
    config = base64.b64encode(_evil_config(evil, repo / ".evilhooks").encode()).decode()
    plant = (
        "git init -q sub && git init -q --separate-git-dir=.modgit mod && touch sub/f mod/f && "
        "git -C sub add f && git -C mod add f && "
        f"echo {config} | base64 -d >> sub/.git/config && echo {config} | base64 -d >> .modgit/config && "
        "echo '* filter=evil diff=evil merge=evil' > .gitattributes && echo two > a.txt && echo PLANTED-OK"
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "bash", "input": {"command": plant}}]}, {"text": "done"}]}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "sk-ant-fake-for-test"}
    proc = subprocess.run([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}",
                           "--output-format", "stream-json", "--permission-mode", mode, *flags, "go"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [e for e in events if e["type"] == "tool_call_finished"]
    assert results and "PLANTED-OK" in results[0]["output"], proc.stdout + proc.stderr
    refs = git(repo, "for-each-ref", "refs/coder/")
    assert len(refs.splitlines()) >= 3, refs  # baseline, the turn's checkpoint and `current`: git really ran
    assert _fired(outside) == []
    # after the command the session disabled both nested repositories (coder/sandbox/aftercheck.py): the user's
    # own git runs nothing either
    assert "neutralised" in results[0]["output"] and not (repo / "sub" / ".git").exists()
    assert _control(repo, outside, "status") == []
    # control: put them back, and plain git runs the plant
    (repo / "sub" / ".git-disabled-by-coder").rename(repo / "sub" / ".git")
    (repo / "mod" / ".git-disabled-by-coder").rename(repo / "mod" / ".git")
    assert "\tfsmonitor = " in (repo / "sub" / ".git" / "config").read_text()
    assert "fsmonitor" in _control(repo, outside, "status")
