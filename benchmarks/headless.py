"""A long headless session: `coder run` through a scripted model that makes N tool calls (default 1,000), its
CPU time and wall time, against a second checkout in the same runs (issue 48: "a 1,000-call headless session
within 5% of today").

Usage: python benchmarks/headless.py [--quick] [--calls N] [--runs N] [--against CHECKOUT] [--json]

The calls are what a session makes most: the shell (`echo`), the editor's view, code search, and an edit that
inserts a line in a file; four calls a turn, each different (the stuck detector is off: it would stop a run
that repeats itself, which is its job, not what is measured). A fresh temp HOME and a fresh git repository each
run; checkpoints on, as a user has them. The figure is the CPU time of the coder process and all its children
(`os.wait4`'s rusage: user + system), which a loaded machine stretches far less than wall time; both are shown.
`--against` names another checkout (the repository's root): its `coder` is run by `python -m coder` with that
checkout first on the import path, interleaved run by run with this one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SECTION = HERE / "benchmarks" / "sections" / "headless.md"


def script(calls: int) -> dict[str, object]:
    """Turns of four calls each (the last turn shorter), then a final answer."""
    kinds = [
        lambda i: {"name": "bash", "input": {"command": f"echo call {i}"}},
        lambda i: {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "src/app.py"}},
        lambda i: {"name": "code_search",
                   "input": {"query_type": ("definition", "text")[i % 2], "query": f"helper_{i % 20}"}},
        lambda i: {"name": "str_replace_based_edit_tool",
                   "input": {"command": "insert", "path": "notes.txt", "insert_line": 0, "new_str": f"line {i}"}},
    ]
    turns: list[dict[str, object]] = []
    for start in range(0, calls, 4):
        batch = [kinds[(i - start) % 4](i) for i in range(start, min(start + 4, calls))]
        turns.append({"text": f"step {start // 4}", "tool_calls": batch})
    turns.append({"text": "done"})
    # the compactions' summaries (a long session compacts every few dozen calls)
    turns.append({"when": "about to be compacted", "repeat": True,
                  "text": "## Intent\nDo the steps.\n## Plan and next\n1. go on with the next step"})
    return {"turns": turns}


def workspace(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    helpers = "\n\n".join(f"def helper_{n}(x):\n    return x + {n}\n" for n in range(20))
    (repo / "src" / "app.py").write_text(helpers)
    (repo / "notes.txt").write_text("line 0\n")
    env = {**os.environ, "HOME": str(root / "home"), "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start"]):
        subprocess.run(argv, cwd=repo, env=env, check=True)
    return repo


def run_once(checkout: Path, script_path: Path, calls: int) -> tuple[float, float]:
    """(CPU seconds of coder and its children, wall seconds) of one session in a fresh HOME and repository."""
    with tempfile.TemporaryDirectory(prefix="coder-headless-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        repo = workspace(root)
        config = root / "home" / ".config" / "coder"
        config.mkdir(parents=True)
        (config / "config.toml").write_text("[stuck]\nenabled = false\n")
        env = {**os.environ, "HOME": str(root / "home"), "PYTHONPATH": str(checkout),
               "XDG_CONFIG_HOME": str(root / "home" / ".config"), "XDG_STATE_HOME": str(root / "home" / ".state"),
               "XDG_CACHE_HOME": str(root / "home" / ".cache"), "XDG_DATA_HOME": str(root / "home" / ".data"),
               "GIT_CONFIG_NOSYSTEM": "1"}
        argv = [sys.executable, "-m", "coder", "run", "--model", f"scripted:{script_path}", "--permission-mode",
                "auto", "--max-turns", str(calls + 10), "--output-format", "stream-json", "do the steps"]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate()
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"headless.py: {checkout}: exit {proc.returncode}\n{err.decode()[-2000:]}")
        events = [json.loads(line) for line in out.splitlines() if line.strip()]
        finished = [e for e in events if e["type"] == "tool_call_finished"]
        failed = [e for e in finished if e["is_error"]]
        if failed or events[-1].get("exit_reason") != "done":
            raise SystemExit(f"headless.py: {checkout}: {len(failed)} calls of {len(finished)} failed:"
                             f" {failed[:1]} {events[-1]}")
        RAN[checkout] = len(finished)
        return _children_cpu(), wall


_LAST = [0.0]
#: checkout -> the calls its last session ran
RAN: dict[Path, int] = {}


def _children_cpu() -> float:
    """CPU seconds the children reaped since the previous call (RUSAGE_CHILDREN only grows)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _LAST[0] = total - _LAST[0], total
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 runs each instead of 7")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--against", type=Path, help="another checkout, measured in the same runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    checkouts = {"this checkout": HERE}
    if args.against:
        checkouts["against"] = args.against.resolve()
    with tempfile.TemporaryDirectory(prefix="coder-headless-script-") as tmp:
        script_path = Path(tmp) / "calls.json"
        script_path.write_text(json.dumps(script(args.calls)))
        _children_cpu()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
        for _ in range(runs):
            for name, checkout in checkouts.items():
                samples[name].append(run_once(checkout, script_path, args.calls))
    if len(set(RAN.values())) != 1:
        raise SystemExit(f"headless.py: the checkouts ran different sessions: {RAN}")
    load = os.getloadavg()[0]
    results = {name: {"cpu_s": round(statistics.median(c for c, _ in got), 2),
                      "cpu_min_s": round(min(c for c, _ in got), 2),
                      "wall_s": round(statistics.median(w for _, w in got), 2)} for name, got in samples.items()}
    if args.json:
        print(json.dumps(results))
        return 0
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    against = " --against CHECKOUT" if args.against else ""
    lines = ["## Headless session (issue 48)", "",
             f"Command: `python benchmarks/headless.py --calls {args.calls} --runs {runs}{against}` · {when}"
             f" · {os.cpu_count()} cores, load average {load:.1f} at the end · Python {sys.version.split()[0]}", "",
             f"A scripted `coder run` of {args.calls} tool calls (shell, view, code search, a line inserted; four a"
             f" turn), checkpoints on, median of the runs; CPU is coder's and its children's."
             f" {next(iter(RAN.values()))} calls ran, with the compactions such a session makes.", "",
             "| checkout | CPU s (median) | CPU s (min) | wall s (median) |", "| --- | ---: | ---: | ---: |"]
    for name, got in results.items():
        lines.append(f"| {name} | {got['cpu_s']:.2f} | {got['cpu_min_s']:.2f} | {got['wall_s']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    SECTION.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
