"""Run `python -m coder` with the app's event loop watched (benchmarks/tui.py): how long each pass of the loop
keeps the app's thread busy, in that thread's CPU time, which the machine's load does not stretch.

    python benchmarks/loop_probe.py OUT.json [--profile OUT.prof] -- coder's arguments...

A key typed into the app is read by Textual's input thread and handed to the loop; it waits for the pass the loop
is in to end (a drain, a frame, another key), then its own pass echoes it. So the longest and the median pass
while the agent runs bound the key echo on an unloaded machine. Every pass of the main thread's loop is recorded
as (monotonic start, CPU seconds) and written to OUT.json when coder exits; the benchmark picks the passes of a
window (the run, Ctrl+T) by their start (CLOCK_MONOTONIC is the same clock in every process). With --profile,
cProfile watches the main thread only (the engine's threads are not in the file). The garbage collector's
collections are recorded too (start, generation, wall and CPU seconds, in the main thread or not, objects freed):
a collection holds the GIL, so it stops the loop whichever thread runs it.
"""

from __future__ import annotations

import asyncio
import atexit
import cProfile
import gc
import json
import runpy
import sys
import threading
import time
from array import array
from pathlib import Path
from typing import Any


def install(out: Path, profile: Path | None) -> None:
    starts, cpus = array("d"), array("d")
    original = asyncio.BaseEventLoop._run_once  # type: ignore[attr-defined]  # the loop's one pass
    main = threading.main_thread()

    def run_once(self: asyncio.BaseEventLoop) -> None:
        if threading.current_thread() is not main:
            return original(self)
        began, cpu = time.monotonic(), time.thread_time()
        try:
            return original(self)
        finally:
            starts.append(began)
            cpus.append(time.thread_time() - cpu)

    asyncio.BaseEventLoop._run_once = run_once  # type: ignore[attr-defined]
    #: (monotonic start, generation, wall seconds, CPU seconds of the collecting thread, in the main thread,
    #: objects collected)
    collections: list[tuple[float, int, float, float, bool, int]] = []
    collecting: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting[:] = [time.monotonic(), time.thread_time()]
        elif collecting:
            began, cpu = collecting
            collections.append((began, info["generation"], time.monotonic() - began, time.thread_time() - cpu,
                                threading.current_thread() is main, info.get("collected", 0)))

    gc.callbacks.append(on_gc)
    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()

    def write() -> None:
        if profiler is not None and profile is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
        out.write_text(json.dumps({"starts": starts.tolist(), "cpus": cpus.tolist(), "gc": collections}))

    atexit.register(write)


def stretches(data: dict[str, Any], start: float, end: float) -> list[float]:
    """The CPU seconds of each pass of the loop that began in [start, end)."""
    return [c for s, c in zip(data["starts"], data["cpus"], strict=True) if start <= s < end]


def main() -> None:
    args = sys.argv[1:]
    split = args.index("--")
    own, rest = args[:split], args[split + 1:]
    profile = Path(own[own.index("--profile") + 1]) if "--profile" in own else None
    install(Path(own[0]), profile)
    sys.argv = ["coder", *rest]
    runpy.run_module("coder", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
