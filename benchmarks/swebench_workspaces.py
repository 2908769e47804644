"""Disk and time of 100 workspaces of one repository, before and after issue 44.

    python benchmarks/swebench_workspaces.py --mirror DIR/pallets__flask            # 100 workspaces each way
    python benchmarks/swebench_workspaces.py --mirror DIR/pallets__flask --quick    # 20

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, required=True, help="a mirror (bare or not) of one repository")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="20 workspaces each way")
    ap.add_argument("--no-section", action="store_true")
    ap.add_argument("--label", help="the repository's name in the section (default: the mirror folder's)")
    args = ap.parse_args()
    n = 20 if args.quick else args.n
    commits = bases(args.mirror, n)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ws-bench-") as tmp:
        rows = [measure("before: shared clone of the mirror", shared_clone, args.mirror, commits, Path(tmp)),
                measure("after: the base's past, checkpoint stores", lambda m, b, d: create_workspace(m, b, d),
                        args.mirror, commits, Path(tmp)),
                measure("after, no checkpoints: each its whole past", without_checkpoints, args.mirror, commits,
                        Path(tmp))]
        shutil.rmtree(tmp, ignore_errors=True)
    mirror_mb = disk_mb(args.mirror)
    label = args.label or args.mirror.name
    lines = ["## Workspaces of one repository, before and after issue 44", "",
             f"`python benchmarks/swebench_workspaces.py --mirror DIR/{label}"
             f"{' --quick' if args.quick else ''}`, {time.strftime('%Y-%m-%d %H:%M')}, {platform.node() or 'vm'} "
             f"({os.cpu_count()} cores, Python {platform.python_version()}), load average at the start "
             f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (the machine is shared: times are slow ones). "
             f"Mirror {label}: {mirror_mb:.0f} MB; {n} bases spread over its first-parent history "
             f"({commits[0][:10]} .. {commits[-1][:10]}).", "",
             "| workspace | n | median s | max s | total s | disk of all, MB | clean (no commit after the base) | "
             "commits after the base (median / max) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['n']} | {r['median_s']:.3f} | {r['max_s']:.3f} | {r['total_s']:.1f} | "
                     f"{r['disk_mb']:.0f} | {r['clean']}/{r['n']} | {r['future_median']:g} / {r['future_max']} |")
    lines += ["", "Disk is what the workspaces hold together, the checkpoints' stores included (a shared clone's "
              f"objects stay in the mirror; a checkpoint every {workspace.CHECKPOINT_EVERY} first-parent commits). "
              "A batch keeps only the running and the "
              "next workspaces at once (coder/batch/ahead.py removes finished ones), so the disk in use at a time "
              "is that of workers + 2 workspaces, unless `--keep-workspaces`.", ""]
    text = "\n".join(lines)
    print(text)
    if not args.no_section:
        SECTION.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
