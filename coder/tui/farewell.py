"""What the app leaves in the terminal's own scrollback when it quits (issue 24).

The app draws on the alternate screen, which the terminal throws away on exit: the answer a person was reading
vanished with it. So after the screen is restored, the last turn (the person's last message and the model's
last answer, rendered as Markdown by Rich at the terminal's width) is printed where the shell's scrollback
keeps it, followed by how to resume the session. Text is the model's: control sequences are shown, not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console

from coder.base.termsafe import visible

MAX_LINES = 400  # a very long answer is cut from the top: its end is what was last on screen


@dataclass
class LastTurn:
    message: str
    answer: str


def last_turn(session: Any) -> LastTurn | None:
    """The last user message of the session and the answer that followed it (None before the first one)."""
    from coder.engine.mode_notice import is_notice  # start-up time: the engine's modules load after the first paint
    from coder.models.types import TextBlock

    history = getattr(session, "history", [])
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if m.role == "user" and m.content and isinstance(m.content[0], TextBlock):
            # its first text past the mode notice the engine may have put ahead of it
            typed = next((b.text for b in m.content if isinstance(b, TextBlock) and not is_notice(b.text)),
                         m.content[0].text)
            answers = [h.text() for h in history[i + 1:] if h.role == "assistant" and h.text().strip()]
            return LastTurn(typed, answers[-1] if answers else "")
    return None


def print_last_turn(turn: LastTurn | None, session_id: str | None) -> None:
    """Print the last turn and the resume hint to stdout (after the app has left the alternate screen)."""
    from rich.markdown import Markdown  # lazy: markdown-it loads at quit, not at start-up


    console = Console(highlight=False)
    if turn is not None:
        console.print(f"› {visible(turn.message)}", style="bold", markup=False)
        lines = visible(turn.answer).splitlines()
        if len(lines) > MAX_LINES:
            lines = [f"(… {len(lines) - MAX_LINES} earlier lines: `coder sessions show {session_id}`)", "",
                     *lines[-MAX_LINES:]]
        if turn.answer.strip():
            console.print(Markdown("\n".join(lines)))
    if session_id:
        console.print(f"Session {session_id} is saved; `coder --resume {session_id}` goes on with it.",
                      markup=False, highlight=False)
