"""The repo map: hard token budget, byte-identical across processes, personalised, never stale."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder.codeintel.index import CodeIndex
from coder.codeintel.repomap import estimate_tokens

ROOT = Path(__file__).resolve().parents[2]


def _make_repo(root: Path) -> Path:
    """A small layered project: core models used by services, used by views; plus an unrelated corner."""
    (root / "app").mkdir(parents=True)
    (root / "app" / "models.py").write_text(
        "class Record:\n    def save_record(self):\n        return 1\n\n"
        "class AuditTrail:\n    def append_entry(self, entry):\n        return entry\n")
    for i in range(8):
        (root / "app" / f"service_{i}.py").write_text(
            f"from app.models import Record\n\nclass Service{i}:\n    def run_service(self):\n"
            f"        r = Record()\n        r.save_record()\n        return Record\n")
    (root / "app" / "views.py").write_text(
        "from app.service_0 import Service0\n\ndef render_page():\n    return Service0().run_service()\n")
    (root / "app" / "audit.py").write_text(
        "from app.models import AuditTrail\n\ndef audit_everything():\n    return AuditTrail().append_entry(1)\n")
    (root / "web").mkdir()
    (root / "web" / "ui.ts").write_text("export function drawWidget(): number { return 1 }\n")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _make_repo(tmp_path / "proj")


@pytest.mark.parametrize("budget", [20, 60, 150, 400, 2000])
def test_never_over_budget(repo: Path, budget: int) -> None:
    index = CodeIndex.open(repo)
    text = index.repo_map(budget)
    assert estimate_tokens(text) <= budget
    if budget >= 60:
        assert "app/models.py:" in text  # the most used file makes even a small map


def test_bigger_budget_shows_more_and_most_used_first(repo: Path) -> None:
    index = CodeIndex.open(repo)
    small, big = index.repo_map(60), index.repo_map(2000)
    assert len(small) < len(big)
    assert big.splitlines()[0] == "app/models.py:"
    assert "class Record" in big and "def save_record(self)" in big and "drawWidget" in big


def test_focus_steers_the_map(repo: Path) -> None:
    index = CodeIndex.open(repo)
    plain = index.repo_map(40)
    focused = index.repo_map(40, focus_files=["app/audit.py"])
    assert plain.startswith("app/models.py:\n     1 class Record")
    assert focused.startswith("app/audit.py:") and "AuditTrail" in focused and "Record" not in focused
    by_name = index.repo_map(40, focus_names=["drawWidget"])
    assert "drawWidget" in by_name


def test_map_is_never_stale(repo: Path) -> None:
    index = CodeIndex.open(repo)
    before = index.repo_map(2000)
    (repo / "app" / "models.py").write_text(
        "class Record:\n    def persist_record(self):\n        return 1\n")
    after = index.repo_map(2000)
    assert "persist_record" in after and "save_record" not in after and before != after


def _map_in_new_process(repo: Path, cache: Path, seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": seed, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "coder", "map", "--tokens", "300", "--names", "Record"],
                          cwd=repo, env=env, capture_output=True, check=True)
    return proc.stdout


def test_byte_identical_across_processes_and_hash_seeds(repo: Path, tmp_path: Path) -> None:
    first = _map_in_new_process(repo, tmp_path / "c1", "1")
    second = _map_in_new_process(repo, tmp_path / "c2", "4242")
    warm = _map_in_new_process(repo, tmp_path / "c1", "7")  # from the first process's cache
    assert first and first == second == warm
    here = CodeIndex.open(repo, cache_dir=tmp_path / "c3").repo_map(300, focus_names=["Record"])
    assert here.encode() == first


def test_body_edits_rerender_without_reranking(repo: Path) -> None:
    index = CodeIndex.open(repo)
    before = index.repo_map(2000)
    assert index.last_map_reranked
    models = repo / "app" / "models.py"
    models.write_text("# a comment that moves everything down\n\n" + models.read_text().replace("return 1", "return 2"))
    after = index.repo_map(2000)
    assert not index.last_map_reranked  # same reference graph: the cached ranking is reused
    assert "     3 class Record" in after and "     1 class Record" in before  # but the lines are current
    assert [line.split()[-1] for line in after.splitlines()] == [line.split()[-1] for line in before.splitlines()]
    (repo / "app" / "views.py").write_text("from app.models import AuditTrail\n\ndef page():\n    return AuditTrail\n")
    index.repo_map(2000)
    assert index.last_map_reranked  # views.py now uses other names: a new graph, a new ranking


def test_cold_build_graph_equals_the_one_read_back(repo: Path) -> None:
    from coder.codeintel.repomap import load_graph

    (repo / "app" / "dup.py").write_text("class Record:\n    pass\n\nclass Record:\n    pass\n# AuditTrail\n")
    index = CodeIndex.open(repo)
    index.refresh()
    assert index._built_graph is not None
    state, builder = index._built_graph
    assert state == index.graph_fingerprint()
    built = builder.finish()
    read = load_graph(index._conn)
    assert built == read and len(read.symbols) > 10 and read.users["AuditTrail"]
    assert [s for s in read.symbols if s[2] == "Record" and read.paths[s[0]] == "app/dup.py"][1][4] == 1


def test_cold_build_graph_is_not_used_for_a_changed_state(repo: Path) -> None:
    index = CodeIndex.open(repo)
    index.refresh()
    (repo / "app" / "late.py").write_text("class LateComer:\n    def arrive_now(self):\n        return 1\n")
    text = index.repo_map(4000)  # re-checks first: a new file, a new state: the built graph must not serve
    assert "class LateComer" in text and index._built_graph is None
