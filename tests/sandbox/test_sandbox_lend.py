"""Lending a folder of the workspace to a sandbox on another tree (coder/sandbox/lend.py): the review's base run in an
exported copy reads the project's `.venv`, which the sandboxed code shaped. Attacks, with the real bwrap: the folder
is a link to a directory outside that the test owns (with a marker), or it is swapped for one after coder looked;
what the sandbox reads is never the outside marker."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from coder.sandbox import exec as sandbox_exec
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.lend import Lent, bwrap_binds_fds, lend

INSIDE, OUTSIDE = "LENT-MARKER-7f3", "OUTSIDE-MARKER-9c1"


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"
    assert bwrap_binds_fds(), "this bubblewrap has no --ro-bind-fd (0.7 or later needed): apt-get install bubblewrap"


def _trees(tmp_path: Path) -> tuple[Path, Path, Path]:
    project, copy, outside = tmp_path / "proj", tmp_path / "copy", tmp_path / "outside"
    for folder in (project, copy, outside):
        folder.mkdir()
    (outside / "marker.txt").write_text(OUTSIDE)
    return project, copy, outside


def _read(project: Path, outside: Path) -> str:
    return (f"cat {project}/.venv/marker.txt 2>&1; cat {outside}/marker.txt 2>&1; "
            f"touch {project}/.venv/written 2>&1 || echo not-writable")


def test_a_real_folder_is_lent_read_only_at_its_own_path(tmp_path: Path) -> None:
    project, copy, outside = _trees(tmp_path)
    (project / ".venv").mkdir()
    (project / ".venv" / "marker.txt").write_text(INSIDE)
    without = run_sandboxed(_read(project, outside), copy, None, 30)
    assert INSIDE not in without.output  # the control: another tree's folder is not there unless lent
    run = run_sandboxed(_read(project, outside), copy, None, 30, lend_from=(project, ".venv"))
    assert INSIDE in run.output and "not-writable" in run.output, run.output
    assert OUTSIDE not in run.output and not (project / ".venv" / "written").exists()


def test_a_link_is_not_lent(tmp_path: Path) -> None:
    project, copy, outside = _trees(tmp_path)
    (project / ".venv").symlink_to(outside)
    assert lend(project, ".venv") is None
    run = run_sandboxed(_read(project, outside), copy, None, 30, lend_from=(project, ".venv"))
    assert OUTSIDE not in run.output, run.output
    for name in ("", ".", "..", "a/b", "../outside"):
        assert lend(project, name) is None, name


def test_a_folder_swapped_for_a_link_after_the_look_is_still_the_one_lent(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The race, proved without winning it: the swap happens between coder's open and bwrap's start, every time."""
    project, copy, outside = _trees(tmp_path)
    (project / ".venv").mkdir()
    (project / ".venv" / "marker.txt").write_text(INSIDE)
    swapped: list[Lent | None] = []

    def open_then_swap(root: Path, name: str) -> Lent | None:
        lent = lend(root, name)
        (root / name).rename(root / "moved-away")
        (root / name).symlink_to(outside)
        swapped.append(lent)
        return lent

    monkeypatch.setattr(sandbox_exec, "lend", open_then_swap)
    run = run_sandboxed(_read(project, outside), copy, None, 30, lend_from=(project, ".venv"))
    assert swapped and swapped[0] is not None and os.path.islink(project / ".venv")
    assert INSIDE in run.output and OUTSIDE not in run.output, run.output
