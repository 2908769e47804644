"""`coder index/map/find/outline` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.cli.main import main


@pytest.fixture
def repo(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (git_repo / "src" / "models.py").write_text(
        "class Model:\n    def save(self):\n        return greet('m')\n")
    monkeypatch.chdir(git_repo)
    return git_repo


def test_index_stats(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--stats"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 2 files") and "python" in out and "symbols   3" in out
    assert main(["index", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["languages"] == {"python": 2} and info["last_refresh"]["unchanged"] == 2


def test_find_and_outline_json(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["find", "Model.save", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"path": "src/models.py", "line": 2, "end_line": 3, "kind": "method", "name": "Model.save"}]
    assert main(["find", "greet", "--refs", "--json"]) == 0
    assert [(h["path"], h["line"]) for h in json.loads(capsys.readouterr().out)] == [("src/models.py", 3)]
    assert main(["outline", "src/models.py", "--json"]) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)] == ["Model", "Model.save"]
    assert main(["find", "NoSuchThingAnywhere"]) == 1


def test_outline_from_a_subdirectory_and_map(repo: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "src")
    assert main(["outline", "models.py"]) == 0
    assert capsys.readouterr().out.splitlines() == ["     1-3     class Model", "     2-3       def save(self)"]
    assert main(["map", "--tokens", "100", "models.py"]) == 0
    assert "src/models.py:" in capsys.readouterr().out


def test_usage_errors_exit_2(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--tokens", "0"]) == 2
    assert main(["outline", "nope.py"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_outside_a_repository_the_folder_is_the_root(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tools.py").write_text("def helper():\n    return 1\n")
    monkeypatch.chdir(tmp_path / "pkg")
    assert main(["find", "helper", "--json"]) == 0
    assert [h["path"] for h in json.loads(capsys.readouterr().out)] == ["tools.py"]  # relative to pkg, not above
