"""write_json_atomic / write_text_atomic: the new file whole or the old one, and no temporary file left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from coder.base.atomic import write_json_atomic, write_text_atomic


def test_json_replaces_the_file_private_and_ending_in_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    write_json_atomic(path, {"b": 1, "a": [2]}, indent=2, sort_keys=True)
    assert path.read_text() == json.dumps({"a": [2], "b": 1}, indent=2, sort_keys=True) + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, "half \ud800 written")  # a lone surrogate fails while writing, after the open
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_mode_is_less_the_umask_as_open_gives(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "shared.txt", "x", mode=0o666, durable=True)
    finally:
        os.umask(old)
    assert (tmp_path / "shared.txt").stat().st_mode & 0o777 == 0o644
