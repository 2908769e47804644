"""Wall time of N independent subtasks run by subagents in parallel against one after another (issue 36).

Usage: python benchmarks/agents.py [--quick] [--tasks N] [--delay SECONDS] [--rounds R] [--write-section FILE]

Each run is a real `coder run` (auto mode, the real bubblewrap sandbox) against the fake server over HTTP with
the real Anthropic SDK, every model request delayed by `--delay` seconds (the wait for a real model's answer). A
subtask is one agent: a model turn, a shell command that does some CPU work and writes a file of its own, a
second model turn with its report. The parent first loads `task` and `subagents` (tools on demand: one request
in both ways), then hands out N subtasks:
- one after another: N `task` calls in one answer, each run to its end in the parent's tree (as before issue 36);
- in parallel: N `task` calls with `background: true` in one answer, then one answer that waits for each and
  merges each patch (the agents write in their own worktrees, under the default cap of 4), then the last answer.
Both end with the same N files in the repository (checked). The runs alternate (serial, parallel, serial, ...) so
a change in the machine's load hits both; the figures are medians over the rounds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coder_testkit.fake_server import FakeServer  # noqa: E402

#: the subtask's command: ~0.3 s of CPU in Python, then a file whose name no other subtask uses
WORK = ('python3 -c "print(sum(i * i for i in range(2_000_000)))" > "out_$(date +%s%N)_$RANDOM.txt" && '
        'echo SUBTASK-STEP-DONE')


def script(tasks: int, parallel: bool) -> dict:
    """The fake server's script: the parent's main sequence, and the agents' turns keyed by what they last read."""
    agent_turns = [
        {"when": "BENCH-SUBTASK", "repeat": True, "text": "Working on it.",
         "tool_calls": [{"name": "bash", "input": {"command": WORK}}]},
        {"when": "SUBTASK-STEP-DONE", "repeat": True, "text": "REPORT: the file is written."},
    ]
    calls = [{"name": "task", "input": {"agent": "bench", "description": f"subtask {i}", "background": parallel,
                                        "prompt": f"BENCH-SUBTASK {i}: write your file."}} for i in range(1, tasks + 1)]
    load = {"tool_calls": [{"name": "tool_search", "input": {"query": "select:task,subagents"}}]}  # on demand
    main = [load, {"text": "Handing out the subtasks.", "tool_calls": calls}]
    if parallel:
        idents = [f"a{i}" for i in range(1, tasks + 1)]
        main.append({"text": "Collecting.", "tool_calls": [
            *({"name": "subagents", "input": {"action": "wait", "id": i, "timeout": 600}} for i in idents),
            *({"name": "subagents", "input": {"action": "merge", "id": i}} for i in idents)]})
    main.append({"text": "All subtasks done."})
    return {"turns": main + agent_turns}


def one_run(tasks: int, parallel: bool, delay: float, home: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="coder-bench-agents-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(home / ".cache"),
               "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
               "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "bench"}
        for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        with FakeServer(script(tasks, parallel), faults=[f"delay={delay}@*"]) as server:
            env["ANTHROPIC_BASE_URL"] = server.base_url
            before = os.times()
            started = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                                     "--permission-mode", "auto", "--model", "anthropic:claude-sonnet-4-6",
                                     "hand out the subtasks"], cwd=repo, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            first_message = answered = None
            result: dict = {}
            assert proc.stdout is not None
            for line in proc.stdout:
                event = json.loads(line)
                if event["type"] == "user_message" and first_message is None and "agent_id" not in event:
                    first_message = time.monotonic()
                elif event["type"] == "result":
                    result, answered = event, time.monotonic()
            ended = time.monotonic()
            stderr = proc.stderr.read() if proc.stderr is not None else ""
            proc.wait(60)
            after = os.times()
            requests = len(server.requests)
        if proc.returncode != 0 or first_message is None or answered is None:
            raise SystemExit(f"coder run failed ({proc.returncode}): {stderr[-2000:]}")
        made = sorted(p.name for p in repo.glob("out_*.txt"))
        if len(made) != tasks or result.get("final_text") != "All subtasks done.":
            raise SystemExit(f"the run did not do the work: {len(made)} files, {result.get('final_text')!r}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall": ended - started, "work": answered - first_message, "cpu": cpu, "requests": requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 subtasks, 3 rounds")
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds each model request waits (default 1)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--write-section", type=Path, default=None)
    args = parser.parse_args()
    tasks = args.tasks or 4
    rounds = args.rounds or (3 if args.quick else 5)
    with tempfile.TemporaryDirectory(prefix="coder-bench-home-") as tmp:
        home = Path(tmp)
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        agents = home / ".config" / "coder" / "agents"
        agents.mkdir(parents=True)
        (agents / "bench.md").write_text("---\nname: bench\ndescription: one subtask\ntools: [bash]\n"
                                         "permission_mode: auto\nmax_turns: 5\n---\nDo the subtask you are given.\n")
        runs: dict[str, list[dict]] = {"one after another": [], "in parallel": []}
        for n in range(rounds):
            for name, parallel in (("one after another", False), ("in parallel", True)):
                figures = one_run(tasks, parallel, args.delay, home)
                runs[name].append(figures)
                print(f"round {n + 1} {name}: {figures['wall']:.2f} s wall ({figures['work']:.2f} s from the task), "
                      f"{figures['cpu']:.2f} s CPU, "
                      f"{figures['requests']} requests", flush=True)
    load = os.getloadavg()[0]
    serial = statistics.median(r["work"] for r in runs["one after another"])
    parallel = statistics.median(r["work"] for r in runs["in parallel"])
    lines = ["## Agents: N subtasks in parallel against one after another (issue 36)", "",
             f"Command: `python benchmarks/agents.py{' --quick' if args.quick else ''}"
             f"{f' --tasks {tasks}' if args.tasks else ''} --write-section benchmarks/sections/agents.md` · date: "
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC · machine: {os.cpu_count()} cores, shared "
             f"with other work (load average {load:.1f} at the end) · {tasks} subtasks, every model request delayed "
             f"{args.delay:g} s by the fake server, {rounds} rounds alternating, medians.", "",
             "| how | wall time from the task (s) | whole `coder run` (s) | CPU time (s) | model requests |",
             "|---|---:|---:|---:|---:|"]
    for name, figures in runs.items():
        lines.append(f"| {name} | {statistics.median(r['work'] for r in figures):.2f} | "
                     f"{statistics.median(r['wall'] for r in figures):.2f} | "
                     f"{statistics.median(r['cpu'] for r in figures):.2f} | {figures[0]['requests']} |")
    lines += ["", "Wall time from the task: from the parent's first message to its result line (the process start and "
              "exit, the same in both and long on a loaded machine, left out; the whole run is the next column).",
              "", f"In parallel took {parallel / serial:.2f}x the wall time of one after another "
              f"({serial / parallel:.1f}x faster). Each subtask is two model requests and one sandboxed command with "
              "~0.3 s of CPU; in parallel each agent also gets a worktree (made from the parent's tree, read back "
              "and merged: the CPU column shows what that costs), and the parent one more request (wait and merge). "
              "The parallel figure is bounded below by one subtask's chain (two delayed requests, the command) plus "
              "the parent's four requests; the CPU work shares the 2 cores."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_section:
        args.write_section.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
