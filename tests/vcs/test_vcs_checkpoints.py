"""Checkpoints, undo and rewind on real repositories: edits, shell-made changes, the user's own work."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from coder.vcs.checkpoints import (
    CheckpointError,
    Checkpoints,
    NothingToUndo,
    RestoreConflict,
    list_sessions,
)
from coder.vcs.repo import Repo


def files(repo: Path) -> dict[str, str]:
    """Every file under repo except .git, with its content (symlinks as '-> target')."""
    out = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_text()
    return out


def test_snapshot_and_undo_cover_edits_and_shell_changes(git_repo: Path, g, fingerprint) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s1")
    base = cps.baseline()
    before = files(git_repo)
    user = fingerprint(git_repo)
    # turn 1: an "edit tool" change
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hey ' + name\n")
    cp1 = cps.snapshot("turn 1")
    assert cp1 is not None and cp1.files_changed == ["src/app.py"] and cp1.parent == base.id
    after_turn1 = files(git_repo)
    # turn 2: shell commands: new nested files, a deletion, a rename, an exec bit, a symlink
    subprocess.run("mkdir -p pkg/sub && echo x > pkg/sub/new.py && rm README.md && git mv -k src/app.py src/main.py"
                   " && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && ln -s src/main.py link.py",
                   shell=True, cwd=git_repo, check=True)
    cp2 = cps.snapshot("turn 2")
    assert cp2 is not None
    assert set(cp2.files_changed) == {"pkg/sub/new.py", "README.md", "src/app.py", "src/main.py", "run.sh", "link.py"}
    assert cps.snapshot("nothing happened") is None  # unchanged tree: no checkpoint
    result = cps.undo()
    assert result.checkpoint.id == cp1.id
    assert files(git_repo) == after_turn1
    assert not (git_repo / "pkg").exists(), "empty directories left by the undone turn are removed"
    result = cps.undo()
    assert result.checkpoint.id == base.id and files(git_repo) == before
    with pytest.raises(NothingToUndo):
        cps.undo()
    # redo through rewind: back to turn 2, modes and symlinks intact
    cps.restore(cp2.id)
    assert os.access(git_repo / "run.sh", os.X_OK)
    assert os.readlink(git_repo / "link.py") == "src/main.py"
    assert (git_repo / "pkg" / "sub" / "new.py").read_text() == "x\n"
    # the git operation `git mv` in the turn touched the user's index; everything else of the user is untouched
    assert fingerprint(git_repo)["head"] == user["head"] and fingerprint(git_repo)["branch"] == user["branch"]


def test_user_work_from_before_the_session_survives(dirty_repo: Path, g, fingerprint) -> None:
    user = fingerprint(dirty_repo)
    before = files(dirty_repo)
    cps = Checkpoints(Repo.open(dirty_repo), "sess-2")
    cps.baseline()
    # the agent edits the user's dirty files, deletes the untracked one, makes build output (ignored)
    (dirty_repo / "README.md").write_text("# agent rewrote this\n")
    (dirty_repo / "src" / "app.py").write_text("broken(\n")
    (dirty_repo / "notes.txt").unlink()
    (dirty_repo / "build").mkdir()
    (dirty_repo / "build" / "out.bin").write_text("artifact")
    assert cps.snapshot("turn 1") is not None
    (dirty_repo / "debug.log").write_text("ignored, changed by the agent\n")
    cps.undo()
    now = files(dirty_repo)
    assert now["README.md"] == "# demo\nuser notes, unstaged\n"
    assert now["src/app.py"] == "def greet(name):\n    return 'hi ' + name\n"
    assert now["notes.txt"] == "user's untracked notes\n"
    # ignored files are neither snapshotted nor removed: they are not the session's to manage
    assert now["build/out.bin"] == "artifact" and now["debug.log"] == "ignored, changed by the agent\n"
    assert {k: v for k, v in now.items() if not k.startswith("build/") and k != "debug.log"} == {
        k: v for k, v in before.items() if k != "debug.log"}
    # index bytes, staged diff, HEAD, branch, stash and refs: exactly as the user left them
    assert fingerprint(dirty_repo) == user
    assert "users stash" in g(dirty_repo, "stash", "list")
    assert g(dirty_repo, "status", "--porcelain").splitlines() == [" M README.md", "M  src/app.py", "?? notes.txt"]


def test_restore_refuses_to_overwrite_later_user_changes_then_force_saves_them(git_repo: Path) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s3")
    cps.baseline()
    (git_repo / "src" / "app.py").write_text("agent version\n")
    cps.snapshot("turn 1")
    # between turns, the user edits the same file and another one
    (git_repo / "src" / "app.py").write_text("user fixed it by hand\n")
    (git_repo / "README.md").write_text("# user edit elsewhere\n")
    with pytest.raises(RestoreConflict) as info:
        cps.undo()
    assert info.value.paths == ["src/app.py"]
    assert "src/app.py" in str(info.value) and "force" in str(info.value)
    assert (git_repo / "src" / "app.py").read_text() == "user fixed it by hand\n"  # nothing written
    result = cps.undo(force=True)
    assert result.safety is not None
    assert (git_repo / "src" / "app.py").read_text() == "def greet(name):\n    return 'hello ' + name\n"
    assert "README.md" in result.kept and (git_repo / "README.md").read_text() == "# user edit elsewhere\n"
    cps.restore(result.safety.id)  # the forced-over state is recoverable
    assert (git_repo / "src" / "app.py").read_text() == "user fixed it by hand\n"


def test_later_changes_outside_the_restored_files_are_kept(git_repo: Path) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s4")
    cps.baseline()
    (git_repo / "a.txt").write_text("turn 1\n")
    cps.snapshot("turn 1")
    (git_repo / "b.txt").write_text("made after the last snapshot\n")
    result = cps.undo()
    assert result.deleted == ["a.txt"] and result.kept == ["b.txt"]
    assert (git_repo / "b.txt").read_text() == "made after the last snapshot\n"
    assert "kept your later changes" in result.summary()


def test_rewind_list_branches_and_undo_after_restore(git_repo: Path) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s5")
    cps.baseline()
    for i in range(1, 4):
        (git_repo / f"f{i}.txt").write_text(str(i))
        cps.snapshot(f"turn {i}")
    listed = cps.list()
    assert [c.id for c in listed] == [0, 1, 2, 3]
    assert [c.label for c in listed][1:] == ["turn 1", "turn 2", "turn 3"]
    assert all(listed[i].created >= listed[i - 1].created for i in range(1, 4))
    cps.restore("1")
    assert sorted(p.name for p in git_repo.glob("f*.txt")) == ["f1.txt"]
    assert cps.current().id == 1
    (git_repo / "g.txt").write_text("new branch of history")
    cp = cps.snapshot("turn 4")
    assert cp.id == 4 and cp.parent == 1
    cps.undo()
    assert cps.current().id == 1 and not (git_repo / "g.txt").exists()
    assert cps.get(listed[2].commit[:10]).id == 2  # lookup by commit prefix
    with pytest.raises(CheckpointError):
        cps.restore(99)


def test_file_replaced_by_directory_and_back(git_repo: Path) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s6")
    cps.baseline()
    (git_repo / "README.md").unlink()
    (git_repo / "README.md").mkdir()
    (git_repo / "README.md" / "inner.txt").write_text("x")
    cps.snapshot("file became a dir")
    cps.undo()
    assert (git_repo / "README.md").is_file() and (git_repo / "README.md").read_text() == "# demo\n"
    cps.restore(1)
    assert (git_repo / "README.md" / "inner.txt").read_text() == "x"


def test_prune_keeps_baseline_and_current_and_sessions_are_listed(git_repo: Path, g) -> None:
    cps = Checkpoints(Repo.open(git_repo), "s7")
    cps.baseline()
    for i in range(6):
        (git_repo / "x.txt").write_text(str(i))
        cps.snapshot(f"t{i}")
    removed = cps.prune(keep=3)
    ids = [c.id for c in cps.list()]
    assert removed == [1, 2, 3] and ids == [0, 4, 5, 6]
    other = Checkpoints(Repo.open(git_repo), "other")
    other.baseline()
    sessions = {s.session_id: s.count for s in list_sessions(Repo.open(git_repo))}
    assert sessions == {"s7": 4, "other": 1}
    # the user's branch log and refs never mention checkpoints
    assert "checkpoint" not in g(git_repo, "log", "--branches", "--tags", "--oneline")
    assert g(git_repo, "for-each-ref", "refs/heads", "--format=%(refname)").split() == ["refs/heads/main"]
    other.delete_all()
    assert "other" not in {s.session_id for s in list_sessions(Repo.open(git_repo))}
    assert cps.undo().checkpoint.id == 5
    assert cps.undo().checkpoint.id == 4
    with pytest.raises(NothingToUndo, match="pruned"):
        cps.undo()  # the parent of 4 is 3, which was pruned


def test_unborn_repository_and_bad_session_ids(tmp_path: Path, g) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    g(repo, "init", "-q", "-b", "main")
    cps = Checkpoints(Repo.open(repo), "s8")
    cps.baseline()
    (repo / "first.py").write_text("print('hi')\n")
    assert cps.snapshot("turn 1") is not None
    cps.undo()
    assert not (repo / "first.py").exists()
    assert g(repo, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""  # still no commit on main
    for bad in ("../x", "a b", "", "x.lock", "-rf"):
        with pytest.raises(CheckpointError):
            Checkpoints(Repo.open(repo), bad)


def test_not_a_repository(tmp_path: Path) -> None:
    from coder.vcs.repo import NotARepository

    with pytest.raises(NotARepository, match="git init"):
        Checkpoints(Repo.open(tmp_path), "s9")


def test_baseline_is_taken_when_the_session_opens(dirty_repo: Path) -> None:
    """The engine only creates the object and snapshots after turns: the first turn must still be undoable."""
    cps = Checkpoints(Repo.open(dirty_repo), "engine-like")
    (dirty_repo / "README.md").write_text("turn 1 by the agent\n")
    assert cps.snapshot("turn 1") is not None
    cps.undo()
    assert (dirty_repo / "README.md").read_text() == "# demo\nuser notes, unstaged\n"
    again = Checkpoints(Repo.open(dirty_repo), "engine-like")  # a resumed session keeps its baseline
    assert [c.id for c in again.list()] == [0, 1]


def test_huge_untracked_files_are_left_out_and_left_alone(git_repo: Path) -> None:
    cps = Checkpoints(Repo.open(git_repo), "big", max_file_mb=0.01)
    (git_repo / "data.bin").write_bytes(b"\0" * 20_000)
    (git_repo / "small.txt").write_text("x")
    cp = cps.snapshot("turn 1")
    assert cp is not None and cp.files_changed == ["small.txt"]
    cps.undo()
    assert not (git_repo / "small.txt").exists() and (git_repo / "data.bin").stat().st_size == 20_000


def test_changes_made_inside_the_sandbox_are_undone(git_repo: Path) -> None:
    """What the agent's shell does (in bubblewrap) is covered like an edit."""
    from coder.sandbox.exec import run_sandboxed

    cps = Checkpoints(Repo.open(git_repo), "sandboxed")
    before = files(git_repo)
    run = run_sandboxed("sed -i 's/hello/bye/' src/app.py && mkdir -p out && echo 1 > out/gen.txt && rm README.md",
                        git_repo, None, 30)
    assert run.exit_code == 0, run.output
    cp = cps.snapshot("turn 1: shell")
    assert cp is not None and sorted(cp.files_changed) == ["README.md", "out/gen.txt", "src/app.py"]
    cps.undo()
    assert files(git_repo) == before


def test_user_edits_between_turns_survive_undo_with_a_pre_turn_snapshot(git_repo: Path) -> None:
    """The engine's pattern: snapshot before a turn (None unless someone changed files since) and after it.
    Undoing the turn then goes back to the user's between-turns state, not before it."""
    cps = Checkpoints(Repo.open(git_repo), "between")
    (git_repo / "a.txt").write_text("turn 1\n")
    cps.snapshot("after turn 1")
    (git_repo / "README.md").write_text("# edited by the user between turns\n")
    assert cps.snapshot("before turn 2") is not None
    (git_repo / "a.txt").write_text("turn 2\n")
    cps.snapshot("after turn 2")
    result = cps.undo()
    assert result.checkpoint.label == "before turn 2"
    assert (git_repo / "README.md").read_text() == "# edited by the user between turns\n"
    assert (git_repo / "a.txt").read_text() == "turn 1\n"
    assert cps.snapshot("before turn 3") is None  # nothing changed since
