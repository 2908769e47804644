"""What the app's parts tell the app (Textual's "attributes down, messages up", issue 48 item 6).

A part that needs another part to act posts one of these to the app (`self.app.post_message(...)`); the app,
which holds the parts, hands it to the part concerned (coder/tui/app.py, `on_...`). No part holds a callback of
another's set after it was built: the order the parts are built in no longer decides who can call whom.
"""

from __future__ import annotations

from textual.message import Message


class TurnEnded(Message):
    """The engine's turn ended (the feed drained its TurnEnd): what was queued is sent, agents' news heard."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class StopTurn(Message):
    """Stop the running turn (Esc on a permission question, on the plan screen)."""


class AgentNews(Message):
    """An agent ended: if the session is idle, its news is the model's next turn."""


class StopAgent(Message):
    """Stop agent `ident` ("deny and stop" on its question)."""

    def __init__(self, ident: str) -> None:
        super().__init__()
        self.ident = ident


class RunCommand(Message):
    """A slash command was submitted."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class SetWrap(Message):
    """`/wrap`: long lines wrap (True) or scroll sideways."""

    def __init__(self, wrap: bool) -> None:
        super().__init__()
        self.wrap = wrap
