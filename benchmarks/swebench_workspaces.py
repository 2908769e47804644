"""Disk and time of 100 workspaces of one repository, before and after issue 44.

    python benchmarks/swebench_workspaces.py --mirror DIR/pallets__flask            # 100 workspaces each way
    python benchmarks/swebench_workspaces.py --mirror DIR/pallets__flask --quick    # 20
    python benchmarks/swebench_workspaces.py --mirror DIR/pallets__flask --mirror DIR/sympy__sympy --n 100 --n 20

Before: `git clone --shared --no-checkout` of the mirror and a detached checkout (the workspace borrows the whole
mirror through alternates: every later commit, tag and branch in reach). After: coder/batch/workspace.py
`create_workspace` (a fresh repository holding the base's ancestry only: the history older than its checkpoint
from the checkpoint's shared store, the rest in a pack of its own), and the same without checkpoints (each
workspace packs its whole history: the design's simpler alternative, measured to show what the stores save).
The bases are spread evenly over
the mirror's first-parent history of HEAD, oldest to newest, as a hundred instances of one repository are. For each
way: the wall time per workspace (median, max, total), the disk of all of them together (`du`, so hard links
count once), and the reach record of each (coder/batch/reach.py: commits after the base). Writes
benchmarks/sections/swebench_workspaces.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from coder.batch import workspace  # noqa: E402
from coder.batch.reach import future_in_reach, git_reach  # noqa: E402
from coder.batch.workspace import create_workspace, git  # noqa: E402

SECTION = ROOT / "benchmarks" / "sections" / "swebench_workspaces.md"


def bases(mirror: Path, n: int) -> list[str]:
    chain = git(mirror, "rev-list", "--first-parent", "HEAD").split()[::-1]
    step = max(1, len(chain) // n)
    return chain[step - 1::step][-n:]


def shared_clone(mirror: Path, base: str, dest: Path) -> None:
    """The workspace before issue 44 (coder/batch/workspace.py until then)."""
    git(dest.parent, "clone", "--shared", "--no-checkout", "-q", str(mirror.resolve()), str(dest), protocols="file")
    git(dest, "checkout", "-q", "--detach", base)


def disk_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) / 1024


def without_checkpoints(mirror: Path, base: str, dest: Path) -> None:
    every, workspace.CHECKPOINT_EVERY = workspace.CHECKPOINT_EVERY, 10**12
    try:
        create_workspace(mirror, base, dest)
    finally:
        workspace.CHECKPOINT_EVERY = every


def measure(name: str, make, mirror: Path, commits: list[str], root: Path) -> dict:
    folder = root / name.split(":")[0].replace(" ", "-")
    folder.mkdir()
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # the checkpoints' stores, counted with the workspaces
    times, future = [], []
    for i, base in enumerate(commits):
        dest = folder / f"ws{i:03d}"
        started = time.perf_counter()
        make(mirror, base, dest)
        times.append(time.perf_counter() - started)
        future.append(future_in_reach(git_reach(dest, base)))
    return {"name": name, "n": len(commits), "median_s": statistics.median(times), "max_s": max(times),
            "total_s": sum(times), "disk_mb": disk_mb(folder), "future_max": max(future),
            "future_median": statistics.median(future), "clean": sum(f == 0 for f in future)}


def block(mirror: Path, label: str, n: int, option: str) -> str:
    """The measurements of one mirror, as a subsection."""
    commits = bases(mirror, n)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ws-bench-") as tmp:
        rows = [measure("before: shared clone of the mirror", shared_clone, mirror, commits, Path(tmp)),
                measure("after: the base's past, checkpoint stores", lambda m, b, d: create_workspace(m, b, d),
                        mirror, commits, Path(tmp)),
                measure("after, no checkpoints: each its whole past", without_checkpoints, mirror, commits,
                        Path(tmp))]
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [f"### {label}: {n} workspaces", "",
             f"`python benchmarks/swebench_workspaces.py --mirror DIR/{label}{option}`, finished "
             f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.node() or 'vm'} ({os.cpu_count()} cores, Python "
             f"{platform.python_version()}), load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
             f"(the machine is shared: times are slow ones). Mirror: {disk_mb(mirror):.0f} MB; {n} bases spread "
             f"over its first-parent history ({commits[0][:10]} .. {commits[-1][:10]}).", "",
             "| workspace | n | median s | max s | total s | disk of all, MB | clean (no commit after the base) | "
             "commits after the base (median / max) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['n']} | {r['median_s']:.3f} | {r['max_s']:.3f} | {r['total_s']:.1f} | "
                     f"{r['disk_mb']:.0f} | {r['clean']}/{r['n']} | {r['future_median']:g} / {r['future_max']} |")
    return "\n".join(lines) + "\n"


HEAD = ("## Workspaces of one repository, before and after issue 44\n\n"
        "Disk is what the workspaces hold together, the checkpoints' stores included (a shared clone's objects stay "
        "in the mirror; a checkpoint every {every} first-parent commits). A batch keeps only the running and the next "
        "workspaces at once (coder/batch/ahead.py removes finished ones), so the disk in use at a time is that of "
        "workers + 2 workspaces, unless `--keep-workspaces`. A workspace's time includes building the checkpoint "
        "stores it is the first to need.\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, action="append", required=True,
                    help="a mirror (bare or not) of one repository; repeat for more")
    ap.add_argument("--label", action="append", default=[],
                    help="each mirror's name in the section, in order (default: the mirror folder's)")
    ap.add_argument("--n", type=int, action="append", default=[], help="workspaces per mirror, in order (100)")
    ap.add_argument("--quick", action="store_true", help="20 workspaces each way")
    ap.add_argument("--no-section", action="store_true")
    args = ap.parse_args()
    parts = [HEAD.format(every=workspace.CHECKPOINT_EVERY)]
    for i, mirror in enumerate(args.mirror):
        n = 20 if args.quick else (args.n[i] if i < len(args.n) else 100)
        option = " --quick" if args.quick else ("" if n == 100 else f" --n {n}")
        parts.append(block(mirror, args.label[i] if i < len(args.label) else mirror.name, n, option))
        print(parts[-1], flush=True)
    if not args.no_section:
        SECTION.write_text("\n".join(parts), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
