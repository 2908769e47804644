"""The input history: prompts typed in any session, kept across sessions (both interactive frontends)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from coder.base.paths import state_dir

HISTORY_LIMIT = 2000


class InputHistory:
    """Prompts typed in any session, newest last, in `state_dir()/input_history.jsonl` (one JSON string a line,
    so multi-line prompts survive). Bounded: the file is rewritten to the newest HISTORY_LIMIT when it grows."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            path = state_dir() / "input_history.jsonl"
        self.path = path
        self.entries: list[str] = []
        self._lock = threading.Lock()
        try:
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, str) and value.strip():
                    self.entries.append(value)
        except (OSError, UnicodeDecodeError):
            pass
        self.entries = self.entries[-HISTORY_LIMIT:]

    def add(self, text: str) -> None:
        text = text.rstrip()
        if not text.strip() or (self.entries and self.entries[-1] == text):
            return
        with self._lock:
            self.entries.append(text)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if len(self.entries) > HISTORY_LIMIT * 1.5:
                    self.entries = self.entries[-HISTORY_LIMIT:]
                    tmp = self.path.with_suffix(".tmp")
                    tmp.write_text("".join(json.dumps(e) + "\n" for e in self.entries), encoding="utf-8")
                    tmp.replace(self.path)
                else:
                    with self.path.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(text) + "\n")
            except OSError:
                pass  # history is a convenience; a read-only state dir must not break the prompt

    def search(self, needle: str, limit: int = 50) -> list[str]:
        needle = needle.lower()
        seen: set[str] = set()
        out = []
        for entry in reversed(self.entries):
            if needle in entry.lower() and entry not in seen:
                seen.add(entry)
                out.append(entry)
                if len(out) >= limit:
                    break
        return out
