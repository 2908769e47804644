"""What host-side safety costs (issue 14): the guards that run on every call, measured on synthetic trees.

Usage: python benchmarks/host_safety.py [--quick] [--files N] [--seed S] [--write-section FILE]

- protected-set scan: `NestedScanner.scan` (nested `.git`, instruction files), which the sandbox runs before
  every command: the first (cold) walk and the cached one that follows;
- host git: `coder.vcs.repo.Repo.resolve("HEAD")` (hardened: scrubbed env, forced config, pinned git dir,
  the link scan of `.git`) against plain `git rev-parse HEAD`, median of repeated calls;
- trust: `coder.trust.decisions.inspect` of a repository defining a server, a config, 20 tools and 20 commands.

The zero-host-effects goal itself is measured by the adversarial suite: `python3 -m pytest tests/security -q`
(its count is printed here too, from `--collect-only`). Numbers depend on the machine's load; the section records
the load average at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coder.sandbox.nested import NestedScanner  # noqa: E402
from coder.trust.decisions import inspect  # noqa: E402
from coder.vcs.repo import Repo  # noqa: E402


def make_tree(root: Path, files: int, seed: int) -> None:
    """A repository of `files` files in folders 3 deep, a few nested repositories and instruction files."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    folders = [root / f"pkg{a}" / f"mod{b}" / f"sub{c}" for a in range(10) for b in range(10) for c in range(3)]
    for i in range(files):
        folder = rng.choice(folders)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.py").write_text(f"x = {i}\n")
    (root / "pkg3" / "AGENTS.md").write_text("rules\n")
    (root / ".coder" / "tools").mkdir(parents=True)
    (root / ".coder" / "commands").mkdir(parents=True)
    for i in range(20):
        (root / ".coder" / "tools" / f"t{i}.json").write_text(json.dumps({"name": f"t{i}", "command": "true"}))
        (root / ".coder" / "commands" / f"c{i}.md").write_text("do it\n")
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "srv", "args": ["--x"]}}}))
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "x"],
                   check=True, capture_output=True)
    for name in ("pkg1/vendor", "pkg5/third"):  # nested repositories, untracked (as a sandboxed `git init` makes)
        subprocess.run(["git", "init", "-q", str(root / name)], check=True)


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def security_tests() -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/security", "--collect-only", "-q"],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("tests/security/")]
    per_file: dict[str, int] = {}
    for line in lines:
        name = line.split("::")[0].removeprefix("tests/security/test_security_").removesuffix(".py")
        per_file[name] = per_file.get(name, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(per_file.items())) + f" (total {len(lines)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5,000 files and 10 runs (default 20,000 and 30)")
    parser.add_argument("--files", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write-section", type=Path)
    args = parser.parse_args()
    files = args.files or (5_000 if args.quick else 20_000)
    runs = 10 if args.quick else 30
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="coder-hostsafety-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp) / "repo"
        make_tree(root, files, args.seed)
        scanner = NestedScanner(str(root))
        start = time.perf_counter()
        found = scanner.scan()
        cold = (time.perf_counter() - start) * 1000
        warm = timed(scanner.scan, runs)
        repo = Repo.open(root)
        hardened = timed(lambda: repo.resolve("HEAD"), runs)
        plain = timed(lambda: subprocess.run(["git", "-c", "gc.auto=0", "rev-parse", "HEAD"], cwd=root,
                                             capture_output=True), runs)
        trust_ms = timed(lambda: inspect(root), runs)
    rows = [
        ("protected-set scan, first walk", f"{cold:.1f} ms", f"{len(found)} entries found"),
        ("protected-set scan, each later call", f"{warm:.2f} ms", "cached by (dev, inode, ctime)"),
        ("host git rev-parse, hardened", f"{hardened:.1f} ms", f"plain git: {plain:.1f} ms"),
        ("trust inspect (1 server, config, 40 files)", f"{trust_ms:.1f} ms", ""),
    ]
    tests = security_tests()
    for name, value, note in rows:
        print(f"{name:45} {value:>10}  {note}")
    print(f"adversarial tests: {tests}")
    if args.write_section:
        command = " ".join(["python", "benchmarks/host_safety.py", *sys.argv[1:]])
        lines = ["## Host-side safety: what the guards cost", "",
                 f"`{command}`, {time.strftime('%Y-%m-%d')}, {os.uname().nodename} ({os.cpu_count()} cores, "
                 f"Python {sys.version.split()[0]}), load {load:.1f} at the start; a synthetic repository of "
                 f"{files:,} files (seed {args.seed}), median of {runs} runs.", "",
                 "| what | time | note |", "|---|---|---|"]
        lines += [f"| {n} | {v} | {note} |" for n, v, note in rows]
        lines += ["", f"The goal, zero host effects in every class and mode, is the adversarial suite "
                      f"(`python3 -m pytest tests/security -q`): {tests}.", ""]
        args.write_section.write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
