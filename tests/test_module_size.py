"""Modules stay under ~400 lines (issue 48, item 7; AGENTS.md): a module that grows past LIMIT is split along a real
seam, two concerns each in a module named by what it is, or named here with why it stays whole. An entry of the
list that is no longer over the limit (or no longer there) fails too, so the list only shrinks."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the line: ~400, with room for a docstring's growth before a split is due
LIMIT = 420
#: the modules over LIMIT, each with why it is not split (docs/decisions/48-typed-doors.md, item 7)
OVER = {
    "coder/vcs/repo.py": "the Repo is one object: split in two (the index apart), the walk from review to commit "
                         "returns to a module it left 31 times instead of 27 (benchmarks/repo.py --no-timing)",
}


def lines(path: Path) -> int:
    """Lines as `wc -l` counts them."""
    return path.read_bytes().count(b"\n")


def over(root: Path, limit: int) -> dict[str, int]:
    """Every module of coder/ and coder_testkit/ under `root` over `limit` lines, by its path from `root`."""
    found = {}
    for package in ("coder", "coder_testkit"):
        for path in sorted((root / package).rglob("*.py")):
            if lines(path) > limit:
                found[path.relative_to(root).as_posix()] = lines(path)
    return found


def test_no_module_is_over_the_limit_but_the_named_ones() -> None:
    found = over(ROOT, LIMIT)
    unnamed = {path: n for path, n in found.items() if path not in OVER}
    assert not unnamed, f"over {LIMIT} lines: {unnamed}; split each along a real seam (or name it in OVER, and why)"
    stale = sorted(set(OVER) - set(found))
    assert not stale, f"no longer over {LIMIT} lines (or gone): {stale}; remove them from OVER"


def test_the_count_sees_a_module_over_the_limit(tmp_path: Path) -> None:
    """The control: a module of LIMIT + 1 lines, deep in a package, is found; one of LIMIT lines is not."""
    (tmp_path / "coder" / "deep").mkdir(parents=True)
    (tmp_path / "coder_testkit").mkdir()
    (tmp_path / "coder" / "deep" / "big.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "coder_testkit" / "fits.py").write_text("x = 1\n" * LIMIT)
    assert over(tmp_path, LIMIT) == {"coder/deep/big.py": LIMIT + 1}
