"""Interactive frontends (issue 32): start-up in tmux, and the app against headless `coder run` on 2,000 tool
calls: wall time, key echo while the run goes on, memory after it, Ctrl+T; aider's start-up when it is installed.

    python benchmarks/tui.py --quick                 # 3 start-ups each, one long run of each
    python benchmarks/tui.py --long-runs 3 --peer-venv /work/peers/aider
    python benchmarks/tui.py --runs 0 --calls 500 --profile /tmp/app   # the long run alone, cProfile of the loop

Definitions (the same for every tool, measured by polling `tmux capture-pane`):
- first screen: the first moment the pane shows the tool's own UI (coder: its input box; aider: its first line);
- input accepts keys (coder): a word typed the moment the first screen is up shows in the input;
- interactive: the moment the tool can take a task (coder: the status bar says `idle`, the session is open;
  aider: its `>` prompt);
- long run: one message, then 2,000 model turns each viewing a 200-line file, then ALL DONE; the app's wall time
  is from Enter to ALL DONE with the status idle, headless's the whole `coder run`; the two alternate;
- key echo: during the app's long run, one key every 0.4 s, the time from sending it until the pane shows it;
  the same typist for 20 keys once the run is over gives the echo of the idle app under the same load;
- CPU: the user and system seconds of the coder process and its commands (the app's from Enter, headless's
  whole run, start-up included): the machine's load stretches wall time, not this;
- memory: resident set size (VmRSS): idle after start-up, the app's after the long run (still open), headless's
  peak;
- Ctrl+T: from the key until the transcript screen shows the end of the session;
- what the load does not stretch (the app runs under benchmarks/loop_probe.py): the CPU time of the app's main
  thread in each pass of its event loop during the run (a key waits behind the pass in progress: the longest and
  the median pass bound the key echo of an unloaded machine), the collector's full collections, and Ctrl+T's CPU
  (the main thread's and the process's, from /proc, from the key until 0.3 s after the end shows).
aider runs offline (a dummy OpenAI endpoint on 127.0.0.1, update checks and analytics off); its start-up
includes its own failed attempt to fetch model metadata, which is what it does without network.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from loop_probe import stretches

ROOT = Path(__file__).resolve().parent.parent
PEER_CANDIDATES = (Path("/work/peers/aider"), Path("/work/peers/aider-tui"))


class Pane:
    def __init__(self, command: str, cwd: Path, env: dict[str, str], width: int = 120, height: int = 40) -> None:
        self.sock = str(Path(tempfile.gettempdir()) / f"tuibench-{uuid.uuid4().hex[:8]}.sock")
        self.started = time.monotonic()
        subprocess.run(["tmux", "-S", self.sock, "new-session", "-d", "-s", "b", "-x", str(width), "-y",
                        str(height), "-c", str(cwd), command], env=env, check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "-S", self.sock, "capture-pane", "-p", "-t", "b"], capture_output=True,
                              text=True).stdout

    def wait(self, predicate, timeout: float = 120.0) -> float:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(self.screen()):
                return time.monotonic() - self.started
            time.sleep(0.01)
        raise TimeoutError(f"timed out; the screen was:\n{self.screen()}")

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "-S", self.sock, "send-keys", "-t", "b", *(["-l"] if literal else []), *keys])

    def pid(self) -> int:
        out = subprocess.run(["tmux", "-S", self.sock, "list-panes", "-F", "#{pane_pid}"], capture_output=True,
                             text=True).stdout.split()
        return int(out[0])

    def rss_mib(self) -> float:
        """The largest resident set among the pane's process tree (the tool, not its shell)."""
        best = 0
        todo = [self.pid()]
        while todo:
            pid = todo.pop()
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        best = max(best, int(line.split()[1]))
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                todo.extend(int(c) for c in children)
            except OSError:
                continue
        return best / 1024

    def coder_pid(self) -> int:
        """The coder process in the pane (`python -m coder`, or coder under the loop probe), not the shell around
        it."""
        todo = [self.pid()]
        while todo:
            pid = todo.pop()
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[1:3] == [b"-m", b"coder"] or argv[1:2] == [str(ROOT / "benchmarks" / "loop_probe.py").encode()]:
                    return pid
                todo.extend(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
            except OSError:
                continue
        raise RuntimeError("no coder process in the pane")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and of its waited-for children (the sandbox's commands)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(base / "gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
    (base / "gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
    (repo / "big.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(70)))
    (repo / "README.md").write_text("# bench\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, env=env, check=True)
    return repo


def bench_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    home = base / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"), GIT_CONFIG_GLOBAL=str(base / "gitconfig"),
               GIT_CONFIG_NOSYSTEM="1", TERM="xterm-256color", CODER_MAX_TURNS="100000")
    return env


def coder_exe() -> str:
    """This tree's coder (the `coder` on PATH may be another checkout's)."""
    return f"env PYTHONPATH={ROOT} {sys.executable} -m coder"


IDLE_KEYS = 20  # keys typed once the run is over, for the echo of an idle app under the same load
KEY_PROBE = "qzq"  # typed the moment the first screen is up; "keys accepted" is when it shows in the input
#: the app's CPU seconds (user and system, from /proc) at the moment its input showed KEY_PROBE, one per start-up:
#: what the load does not stretch
APP_CPU_AT_KEYS: list[float] = []


def startup(command: str, cwd: Path, env: dict[str, str], first, ready,
            probe: bool = False, cpu_at_keys: list[float] | None = None) -> tuple[float, float, float, float]:
    """(first screen, keys accepted, interactive, RSS). With `probe`, KEY_PROBE is typed at the first screen and
    the time it shows is when the input accepts keys (a key typed earlier would only be seen then)."""
    pane = Pane(command + "; sleep 60", cwd, env)
    try:
        t_first = pane.wait(first)
        t_keys = float("nan")
        if probe:
            pane.keys(KEY_PROBE, literal=True)
            t_keys = pane.wait(lambda s: KEY_PROBE in s)
            if cpu_at_keys is not None:
                cpu_at_keys.append(cpu_seconds(pane.coder_pid()))
        t_ready = pane.wait(ready)
        time.sleep(0.5)
        return t_first, t_keys, t_ready, pane.rss_mib()
    finally:
        pane.close()


def coder_startup(repo: Path, env: dict[str, str], script: Path,
                  plain: bool = False) -> tuple[float, float, float, float]:
    cmd = f"{coder_exe()} --model scripted:{script} --permission-mode auto" + (" --plain" if plain else "")
    if plain:
        return startup(cmd, repo, env, lambda s: "/help lists commands" in s, lambda s: "auto>" in s, probe=True)
    return startup(cmd, repo, env, lambda s: "Ask coder" in s, lambda s: "idle │" in s, probe=True,
                   cpu_at_keys=APP_CPU_AT_KEYS)


def aider_startup(aider: Path, repo: Path, env: dict[str, str]) -> tuple[float, float, float, float]:
    cmd = (f"{aider} --model openai/gpt-4o --openai-api-key sk-bench --openai-api-base http://127.0.0.1:9/v1 "
           "--no-check-update --no-show-release-notes --analytics-disable --no-gitignore --yes-always "
           "--no-auto-commits --no-show-model-warnings --no-fancy-input")
    return startup(cmd, repo, env, lambda s: bool(s.strip()),
                   lambda s: any(line.startswith(">") for line in s.splitlines()))


def calls_script(base: Path, calls: int) -> Path:
    """One task of `calls` model turns, each viewing the 200-line file (a fast call with a long output), then
    ALL DONE. The stuck detector is off for both runs (tests/stuck measures it): the same view again and again
    is what it stops."""
    script = base / f"calls{calls}.json"
    turn = {"text": "Reading the file again.", "tool_calls": [{
        "name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "big.py"}}]}
    handoff = {"when": "Your context is about to be compacted", "repeat": True,  # the compressor's request
               "text": "Handoff: the task is to view big.py many times; keep going."}
    script.write_text(json.dumps({"turns": [turn] * calls + [{"text": "ALL DONE."}, handoff]}))
    return script


def headless_run(repo: Path, env: dict[str, str], script: Path) -> dict[str, float]:
    """`coder run` on the script: wall seconds, CPU seconds and the peak RSS of the process (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}",
                             "--permission-mode", "auto", "go"], cwd=repo, env={**env, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=3600)
    wall = time.monotonic() - started
    if "ALL DONE" not in out:
        raise RuntimeError(f"headless run did not finish: {err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall": wall, "cpu": cpu, "rss": after.ru_maxrss / 1024}


class Typist(threading.Thread):
    """Types one key every `every` seconds while the run goes on and measures each key's echo: the time from
    sending it to the pane showing it in the input (the pane is polled every 5 ms only while a key is awaited).
    The input is cleared with Ctrl+U every 40 keys, so the typed text stays on one line."""

    def __init__(self, pane: Pane, every: float = 0.4) -> None:
        super().__init__(daemon=True)
        self.pane, self.every = pane, every
        self.stop = threading.Event()
        self.echoes: list[float] = []

    def run(self) -> None:
        typed = ""
        while not self.stop.wait(self.every):
            key = "kx"[len(typed) % 2]
            typed += key
            sent = time.monotonic()
            self.pane.keys(key, literal=True)
            end = sent + 30
            while time.monotonic() < end and not any(line.strip().startswith(typed)
                                                     for line in self.pane.screen().splitlines()):
                time.sleep(0.005)
            self.echoes.append(time.monotonic() - sent)
            if len(typed) >= 40:
                self.pane.keys("C-u")
                typed = ""


def thread_cpu(pid: int, tid: int | None = None) -> float:
    """User and system CPU seconds of one thread of a process (the app's main thread: tid = pid)."""
    fields = Path(f"/proc/{pid}/task/{tid or pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def app_run(repo: Path, env: dict[str, str], script: Path, probe_dir: Path,
            profile: Path | None = None) -> dict[str, Any]:
    """The app on the script in tmux, a typist typing all along: wall seconds until ALL DONE, key echoes during
    the run, RSS after it, the time Ctrl+T takes to show the end of the whole session; and, from the loop probe
    (benchmarks/loop_probe.py), the CPU seconds of every pass of the app's event loop during the run and during
    Ctrl+T, and the CPU Ctrl+T cost (the app's main thread, and the whole process: its reader is a thread)."""
    loop_file = probe_dir / f"loop-{uuid.uuid4().hex[:8]}.json"
    probe = f"{ROOT / 'benchmarks' / 'loop_probe.py'} {loop_file}" + (f" --profile {profile}" if profile else "")
    command = f"env PYTHONPATH={ROOT} {sys.executable} {probe} -- --model scripted:{script} --permission-mode auto"
    pane = Pane(command + "; sleep 600", repo, env)
    try:
        pane.wait(lambda s: "idle │" in s)
        pid = pane.coder_pid()
        pane.keys("go", literal=True)
        cpu_before = cpu_seconds(pid)
        started = time.monotonic()
        pane.keys("Enter")
        typist = Typist(pane)
        typist.start()
        pane.wait(lambda s: "ALL DONE" in s and "idle │" in s, timeout=3600)
        ended = time.monotonic()
        wall = ended - started
        cpu = cpu_seconds(pid) - cpu_before
        typist.stop.set()
        typist.join()
        pane.keys("C-u")
        time.sleep(1.0)
        rss = pane.rss_mib()
        idle = Typist(pane)  # the same keys with the run over: what the machine's load and tmux cost alone
        idle.start()
        time.sleep(IDLE_KEYS * idle.every + 0.2)
        idle.stop.set()
        idle.join()
        pane.keys("C-u")
        time.sleep(0.5)
        main_before, all_before = thread_cpu(pid), cpu_seconds(pid)
        opened = time.monotonic()
        pane.keys("C-t")
        pane.wait(lambda s: "The whole session" in s and "ALL DONE" in s, timeout=120)
        shown = time.monotonic()
        ctrl_t = shown - opened
        time.sleep(0.3)  # a frame or two after it showed: the CPU counters are read in clock ticks
        ctrl_t_main, ctrl_t_all = thread_cpu(pid) - main_before, cpu_seconds(pid) - all_before
        pane.keys("Escape")
        time.sleep(0.5)
        pane.keys("C-c")
        time.sleep(0.3)
        pane.keys("C-c")
        end = time.monotonic() + 60
        while not loop_file.exists() and time.monotonic() < end:  # written as coder exits
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        pane.close()
    loop = json.loads(loop_file.read_text())
    return {"wall": wall, "cpu": cpu, "echo": typist.echoes, "echo_idle": idle.echoes, "rss": rss, "ctrl_t": ctrl_t,
            "ctrl_t_main": ctrl_t_main, "ctrl_t_all": ctrl_t_all,
            "passes": stretches(loop, started, ended), "ctrl_t_passes": stretches(loop, opened, shown + 0.3),
            "gc": [(gen, cpu, freed, main) for when, gen, _, cpu, main, freed in loop["gc"] if started <= when < ended]}


def find_peer(given: str | None) -> Path | None:
    for venv in ([Path(given)] if given else list(PEER_CANDIDATES)):
        exe = venv / "bin" / "aider"
        if exe.exists():
            return exe
    return None


def med(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 start-ups each and one long run each (default 10, 3)")
    parser.add_argument("--runs", type=int, help="start-ups of each tool")
    parser.add_argument("--long-runs", type=int, help="long runs of each (app, headless), alternating")
    parser.add_argument("--calls", type=int, default=2000, help="tool calls of the long run")
    parser.add_argument("--peer-venv", help="aider's venv (default: /work/peers/aider, then /work/peers/aider-tui)")
    parser.add_argument("--profile", type=Path, help="write cProfile of the app's main thread to PROFILE-N.prof")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "tui.md")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is required: apt-get install tmux", file=sys.stderr)
        return 2
    runs = args.runs if args.runs is not None else (3 if args.quick else 10)
    long_runs = args.long_runs if args.long_runs is not None else (1 if args.quick else 3)
    base = Path(tempfile.mkdtemp(prefix="tuibench-"))
    repo = make_repo(base)
    env = bench_env(base)
    config = Path(env["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    # compaction as before issue 33 (half the budget): at its 10k-token default this workload (a 2 kB output every
    # turn) compacts every few turns, each compaction reading the whole history, and the engine, not the frontend,
    # is what 2,000 calls measure (headless took over 20 minutes on the loaded machine)
    config.write_text("[stuck]\nenabled = false\n\n[context]\ncompact_at = 0.5\n")
    hello = base / "hello.json"
    hello.write_text(json.dumps({"turns": [{"text": "hello"}]}))
    load_before = os.getloadavg()
    rows: dict[str, list[tuple[float, float, float, float]]] = {"coder (Textual app)": [], "coder --plain": []}
    aider = find_peer(args.peer_venv)
    if aider is not None:
        rows["aider"] = []
    for i in range(runs):
        rows["coder (Textual app)"].append(coder_startup(repo, env, hello))
        rows["coder --plain"].append(coder_startup(repo, env, hello, plain=True))
        if aider is not None:
            rows["aider"].append(aider_startup(aider, repo, env))
        print(f"start-up {i + 1}/{runs}: " + ", ".join(f"{k} {v[-1][1]:.2f}s" for k, v in rows.items()),
              file=sys.stderr)
    script = calls_script(base, args.calls)
    headless: list[dict[str, float]] = []
    app: list[dict[str, Any]] = []
    for i in range(long_runs):  # alternating, so the machine's load falls on both alike
        headless.append(headless_run(repo, env, script))
        profile = args.profile.with_name(f"{args.profile.name}-{i + 1}.prof") if args.profile else None
        app.append(app_run(repo, env, script, base, profile))
        print(f"long run {i + 1}/{long_runs}: headless {headless[-1]['wall']:.1f}s ({headless[-1]['cpu']:.1f}s CPU), "
              f"app {app[-1]['wall']:.1f}s ({app[-1]['cpu']:.1f}s CPU), "
              f"{app[-1]['rss']:.0f} MiB, Ctrl+T {app[-1]['ctrl_t']:.2f}s", file=sys.stderr)
    text = report(args, runs, rows, headless, app, load_before, os.getloadavg(), aider is not None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    shutil.rmtree(base, ignore_errors=True)
    return 0


def report(args: argparse.Namespace, runs: int, rows: dict[str, list[tuple[float, float, float, float]]],
           headless: list[dict[str, float]], app: list[dict[str, Any]], load_before: tuple[float, float, float],
           load_after: tuple[float, float, float], peer: bool) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/tui.py" + (" --quick" if args.quick else "")
    lines = [
        "## Interactive frontends (benchmarks/tui.py)", "",
        f"Command: `{cmd}`; date {now}; machine: 2 cores, shared with other engineers' work: load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after (figures are noisy; the app and headless runs "
        "alternate, so both see the same load).", "",
        "| tool | first screen (s), median (best) | input accepts keys (s), median (best) | "
        "interactive (s), median (best) | RSS idle (MiB) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, values in rows.items():
        if not values:  # --runs 0: the long runs alone
            continue
        firsts, keys, readies = [v[0] for v in values], [v[1] for v in values], [v[2] for v in values]
        accepted = f"{med(keys)} ({min(keys):.2f})" if keys and keys[0] == keys[0] else "n/a"  # nan: not probed
        lines.append(f"| {name} | {med(firsts)} ({min(firsts):.2f}) | {accepted} | {med(readies)} "
                     f"({min(readies):.2f}) | {med([v[3] for v in values])} |")
    if not peer:
        lines.append("| aider | not available | | | |")
    keys_app = statistics.median([v[1] for v in rows["coder (Textual app)"]] or [float("nan")])
    if not app:  # --long-runs 0: the start-ups alone
        return "\n".join(lines) + "\n"
    echoes = sorted(e for a in app for e in a["echo"])
    idle = sorted(e for a in app for e in a["echo_idle"])
    ratio = statistics.median(a["wall"] / h["wall"] for a, h in zip(app, headless, strict=True))
    rss = max(a["rss"] for a in app)
    ctrl_t = statistics.median(a["ctrl_t"] for a in app)
    goal = {True: "met", False: "not met"}
    cpu_keys = f"{statistics.median(APP_CPU_AT_KEYS):.2f}" if APP_CPU_AT_KEYS else "n/a"
    lines += ["", f"Launch to a typeable input: {keys_app:.2f} s median (goal under 0.5 s: {goal[keys_app < 0.5]}); "
              f"the app's CPU by then: {cpu_keys} s median (user and system time of the process and its commands, "
              "the thread that loads the engine after the first paint included: what the load does not stretch).",
              "", f"**{args.calls:,} tool calls** (one task of {args.calls:,} model turns, each viewing a 200-line "
              "file; the stuck detector off in both, compaction at half the budget), the app in tmux with a typist "
              f"pressing a key every 0.4 s all through the run, and `coder run` headless, alternating, {len(app)} "
              "time(s):", "",
              "| run | headless wall (s) | app wall (s) | app / headless | headless CPU (s) | app CPU (s) | "
              "app / headless CPU | app RSS after (MiB) | headless peak RSS (MiB) | Ctrl+T (s) |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for i, (a, h) in enumerate(zip(app, headless, strict=True), 1):
        lines.append(f"| {i} | {h['wall']:.1f} | {a['wall']:.1f} | {a['wall'] / h['wall']:.2f} | {h['cpu']:.1f} | "
                     f"{a['cpu']:.1f} | {a['cpu'] / h['cpu']:.2f} | {a['rss']:.0f} | {h['rss']:.0f} | "
                     f"{a['ctrl_t']:.2f} |")
    cpu_ratio = statistics.median(a["cpu"] / h["cpu"] for a, h in zip(app, headless, strict=True))
    lines += ["", f"- app within 1.5x of headless: median ratio {ratio:.2f} in wall time ({goal[ratio <= 1.5]}), "
              f"{cpu_ratio:.2f} in CPU time (the process's user and system seconds with its commands': what the "
              "machine's load does not stretch);",
              f"- key echo during the run: median {1000 * statistics.median(echoes):.0f} ms, worst "
              f"{1000 * echoes[-1]:.0f} ms over {len(echoes)} keys (goal under 50 ms median and 150 ms worst: "
              f"{goal[statistics.median(echoes) < 0.05 and echoes[-1] < 0.15]}); a key's echo is measured from "
              "`tmux send-keys` until `capture-pane` shows it, which itself takes a few ms; the same typist on the "
              f"app once the run is over (idle, the same load): median {1000 * statistics.median(idle):.0f} ms, "
              f"worst {1000 * idle[-1]:.0f} ms over {len(idle)} keys;",
              f"- memory after {args.calls:,} calls: {rss:.0f} MiB (goal under 150 MB: {goal[rss * 1.048576 < 150]});",
              f"- Ctrl+T until the end of the whole session shows: {ctrl_t:.2f} s median (goal under 0.3 s: "
              f"{goal[ctrl_t < 0.3]}).", ""]
    return "\n".join(lines + loop_report(app))


def weighted_median(values: list[float]) -> float:
    """The pass a moment of busy time falls in, at the median: half the loop's busy time is in passes no longer
    than this (a key arriving while the loop is busy lands in a pass this long or shorter half the time)."""
    total, seen = sum(values), 0.0
    for v in sorted(values):
        seen += v
        if seen >= total / 2:
            return v
    return 0.0


def loop_report(app: list[dict[str, Any]]) -> list[str]:
    """The figures the machine's load does not stretch: the CPU of each pass of the app's event loop while the
    agent runs (a key waits behind the pass in progress) and what Ctrl+T costs in CPU."""
    lines = ["What the load does not stretch (the loop probe, `benchmarks/loop_probe.py`: the app's main thread's "
             "CPU time for each pass of its event loop; the key echo of an unloaded machine is about the rest "
             "of the pass a key lands in plus the pass that echoes it):", "",
             "| run | passes during the run | loop busy (CPU s / wall s) | pass, median of busy time (ms) | "
             "p99 pass (ms) | longest pass (ms) | passes > 50 ms | passes > 150 ms | Ctrl+T CPU, main thread (s) | "
             "Ctrl+T CPU, process (s) | Ctrl+T longest pass (ms) | full collections (gc): count, longest (CPU ms) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for i, a in enumerate(app, 1):
        passes = sorted(a["passes"])
        full = [secs for gen, secs, _, _ in a["gc"] if gen == 2]
        freed = max((n for gen, _, n, _ in a["gc"] if gen == 2), default=0)
        engine = sum(not main for gen, _, _, main in a["gc"] if gen == 2)  # it holds the GIL: the loop waits too
        p99 = passes[int(len(passes) * 0.99)] if passes else 0.0
        lines.append(f"| {i} | {len(passes):,} | {sum(passes):.1f} / {a['wall']:.1f} | "
                     f"{1000 * weighted_median(passes):.1f} | {1000 * p99:.1f} | "
                     f"{1000 * max(passes, default=0):.1f} | {sum(p > 0.05 for p in passes)} | "
                     f"{sum(p > 0.15 for p in passes)} | {a['ctrl_t_main']:.2f} | {a['ctrl_t_all']:.2f} | "
                     f"{1000 * max(a['ctrl_t_passes'], default=0):.0f} | {len(full)}, "
                     f"{1000 * max(full, default=0):.0f} (freeing up to {freed:,} objects; {engine} outside the "
                     "app's thread) |")
    return [*lines, ""]


if __name__ == "__main__":
    raise SystemExit(main())
