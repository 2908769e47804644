"""Notifications for the Textual app and the REPL (issue 23): a turn ended, or a permission question waits.

Two outlets, one decision: a terminal notification (OSC 777 on terminals known to show it, OSC 9 on those known
for that one, the bell otherwise) and the `[[hooks.notification]]` hooks, for users who want their own command
(a phone push, a sound). `[notifications] when` decides for both:

- "unfocused" (the default): only when the terminal is not focused. The app knows the focus when the terminal
  reports it (Textual turns focus reporting on); while it is unknown (no report yet, or the plain REPL, which does
  not track it) a notification is sent, since a question nobody sees is worse than one notification too many.
- "always", or "never".

`[notifications] method` = "auto" | "osc9" | "osc777" | "bell" overrides the detection. Inside tmux an OSC is
wrapped in tmux's passthrough so it reaches the outer terminal (tmux needs `allow-passthrough on`).
Nothing here imports Textual or prompt-toolkit; each frontend passes how it writes to its terminal.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coder.config.sections import Config

#: characters that would end or break an OSC string: every control character, and `;` in OSC 777's fields
UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
HOOK_JOIN_TIMEOUT = 35.0  # a hook's own default timeout is 30 s


def detect_method(environ: Mapping[str, str]) -> str:
    """The notification a terminal is known to show, from what it puts in the environment (inside tmux the outer
    terminal's own variables often survive: VTE_VERSION, LC_TERMINAL, WT_SESSION, KITTY_WINDOW_ID)."""
    term = environ.get("TERM", "")
    program = environ.get("TERM_PROGRAM", "")
    if environ.get("VTE_VERSION") or term.startswith(("foot", "rxvt-unicode")):
        return "osc777"  # GNOME Terminal, Tilix and the other VTE terminals, foot, urxvt
    if (program in ("iTerm.app", "WezTerm", "ghostty") or environ.get("LC_TERMINAL") == "iTerm2"
            or environ.get("WT_SESSION") or environ.get("KITTY_WINDOW_ID") or term in ("xterm-kitty",
                                                                                       "xterm-ghostty")):
        return "osc9"
    return "bell"


def sequence(method: str, title: str, body: str, environ: Mapping[str, str]) -> str:
    """The bytes to write for one notification (text made inert: no control character can end the OSC early)."""
    if method == "auto":
        method = detect_method(environ)
    title, body = UNSAFE.sub(" ", title), UNSAFE.sub(" ", body)
    if method == "osc9":
        seq = f"\x1b]9;{title}: {body}\x07"
    elif method == "osc777":
        seq = f"\x1b]777;notify;{title.replace(';', ',')};{body.replace(';', ',')}\x07"
    else:
        return "\x07"
    if environ.get("TMUX"):  # tmux drops OSCs it does not know; its passthrough hands them to the outer terminal
        seq = "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq


@dataclass
class Notifier:
    """One frontend's notifier. `write` puts text on the terminal (None: not a terminal, hooks only); `hooks` is
    the session's HookRunner (or None); `focused` is kept up to date by the frontend when it knows the focus."""

    config: Config
    write: Callable[[str], None] | None = None
    hooks: Any = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    focused: bool | None = None
    title: str = "coder"
    threads: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.settings = self.config.notifications

    def wanted(self) -> bool:
        if self.settings.when == "never":
            return False
        return self.settings.when == "always" or self.focused is not True

    def notify(self, kind: str, message: str) -> bool:
        """Notify when the settings and the focus say so; True when it did. `kind`: "turn_end" or "permission".
        The hooks run in a thread: a slow hook must not hold the question or the next prompt back."""
        if not self.wanted():
            return False
        if self.write is not None:
            try:
                self.write(sequence(self.settings.method, self.title, message, self.environ))
            except (OSError, ValueError, RuntimeError):  # a closed terminal or a closing app: nothing to tell
                pass
        runner = getattr(self.hooks, "notification", None)
        if runner is not None:
            thread = threading.Thread(target=runner, args=(kind, message), name="notification-hook", daemon=True)
            thread.start()
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        return True

    def turn_ended(self, reason: str) -> bool:
        """A turn ended. Not when the user stopped it (Esc, Ctrl+C): they are at the keyboard already."""
        return reason != "interrupted" and self.notify("turn_end", turn_message(reason))

    def question(self, title: str) -> bool:
        """A permission question (or a plan to approve) waits for the user."""
        return self.notify("permission", question_message(title))

    def close(self) -> None:
        """Wait for hooks still running (each is bounded by its own timeout), so a quick exit does not cut them."""
        for thread in self.threads:
            thread.join(HOOK_JOIN_TIMEOUT)
        self.threads = []


def for_session(opened: Any, write: Callable[[str], None] | None) -> Notifier:
    """The notifier of an opened session: its config and its hooks."""
    return Notifier(opened.config, write, getattr(opened.session.parts, "hooks", None))


def turn_message(reason: str) -> str:
    return "the turn is done" if reason == "done" else f"the turn stopped: {reason}"


def question_message(title: str) -> str:
    return f"asks to allow {title}"
