"""The after-command check's own limits (issue 43, item 6): a walk cut short says so, and the kernel's inotify
instances (128 a user by default, shared by every coder of the user) are given back when a shell ends."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from test_security_left_behind import _shell, _venv, outside, repo

from coder.sandbox import leftovers, watch

__all__ = ["outside", "repo"]  # fixtures

PLANT = "mkdir -p zz && (cd zz && mkdir $(seq 1 60)) && printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/git && echo PLANTED"


def _inotify_instances() -> int:
    """The inotify instances this process holds. A watch an earlier test of this worker dropped is freed first
    (a collection), so it cannot vanish between two counts of one test (seen once under -n 2)."""
    gc.collect()
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue
    return count


def _plant(repo: Path, tmp_path: Path) -> str:
    tool, ctx, _ = _shell(repo, tmp_path / "state", None)
    try:
        tool.run(tool.parse({"command": "true"}), ctx)  # the baseline
        return tool.run(tool.parse({"command": PLANT}), ctx).output
    finally:
        tool.close()


def test_a_walk_cut_at_the_folder_limit_says_the_check_did_not_finish(repo: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """More folders than the watch and the walk take (100,000; 40 here): what lies beyond is not looked at, and the
    note says so instead of passing in silence."""
    _venv(repo)
    monkeypatch.setattr(watch, "FOLDER_LIMIT", 40)
    monkeypatch.setattr(leftovers, "FOLDER_LIMIT", 40, raising=False)
    output = _plant(repo, tmp_path)
    assert "PLANTED" in output and "more than 40 folders" in output and "not checked" in output, output


def test_the_same_plant_within_the_limit_is_caught(repo: Path, tmp_path: Path) -> None:
    """The control: the plant above, with the real limit, is found and removed."""
    _venv(repo)
    output = _plant(repo, tmp_path)
    assert "PLANTED" in output and ".venv/bin/git" in output and "not checked" not in output, output
    assert not (repo / ".venv" / "bin" / "git").exists()


def test_a_shell_gives_its_inotify_instance_back_when_it_ends(repo: Path, tmp_path: Path) -> None:
    before = _inotify_instances()
    tool, ctx, _ = _shell(repo, tmp_path / "state", None)
    try:
        tool.run(tool.parse({"command": "true"}), ctx)
        assert _inotify_instances() == before + 1, "no inotify instance: /proc/sys/fs/inotify/max_user_instances " \
            "reached (another process leaks them), so the check walks instead of watching"
    finally:
        tool.close()
    assert _inotify_instances() == before
    tool, ctx, _ = _shell(repo, tmp_path / "state", None)  # a later shell in the same workspace still checks
    try:
        made = tool.parse({"command": "mkdir -p .venv/bin && touch .venv/pyvenv.cfg .venv/bin/git && echo MADE"})
        output = tool.run(made, ctx).output
    finally:
        tool.close()
    assert "MADE" in output and ".venv/bin/git" in output, output


def test_a_watch_dropped_without_close_frees_its_instance(tmp_path: Path) -> None:
    before = _inotify_instances()
    tree = watch.TreeWatch(str(tmp_path))
    tree.start()
    assert not tree.broken, f"{tree.broken}: /proc/sys/fs/inotify/max_user_instances reached (another process " \
        "leaks them)"
    assert _inotify_instances() == before + 1
    del tree
    gc.collect()
    assert _inotify_instances() == before
