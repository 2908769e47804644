"""Long tool outputs: keep head and tail for the model, the whole text on disk behind a handle.

The handle `output://<id>` can be read back in line ranges with the `read_output` tool. Files live in the
session's state dir, outside the workspace, so the sandbox cannot tamper with them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

HANDLE_PREFIX = "output://"


@dataclass
class Clipped:
    text: str
    handle: str | None = None  # set when the text was cut
    cut_lines: int = 0


def outputs_dir(state_dir: Path) -> Path:
    return state_dir / "outputs"


def save_output(state_dir: Path, text: str) -> str:
    """Store `text` and return its handle.

    The id is a digest of the text, so saving the same output twice gives the same handle: a clipped or masked
    message then renders identically on every request (the prompt cache stays valid) and nothing is stored
    twice."""
    folder = outputs_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    output_id = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
    path = folder / f"{output_id}.txt"
    if not path.exists():
        tmp = folder / f".{output_id}.tmp"
        tmp.write_bytes(text.encode("utf-8", errors="replace"))
        tmp.replace(path)  # atomic: a reader never sees half a file
    return HANDLE_PREFIX + output_id


def load_output(state_dir: Path, handle: str) -> str:
    """The full text behind `handle`; FileNotFoundError when unknown."""
    output_id = handle.removeprefix(HANDLE_PREFIX)
    if not output_id.isalnum():
        raise FileNotFoundError(handle)
    # bytes, not read_text: universal newlines would turn a stored "\r\n" into "\n"
    return (outputs_dir(state_dir) / f"{output_id}.txt").read_bytes().decode("utf-8", errors="replace")


def clip_output(text: str, state_dir: Path, max_chars: int = 20_000, head_lines: int = 100,
                tail_lines: int = 100) -> Clipped:
    """Return `text` unchanged when it fits, else its first and last lines (each line capped) with a note
    naming the cut line count and the handle of the full text."""
    if len(text) <= max_chars:
        return Clipped(text)
    handle = save_output(state_dir, text)
    lines = text.splitlines()
    if len(lines) <= head_lines + tail_lines:  # few but very long lines
        head_lines = max(1, len(lines) // 2)
        tail_lines = len(lines) - head_lines if len(lines) > 1 else 0
    head = lines[:head_lines]
    tail = lines[len(lines) - tail_lines:] if tail_lines else []
    # share the character budget among the lines kept, so a few huge lines do not starve the rest
    line_cap = max(250, max_chars // max(1, len(head) + len(tail)))
    cut = max(0, len(lines) - len(head) - len(tail))

    def cap(line: str) -> str:
        return line if len(line) <= line_cap else line[:line_cap] + f" … [{len(line) - line_cap} chars cut]"

    budget_head = "\n".join(cap(x) for x in head)[: max_chars // 2]
    budget_tail = "\n".join(cap(x) for x in tail)[-max_chars // 2:]
    note = (f"\n[… {cut} lines cut ({len(text)} chars in all). Full output: {handle} "
            f"(read it with the read_output tool, in line ranges) …]\n")
    return Clipped(budget_head + note + budget_tail, handle, cut)
