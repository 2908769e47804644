"""Parse worker processes for big builds: started early, fed on demand, replaced by the caller if one dies.

A cold build of a big repository starts its workers before it lists the files (`ParsePool.start`), so their
interpreter start and imports (~60 ms) overlap the listing instead of following it. Batches are handed out on
demand, biggest files first, two in flight per worker, so both cores stay busy to the end. Why subprocesses
and not multiprocessing: see coder.codeintel.worker. The workers start through the door (coder/host): isolated
Python with coder's own import path, outside the workspace, without the provider keys in their environment.
"""

from __future__ import annotations

import os
import pickle
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from coder.host import PIPE, Popen, python_module, start

BATCH_FILES = 48
#: ... or this many bytes, whichever comes first (a batch is the unit of work handed to a parse worker)
BATCH_BYTES = 256 * 1024
#: a git index bigger than this (~600 tracked files) makes an empty cache worth starting workers early
EARLY_START_INDEX_BYTES = 64 * 1024

Item = tuple[str, int, int, "str | None"]  # (path, size, mtime_ns, old hash)


def size_batches(todo: list[Item]) -> list[list[Item]]:
    """Biggest files first, in batches of at most BATCH_FILES files or BATCH_BYTES bytes.

    Handed out on demand, so a worker that drew the slow files (parse time is not proportional to bytes
    across languages) does not leave the other core idle at the end, and small batches at the tail even out."""
    todo = sorted(todo, key=lambda it: (-it[1], it[0]))
    batches: list[list[Item]] = []
    current: list[Item] = []
    size = 0
    for item in todo:
        if current and (len(current) >= BATCH_FILES or size + item[1] > BATCH_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(item)
        size += item[1]
    if current:
        batches.append(current)
    return batches


def looks_big(root: Path) -> bool:
    """Whether `root` is a git checkout big enough that a cold build will use workers (a cheap guess)."""
    try:
        return os.stat(root / ".git" / "index").st_size > EARLY_START_INDEX_BYTES
    except OSError:
        return False


class ParsePool:
    """`workers` parse subprocesses of `python -m coder.codeintel.worker` for one build."""

    def __init__(self, root: Path, workers: int) -> None:
        self.root = Path(root).resolve()
        self.closed = False
        self.procs = [start(python_module("coder.codeintel.worker"), purpose="a parse worker", stdin=PIPE,
                            stderr=None) for _ in range(workers)]

    def run(self, todo: list[Item], parse_batch: Callable[[str, list[Item]], list]) -> Iterator[list]:
        """Yield the results of every batch of `todo`, in the order they finish. A worker that dies hands its
        batches and the rest to `parse_batch` in this process (slower, never lost)."""
        work: queue.SimpleQueue = queue.SimpleQueue()
        batches = size_batches(todo)
        for batch in batches:
            work.put(batch)
        results: queue.Queue = queue.Queue()
        fallback = threading.Lock()  # parsers are not thread-safe
        root = str(self.root)

        def take() -> list | None:
            try:
                return work.get_nowait()
            except queue.Empty:
                return None

        def pump(proc: Popen) -> None:
            in_flight: list[list] = []
            try:
                assert proc.stdin is not None and proc.stdout is not None
                stdin, stdout = proc.stdin, proc.stdout

                def send() -> None:
                    batch = take()
                    if batch is not None:
                        in_flight.append(batch)
                        pickle.dump(batch, stdin, protocol=pickle.HIGHEST_PROTOCOL)
                        stdin.flush()

                pickle.dump(root, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                send()
                send()  # two in flight: the worker never waits for the parent between batches
                while in_flight:
                    batch = pickle.load(stdout)
                    in_flight.pop(0)
                    results.put(batch)
                    send()
                pickle.dump(None, proc.stdin)
                proc.stdin.close()
            except (EOFError, OSError, pickle.UnpicklingError):
                batch = None
                while not self.closed and (in_flight or (batch := take()) is not None):
                    todo_batch = in_flight.pop(0) if in_flight else batch
                    assert todo_batch is not None  # the loop's test: one in flight, or one just taken
                    with fallback:
                        results.put(parse_batch(root, todo_batch))
            finally:
                results.put(None)

        active = self.procs[:len(batches)]
        for proc in self.procs[len(batches):]:  # more workers than batches: the extra ones are not needed
            proc.kill()
        for proc in active:
            threading.Thread(target=pump, args=(proc,), daemon=True).start()
        pending = len(active)
        while pending:
            batch = results.get()
            if batch is None:
                pending -= 1
            else:
                yield batch

    def close(self) -> None:
        self.closed = True  # a pump whose worker is killed now must not start parsing in this process
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
