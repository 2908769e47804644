"""Assemble benchmarks/RESULTS.md from the per-area sections in benchmarks/sections/ (each benchmark script writes
or updates its own section; this joins them in a fixed order). Usage: python benchmarks/assemble_results.py"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["startup", "models", "shell", "edits", "edits_commits", "codeintel", "lsp", "context", "review", "tui",
         "batch", "suite", "suite_under_load"]
HEADER = """# Benchmark results

Each section says the command that gives its figures, the date and the machine. All were measured on this
project's machine kind: 2 cores, 24 GiB, no accelerator, Python 3.11.7; most while other work ran in parallel, so
treat timings as noisy (each section says how loaded the machine was). Peers ran in their own venvs or folders,
in the same run as ours. Regenerate this file with `python benchmarks/assemble_results.py` after re-running a
benchmark with its section-writing option.
"""


def main() -> None:
    sections = {p.stem: p for p in (HERE / "sections").glob("*.md")}
    names = [n for n in ORDER if n in sections] + sorted(set(sections) - set(ORDER))
    parts = [HEADER] + [sections[n].read_text(encoding="utf-8").strip() + "\n" for n in names]
    (HERE / "RESULTS.md").write_text("\n".join(parts), encoding="utf-8")
    print(f"RESULTS.md: {len(names)} sections ({', '.join(names)})")


if __name__ == "__main__":
    main()
