"""Streamed Markdown for the plain REPL on a terminal (issue 24: `--plain` printed the model's Markdown raw).

The REPL writes into the terminal's own scrollback, where nothing printed can be redrawn. So the stream is cut
into Markdown *blocks*: a block ends at a blank line outside a code fence, and each finished block is rendered by
Rich (headings, lists, tables, highlighted code) and printed once, wrapped at the terminal's width. The block
being written is held until it ends (or the message ends): a paragraph shows whole, a moment later than its first
word would have. Pipes and files get the raw text as it streams (StreamWrap without wrapping), for scripts.
"""

from __future__ import annotations

import re
from typing import Any

_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


class MarkdownStream:
    def __init__(self, console: Any) -> None:
        self.console = console
        self.buffer = ""
        self.printed = False

    def feed(self, text: str) -> None:
        self.buffer += text
        cut = self._last_boundary()
        if cut > 0:
            block, self.buffer = self.buffer[:cut], self.buffer[cut:]
            self._print(block)

    def _last_boundary(self) -> int:
        """The end of the last blank line outside a code fence (0: no finished block yet)."""
        best = 0
        for match in re.finditer(r"\n[ \t]*\n", self.buffer):
            if len(_FENCE.findall(self.buffer[:match.start()])) % 2 == 0:
                best = match.end()
        return best

    def _print(self, block: str) -> None:
        from rich.markdown import Markdown  # lazy: markdown-it loads with the first answer, not at start-up

        if block.strip():
            self.console.print(Markdown(block))
            self.printed = True

    def flush(self) -> None:
        block, self.buffer = self.buffer, ""
        self._print(block)
