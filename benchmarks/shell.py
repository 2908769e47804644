"""Per-call overhead of a shell command: coder's persistent sandboxed shell against a fresh process per call.

Usage: python benchmarks/shell.py [--quick] [--calls N] [--peer-venv PATH] [--json] [--write-section FILE]

Cases, all in the same run, each timing `true` and `echo hi` (median wall time per call, after warm-up):
- coder persistent shell, sandboxed (bubblewrap): `PersistentShell.run`, what the bash tool does per call;
- coder persistent shell, unsandboxed (`--no-sandbox`);
- mini-swe-agent's way: a fresh `subprocess.run(cmd, shell=True, ...)` per call, measured in this interpreter
  and, when its venv exists (`--peer-venv`, default /work/peers/mini-swe-agent), through mini-swe-agent's own
  `LocalEnvironment.execute` in that venv;
- a fresh bwrap per call with coder's profile (raw `subprocess.run` of bwrap), and coder's one-shot API
  `run_sandboxed` (adds cgroup setup and output handling).
Goal: under 5 ms per call in coder's persistent sandboxed shell.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coder.sandbox.env import sandbox_env
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig, bwrap_args
from coder.sandbox.shell import PersistentShell

COMMANDS = ("true", "echo hi")
PEER_SCRIPT = r"""
import json, statistics, sys, time
from minisweagent.environments.local import LocalEnvironment
env = LocalEnvironment(cwd=sys.argv[1])
calls = int(sys.argv[2])
out = {}
for cmd in ("true", "echo hi"):
    for _ in range(5):
        env.execute({"command": cmd})
    samples = []
    for _ in range(calls):
        t = time.perf_counter(); r = env.execute({"command": cmd}); samples.append(time.perf_counter() - t)
        assert r["returncode"] == 0
    out[cmd] = statistics.median(samples) * 1000
print(json.dumps(out))
"""


def median_ms(fn: Callable[[], object], calls: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def persistent(workspace: Path, sandboxed: bool, calls: int) -> dict[str, float]:
    shell = PersistentShell(workspace, SandboxConfig(enabled=sandboxed), sandboxed=sandboxed)
    shell.start()
    try:
        results = {}
        for cmd in COMMANDS:
            def call(cmd: str = cmd) -> None:
                r = shell.run(cmd, 10)
                assert r.exit_code == 0 and r.output == ("hi\n" if cmd == "echo hi" else ""), r
            results[cmd] = median_ms(call, calls)
        return results
    finally:
        shell.close()


def bash_tool(workspace: Path, state: Path, calls: int) -> dict[str, float]:
    """The whole tool path a session pays: argument checks, config, the shell, cleaning and clipping."""
    import threading

    from coder.tools.base import ToolContext
    from coder.tools.bash.tool import BashTool
    from coder.tools.registry import load_contracts

    tool = BashTool(load_contracts()["bash"])
    ctx = ToolContext(workspace, workspace, "bench", threading.Event(), state, {"sandbox": {}})
    try:
        return {cmd: median_ms(lambda cmd=cmd: tool.run(tool.parse({"command": cmd}), ctx), calls) for cmd in COMMANDS}
    finally:
        tool.close()


def fresh_subprocess(workspace: Path, calls: int) -> dict[str, float]:
    """What mini-swe-agent's LocalEnvironment does per call."""
    env = dict(os.environ)
    return {cmd: median_ms(lambda cmd=cmd: subprocess.run(cmd, shell=True, text=True, cwd=workspace, env=env,
                                                          timeout=10, encoding="utf-8", errors="replace",
                                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT), calls)
            for cmd in COMMANDS}


def fresh_bwrap(workspace: Path, calls: int) -> dict[str, float]:
    cfg = SandboxConfig()
    argv = [shutil.which("bwrap") or "bwrap", *bwrap_args(workspace, cfg, None, os.environ.get("PATH", "")), "--"]
    env = sandbox_env(os.environ, os.environ.get("HOME", "/root"))
    return {cmd: median_ms(lambda cmd=cmd: subprocess.run([*argv, "/bin/bash", "-c", cmd], env=env, cwd=workspace,
                                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                          check=True), calls)
            for cmd in COMMANDS}


def one_shot_api(workspace: Path, calls: int) -> dict[str, float]:
    return {cmd: median_ms(lambda cmd=cmd: run_sandboxed(cmd, workspace, {}, 10), calls) for cmd in COMMANDS}


def peer(venv: Path, workspace: Path, calls: int) -> dict[str, float] | str:
    python = venv / "bin" / "python"
    if not python.exists():
        return (f"not available: no venv at {venv} (create it with `python -m venv {venv} && "
                f"{venv}/bin/pip install mini-swe-agent`)")
    out = subprocess.run([str(python), "-c", PEER_SCRIPT, str(workspace), str(calls)], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "MSWEA_SILENT_STARTUP": "1"})
    if out.returncode != 0:
        return f"not available: the peer script failed: {out.stderr.strip().splitlines()[-1:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="50 calls per case instead of 300")
    parser.add_argument("--calls", type=int)
    parser.add_argument("--peer-venv", type=Path, default=Path("/work/peers/mini-swe-agent"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write-section", type=Path, help="write a markdown results section to this file")
    args = parser.parse_args()
    calls = args.calls or (50 if args.quick else 300)
    if shutil.which("bwrap") is None:
        sys.exit("shell.py: bubblewrap is missing: apt-get install bubblewrap")
    with tempfile.TemporaryDirectory(prefix="coder-bench-") as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        rows: dict[str, dict[str, float] | str] = {
            "coder persistent shell, sandboxed (bwrap)": persistent(workspace, True, calls),
            "coder bash tool (BashTool.run: whole tool path, sandboxed)": bash_tool(workspace, Path(tmp) / "st",
                                                                                    calls),
            "coder persistent shell, --no-sandbox": persistent(workspace, False, calls),
            "fresh subprocess.run(shell=True) per call (mini-swe-agent's way, this interpreter)":
                fresh_subprocess(workspace, calls),
            "mini-swe-agent LocalEnvironment.execute (its own venv)": peer(args.peer_venv, workspace, calls),
            "fresh bwrap per call (coder's profile, raw subprocess.run)": fresh_bwrap(workspace, calls),
            "coder run_sandboxed per call (one-shot API: bwrap + cgroups)": one_shot_api(workspace, calls),
        }
    if args.json:
        print(json.dumps({"calls": calls, "results": rows}, indent=2))
    else:
        print(f"calls per case: {calls} (median ms per call)")
        for name, value in rows.items():
            if isinstance(value, str):
                print(f"  {name}: {value}")
            else:
                print(f"  {name}: " + ", ".join(f"{cmd!r} {ms:.2f} ms" for cmd, ms in value.items()))
    if args.write_section:
        write_section(args.write_section, rows, calls, " ".join(["python", "benchmarks/shell.py", *sys.argv[1:]]))
    ours = rows["coder persistent shell, sandboxed (bwrap)"]
    return 0 if isinstance(ours, dict) and max(ours.values()) < 5.0 else 1


def write_section(path: Path, rows: dict[str, dict[str, float] | str], calls: int, command: str) -> None:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Shell: per-call overhead (issue 3)", "",
        f"Command: `{command}` · date: {now} · machine: 2 cores, 24 GiB, loaded by parallel work "
        f"(figures are noisy; load average {os.getloadavg()[0]:.1f} at the end) · {calls} calls per case, median "
        "wall time per call. Peer: mini-swe-agent from its own venv (a small process; the same `subprocess.run` "
        "costs more in this benchmark's process, which has coder and pexpect loaded).", "",
        "| case | `true` (ms) | `echo hi` (ms) |", "|---|---:|---:|",
    ]
    for name, value in rows.items():
        if isinstance(value, str):
            lines.append(f"| {name} | {value} | |")
        else:
            lines.append(f"| {name} | {value['true']:.2f} | {value['echo hi']:.2f} |")
    lines += ["", "Goal: under 5 ms per call in coder's persistent sandboxed shell. The persistent shell pays "
              "no process start per call: the host writes the command to a file the sandbox reads, sends one "
              "line to bash through the pty and reads until the end marker; `true` and `echo` are builtins, so "
              "no fork happens at all (a command that is a program, e.g. `/bin/true`, adds its fork+exec, about 0.4 ms "
              "here). The command file lives on tmpfs (/dev/shm) and is rewritten in place: rewriting it with "
              "open/truncate/close on ext4 cost about 4 ms per call (ext4 flushes a truncated-and-rewritten "
              "file on close), which is what the first version of this benchmark measured.", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
