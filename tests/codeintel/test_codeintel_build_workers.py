"""Cold-build scheduling: batches handed to parse workers on demand, and a dead worker's share not lost."""

from __future__ import annotations

import sys
from pathlib import Path

from coder.codeintel import build, pool
from coder.codeintel.index import CodeIndex


def _many_files(root: Path, count: int) -> None:
    for i in range(count):
        body = "".join(f"def f{i}_{j}():\n    return greet({j})\n" for j in range(1 + i % 7))
        (root / "src" / f"m{i}.py").write_text(body)


def test_size_batches_biggest_first_and_bounded() -> None:
    todo = [(f"f{i}", size, 0, None) for i, size in enumerate([10, 300_000, 5, 200_000, 100_000, 70_000])]
    todo += [(f"s{i}", 1, 0, None) for i in range(100)]
    batches = pool.size_batches(todo)
    flat = [item for batch in batches for item in batch]
    assert sorted(flat) == sorted(todo)  # every file exactly once
    assert [it[1] for it in flat] == sorted((it[1] for it in todo), reverse=True)
    assert batches[0] == [("f1", 300_000, 0, None)]  # bigger than BATCH_BYTES: alone
    assert all(len(b) <= pool.BATCH_FILES for b in batches)
    assert all(len(b) == 1 or sum(it[1] for it in b) <= pool.BATCH_BYTES for b in batches)


def test_parallel_build_matches_serial_build(git_repo: Path, monkeypatch, tmp_path: Path) -> None:
    _many_files(git_repo, 120)
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 2)
    monkeypatch.setattr(pool, "BATCH_FILES", 5)  # many batches: the on-demand hand-out is exercised
    parallel = CodeIndex.open(git_repo, cache_dir=tmp_path / "a")
    assert parallel.refresh(workers=2).parsed == 121
    serial = CodeIndex.open(git_repo, cache_dir=tmp_path / "b")
    assert serial.refresh(workers=1).parsed == 121
    query = "SELECT f.path, s.kind, s.name, s.line FROM symbols s JOIN files f ON f.id = s.file_id ORDER BY 1, 3, 4"
    assert parallel._query(query) == serial._query(query)
    refs = "SELECT f.path, n.words FROM names n JOIN files f ON f.id = n.rowid ORDER BY 1"
    assert parallel._query(refs) == serial._query(refs)
    assert len(parallel.references("greet")) == sum(1 + i % 7 for i in range(120))  # one per line


def test_dead_workers_share_is_parsed_in_process(git_repo: Path, monkeypatch, tmp_path: Path) -> None:
    _many_files(git_repo, 40)
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 2)
    monkeypatch.setattr(pool, "BATCH_FILES", 4)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # a real process that exits at once, like a crash
    index = CodeIndex.open(git_repo, cache_dir=tmp_path / "c")
    stats = index.refresh(workers=2)
    assert stats.parsed == 41
    assert len(index.references("greet")) == sum(1 + i % 7 for i in range(40))
    assert index._query("SELECT count(*) FROM symbols")[0][0] == sum(1 + i % 7 for i in range(40)) + 1


def test_workers_start_before_the_listing_on_a_big_cold_checkout(git_repo: Path, monkeypatch, tmp_path: Path) -> None:
    _many_files(git_repo, 30)
    monkeypatch.setattr(pool, "EARLY_START_INDEX_BYTES", 0)
    events: list[str] = []
    pools: list[pool.ParsePool] = []
    real_init, real_list = pool.ParsePool.__init__, build.list_files

    def spy_init(self, root: Path, workers: int) -> None:
        real_init(self, root, workers)
        events.append("pool")
        pools.append(self)

    def spy_list(root: Path):
        events.append("list")
        return real_list(root)

    monkeypatch.setattr(pool.ParsePool, "__init__", spy_init)
    monkeypatch.setattr(build, "list_files", spy_list)
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 2)
    index = CodeIndex.open(git_repo, cache_dir=tmp_path / "c")
    assert index.refresh(workers=2).parsed == 31
    assert events == ["pool", "list"]  # one pool, started before the listing, and used
    assert all(p.poll() is not None for p in pools[0].procs)
    assert len(index.references("greet")) == sum(1 + i % 7 for i in range(30))
    events.clear()
    index.refresh(workers=2)
    assert events[:1] == ["list"]  # a warm cache never starts workers before listing
    # a cold build too small for workers: started early, then ended unused
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 1000)
    events.clear()
    assert CodeIndex.open(git_repo, cache_dir=tmp_path / "d").refresh(workers=2).parsed == 31
    assert events == ["pool", "list"] and all(p.poll() is not None for p in pools[-1].procs)
