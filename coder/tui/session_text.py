"""A stored session as a person reads it, in lines of styled segments: Ctrl+T's transcript (coder/tui/screens.py)
and what the app leaves in the terminal's scrollback when it quits (coder/tui/farewell.py).

Issue 47: Ctrl+T showed the transcript's Markdown source (`## You`, `**✓ bash: ls**`, fences), and on quit only
the last turn was left in the scrollback, where Codex and Claude Code leave the conversation. Both now draw the
session the way the app does: the person's messages, the model's answers rendered (Rich's Markdown, when the text
uses any), each tool call as one line with its mark and time, its output or diff below it in Ctrl+T (cut), the
checkpoints, commits and errors. Built from the stored events, so it holds everything, folded blocks included.

Only the person's and the model's words go through Rich's renderer (wrapped at the width); the rest are lines made
directly, kept whole and scrolled sideways, so a 2,000-call session costs about what its Markdown text did.
Text is shown with control sequences made visible (coder/base/termsafe.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from coder.base.events import call_failure
from coder.base.termsafe import visible
from coder.frontend.calls import result_line, tool_title
from coder.frontend.choices import saved_note
from coder.tui.blocks import uses_markdown

Line = list[Segment]

DIM = Style(dim=True)
BOLD = Style(bold=True)
STYLES = {"+": Style(color="green"), "-": Style(color="red"), "@": Style(color="cyan")}


def session_lines(row: Any, events: list[dict[str, Any]], console: Console, width: int,
                  output_lines: int | None) -> list[Line]:
    """The lines of a stored session (`row` its SessionRow, `events` its event dicts in order) at `width`;
    `output_lines`: how much of each call's output Ctrl+T shows (None: the calls' one-line results only, as the
    conversation shows them)."""
    options = console.options.update(width=max(width, 20))
    out: list[Line] = []
    if output_lines is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.created))
        out += [[Segment(f"coder session {row.id} · started {when} · {row.model} · {row.status}", BOLD)],
                [Segment(f"workspace {row.workspace}", DIM)], []]

    def words(renderable: RenderableType) -> None:
        out.extend(console.render_lines(renderable, options, pad=False))
        out.append([])

    for e in events:
        kind = e["type"]
        if kind == "user_message":
            words(Text(f"› {visible(str(e['text']).rstrip())}", style="bold"))
        elif kind == "assistant_message":
            text = "".join(b.get("text", "") for b in e["message"]["content"] if b.get("type") == "text").strip()
            if text:
                words(_answer(text))
        elif kind == "tool_call_finished":
            out.extend(_call(e, output_lines))
        elif kind == "tool_call_approved" and e.get("remember") and e.get("rule"):  # as the conversation notes it
            note = saved_note({"session": "always"}.get(str(e["remember"]), str(e["remember"])), [str(e["rule"])])
            out += [[Segment(visible(note), DIM)], []] if note else []
        elif kind == "checkpoint" and not str(e.get("label", "")).startswith("before"):
            files = ", ".join((e.get("files_changed") or [])[:8])
            out += [[Segment(f"checkpoint {e['id']}: {files or 'no files'}", DIM)], []]
        elif kind == "commit":
            message = str(e.get("message", "")).splitlines() or [""]
            out += [[Segment(f"committed {str(e.get('sha', ''))[:10]}: {visible(message[0])}", DIM)], []]
        elif kind == "error":
            out += [[Segment(visible(str(e.get("message", ""))), Style(color="red"))], []]
    while out and not out[-1]:
        out.pop()
    return out


def _answer(text: str) -> RenderableType:
    """The model's words: Markdown when they use any (the same test as the conversation's blocks)."""
    from rich.markdown import Markdown  # start-up time: markdown-it loads with the first transcript, not at start

    return Markdown(visible(text)) if uses_markdown(text) else Text(visible(text))


def _call(e: dict[str, Any], output_lines: int | None) -> Iterator[Line]:
    """One call: its line (mark, title, time), then in Ctrl+T its diff or the head of its output."""
    args = e.get("input") or {}
    output = str(e.get("output", ""))
    data = e.get("data") or {}
    title = visible(tool_title(e["tool"], args))
    if output_lines is None:  # as the conversation's one-line block: the call, then its result's line
        line = result_line(output, bool(e.get("is_error")), float(e.get("duration_s") or 0.0), data)
        failed = not line.startswith(("✓", "⇥"))
        yield [Segment(f"▶ {title}  ", BOLD), Segment(visible(line), Style(color="red") if failed else DIM)]
        return
    why = call_failure(bool(e.get("is_error")), data, output)
    mark = "✓" if why is None else "✗" + (f" {why}" if why != "failed" else "")
    took = f" ({e['duration_s']:.1f}s)" if e.get("duration_s") else ""
    yield [Segment(mark + " ", Style(color="green" if why is None else "red")), Segment(title + took, BOLD)]
    diff = str(data.get("diff") or "")
    body = (diff or output).rstrip("\n")
    rows = body.split("\n", -1 if diff else output_lines) if body.strip() else []
    if not diff and len(rows) > output_lines:
        rest = rows.pop().count("\n") + 1
        rows.append(f"… ({rest} more lines)")
    for text in rows:
        yield [Segment("    " + visible(text).expandtabs(4), STYLES.get(text[:1], DIM) if diff else DIM)]
    yield []


def plain(line: Line) -> str:
    return "".join(segment.text for segment in line)
