"""The per-session code index: opened lazily, built in a background thread, never blocking a text search.

A session keeps one `IndexService` in `ToolContext.services["code_index"]`. The first index query starts the
build and waits for it a short while; on a big repository it answers from the part already indexed, with a
note giving the progress, rather than freezing the UI for the whole cold build.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from coder.codeintel.index import CodeIndex

SERVICE_KEY = "code_index"
#: how long an index query waits for a running build before answering from a partial index
WAIT_SECONDS = 8.0
#: a full re-check of the tree (list + stat) at most this often; cited files are always re-checked
REFRESH_SECONDS = 2.0


class IndexService:
    def __init__(self, root: Path, cache_dir: Path | None = None) -> None:
        self.root = Path(root).resolve()
        self._cache_dir = cache_dir
        self._index: CodeIndex | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.error: str | None = None

    @property
    def index(self) -> CodeIndex:
        with self._lock:
            if self._index is None:
                self._index = CodeIndex.open(self.root, self._cache_dir)
            return self._index

    def start(self) -> None:
        """Start the first build in the background (idempotent)."""
        index = self.index
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._build, args=(index,), name="code-index", daemon=True)
            self._thread.start()

    def _build(self, index: CodeIndex) -> None:
        try:
            index.refresh()
        except Exception as exc:  # noqa: BLE001 - reported in the next answer, never raised in a thread
            self.error = f"index build failed: {type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def ready(self, wait: float = WAIT_SECONDS) -> tuple[CodeIndex, str]:
        """The index and a note ("" when complete); refreshes a complete index that may be out of date."""
        self.start()
        index = self.index
        if not self._done.wait(wait):
            done, total = index.progress
            return index, (f"note: the index is still being built ({done}/{total} files parsed); results may be "
                           "incomplete. Text search (query_type=text) is always complete.")
        if self.error:
            return index, f"note: {self.error}; results come from the last good index"
        # a full re-check costs ~15 µs per file: on a 100k-file monorepo that is 1.5 s, so space them out to
        # keep the index under ~10% of a core (cited files are always re-checked, the map always re-checks all)
        last = index.last_refresh.seconds if index.last_refresh is not None else 0.0
        try:
            index.refresh_if_older(max(REFRESH_SECONDS, 10 * last))
        except Exception as exc:  # noqa: BLE001 - answer from the cache rather than fail the query
            return index, f"note: re-checking the files failed ({type(exc).__name__}: {exc}); results may be stale"
        notes = [n for n in index.notes if n]
        index.notes.clear()
        return index, "\n".join(f"note: {n}" for n in notes)

    def note_changed(self, paths: list[str]) -> None:
        """Tell the index that a tool changed these files (repo-relative): re-parse them now if it is built.

        Optional (queries re-check what they cite anyway), but it keeps the next map and references exact without
        waiting for the periodic full re-check. Never blocks on a running cold build."""
        if self._index is None or not self._done.is_set() or self._index.building:
            return
        try:
            self._index.refresh(only=list(paths))
        except Exception as exc:  # noqa: BLE001 - a hint must never fail the edit that sent it
            self._index.notes.append(f"index update after an edit failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=0.1)
        if self._index is not None and self._done.is_set():
            self._index.close()


def service_for(services: dict[str, Any], root: Path) -> IndexService:
    """The session's index service, created on first use."""
    service = services.get(SERVICE_KEY)
    if not isinstance(service, IndexService) or service.root != Path(root).resolve():
        service = IndexService(root)
        services[SERVICE_KEY] = service
    return service


def wait_until_built(service: IndexService, timeout: float = 600.0) -> bool:
    deadline = time.monotonic() + timeout
    service.start()
    return service._done.wait(max(0.0, deadline - time.monotonic()))
