"""What the app leaves in the terminal's own scrollback when it quits (issues 24 and 47).

The app draws on the alternate screen, which the terminal throws away on exit. Issue 24 printed the last turn
where the shell's scrollback keeps it; the trial of issue 47 compared it with Codex and Claude Code, which leave
the conversation. So after the screen is restored, the conversation is printed as the app showed it (the person's
messages, the model's answers rendered, each tool call's one line, checkpoints and commits: coder/tui/
session_text.py, from the stored events, so what the app folded is there too), its newest MAX_LINES lines for a
very long session, followed by how to resume it. Text is the model's: control sequences are shown, not run.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.text import Text

MAX_LINES = 2000  # a very long session is cut from the top: its end is what was last on screen


@dataclass
class Conversation:
    """A closing session's row and events, read before the store closes."""

    row: Any
    events: list[dict[str, Any]]


def read_conversation(opened: Any) -> Conversation | None:
    """What `print_conversation` prints, read from the session's store (None when there is nothing to read)."""
    try:
        sid = opened.session.id
        return Conversation(opened.store.session(sid), [e.to_dict() for e in opened.store.events(sid)])
    except Exception:  # noqa: BLE001 - leaving must not fail on what is only printed after
        return None


def print_conversation(conversation: Conversation | None, session_id: str | None) -> None:
    """Print the conversation and the resume hint to stdout (after the app has left the alternate screen)."""
    from coder.tui.session_text import session_lines  # lazy: loaded at quit, not at start-up

    console = Console(highlight=False)
    width = shutil.get_terminal_size((100, 24)).columns
    if conversation is not None and any(e["type"] == "user_message" for e in conversation.events):
        lines = session_lines(conversation.row, conversation.events, console, width, None)
        if len(lines) > MAX_LINES:
            console.print(f"(… {len(lines) - MAX_LINES} earlier lines: `coder sessions show {session_id}`)",
                          style="dim", markup=False)
            lines = lines[-MAX_LINES:]
        for line in lines:
            console.print(Text.assemble(*((s.text, s.style or "") for s in line)), no_wrap=True,
                          overflow="ellipsis", crop=True, markup=False)
    if session_id:
        console.print(f"Session {session_id} is saved; `coder --resume {session_id}` goes on with it.",
                      markup=False, highlight=False)
