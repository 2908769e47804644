"""What the after-command check of issue 43 costs a shell call (coder/sandbox/leftovers.py, watch.py).

Usage: python benchmarks/left_behind.py [--quick] [--rounds N] [--write-section]

A repository with a big ignored `.venv` (folders of `.py` files and their `__pycache__/*.pyc`) and a big
`node_modules` (with a `.bin`), the kinds of trees whose every file the check must cover. Measured in the same
run, alternating: one `PersistentShell.run("true")` with the whole check (round 2's git check plus the leftovers),
and with the leftovers part switched off (round 2 as it was); medians. Also: the baseline (the first look of a
session: one walk, one watch per folder and per file of a kind), and one look when inotify is not there or
overflowed (a walk and a stat of every file of a kind), which is what every call would cost without the kernel's
help.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coder.sandbox.leftovers import Leftovers  # noqa: E402
from coder.sandbox.profile import SandboxConfig  # noqa: E402
from coder.sandbox.shell import PersistentShell  # noqa: E402

SECTION = Path(__file__).resolve().parent / "sections" / "left_behind.md"


def make_tree(root: Path, venv_folders: int, node_files: int) -> dict[str, int]:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("x = 1\n")
    (root / ".gitignore").write_text(".venv/\nnode_modules/\n__pycache__/\n")
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    pyc = 0
    for i in range(venv_folders):
        folder = site / f"pkg{i // 20}" / f"sub{i}"
        (folder / "__pycache__").mkdir(parents=True)
        for j in range(5):
            (folder / f"m{j}.py").write_text("x = 1\n")
            (folder / "__pycache__" / f"m{j}.cpython-311.pyc").write_bytes(b"\0" * 64)
            pyc += 1
    for j in range(40):
        (root / ".venv" / "bin" / f"tool{j}").write_text("#!/bin/sh\n")
    bins = root / "node_modules" / ".bin"
    bins.mkdir(parents=True)
    for j in range(node_files):
        pkg = root / "node_modules" / f"p{j // 50}"
        pkg.mkdir(exist_ok=True)
        (pkg / f"f{j}.js").write_text("1\n")
    for j in range(100):
        (bins / f"cli{j}").symlink_to(f"../p0/f{j}.js")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "x"],
                   check=True, capture_output=True)
    folders = sum(1 for _ in root.rglob("*") if _.is_dir())
    return {"pyc": pyc, "folders": folders, "node_files": node_files}


def measure(root: Path, rounds: int, calls: int) -> dict[str, float]:
    shell = PersistentShell(root, SandboxConfig())
    shell.start()
    real_check = Leftovers.check
    with_check: list[float] = []
    without: list[float] = []
    try:
        shell.run("true", 60)  # the baseline
        for _ in range(rounds):
            for label, series in (("on", with_check), ("off", without)):
                Leftovers.check = real_check if label == "on" else (lambda self, hooks: [])  # type: ignore[method-assign]
                times = []
                for _ in range(calls):
                    began = time.perf_counter()
                    shell.run("true", 60)
                    times.append(time.perf_counter() - began)
                series.append(statistics.median(times) * 1000)
    finally:
        Leftovers.check = real_check  # type: ignore[method-assign]
        shell.close()
    first = Leftovers(root)
    began = time.perf_counter()
    first.check(None)
    baseline = (time.perf_counter() - began) * 1000
    assert first.watch is not None
    first.watch.broken = "benchmark: as without inotify"
    began = time.perf_counter()
    first.check(None)
    walked = (time.perf_counter() - began) * 1000
    first.close()
    return {"with": statistics.median(with_check), "without": statistics.median(without), "baseline": baseline,
            "walk": walked}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write-section", action="store_true")
    args = parser.parse_args()
    venv_folders, node_files, calls = (400, 5_000, 10) if args.quick else (4_000, 50_000, 20)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        sizes = make_tree(root, venv_folders, node_files)
        figures = measure(root, args.rounds, calls)
    ratio = figures["with"] / figures["without"]
    lines = [
        "# The after-command check of what runs later (issue 43)", "",
        f"`python benchmarks/left_behind.py{' --quick' if args.quick else ''} --rounds {args.rounds} "
        "--write-section`", "",
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load average {load:.1f} at the start; a repository "
        f"with an ignored `.venv` of {sizes['pyc']:,} `.pyc` files and a `node_modules` of {sizes['node_files']:,} "
        f"files ({sizes['folders']:,} folders in all).", "",
        "| measurement | ms |", "| --- | ---: |",
        f"| one shell call (`true`), round 2's check only (median of {args.rounds} rounds) | "
        f"{figures['without']:.1f} |",
        f"| one shell call (`true`), with the leftovers check | {figures['with']:.1f} |",
        f"| ratio | {ratio:.2f} |",
        f"| the first look of a session (walk, one watch a folder and one a file of a kind) | "
        f"{figures['baseline']:.1f} |",
        f"| one look without inotify (or after its queue overflowed): walk and stat | {figures['walk']:.1f} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_section:
        SECTION.write_text(text)


if __name__ == "__main__":
    main()
