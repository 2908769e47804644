"""What the app's parts tell the app (Textual's "attributes down, messages up", issue 48 item 6).

A part that needs another part to act posts one of these to the app (`self.app.post_message(...)`, from any
thread); the app, which holds the parts, hands it to the part concerned (coder/tui/app.py, `on_...`), with what
that part needs of the others as arguments. No part holds another (the one exception, the feed's transcript, is
named in coder/tui/app.py), so the order the parts are built in no longer decides who can call whom.

A message is handled after the handler that posted it returns: what must happen in order within one handler (the
blocks of one drain, a session closed before the next opens) is done there, or by the app's handler in one go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.widget import Widget

    from coder.base import events as ev


class TurnEnded(Message):
    """The engine's turn ended (the feed drained its TurnEnd): what was queued is sent, agents' news heard."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class StopTurn(Message):
    """Stop the running turn (Esc or Ctrl+C, Esc on a permission question, on the plan screen)."""


class AgentNews(Message):
    """An agent ended: if the session is idle, its news is the model's next turn."""


class StopAgent(Message):
    """Stop agent `ident` ("deny and stop" on its question, the agents screen)."""

    def __init__(self, ident: str) -> None:
        super().__init__()
        self.ident = ident


class RunCommand(Message):
    """A slash command was submitted."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class CommandDone(Message):
    """A slash command's worker finished: its result is drawn after the events it caused."""

    def __init__(self, name: str, result: Any) -> None:
        super().__init__()
        self.name, self.result = name, result


class SetWrap(Message):
    """`/wrap`: long lines wrap (True) or scroll sideways."""

    def __init__(self, wrap: bool) -> None:
        super().__init__()
        self.wrap = wrap


class StatusChanged(Message):
    """What the status bar shows changed (and the git state, with `git`): it is drawn again."""

    def __init__(self, git: bool = False) -> None:
        super().__init__()
        self.git = git


class Note(Message):
    """A line for the conversation (`kind`: "", "ok" or "error")."""

    def __init__(self, text: str, kind: str = "") -> None:
        super().__init__()
        self.text, self.kind = text, kind


class AddBlock(Message):
    """A block for the conversation (a command's result, an agent's merge)."""

    def __init__(self, block: Widget) -> None:
        super().__init__()
        self.block = block


class Drained(Message):
    """The feed drained the engine's queue (`new`: something was in it): a waiting question may take the focus,
    the running agents' clocks move, the status bar is drawn again."""

    def __init__(self, new: bool) -> None:
        super().__init__()
        self.new = new


class Asked(Message):
    """The feed reached a permission question an engine thread waits on: it goes up, after the events before it."""

    def __init__(self, request: ev.PermissionRequest) -> None:
        super().__init__()
        self.request = request


class AgentEvent(Message):
    """An agent's event (or a session's start), drained: the agents' board, panel and cost (coder/tui/agents_part.py);
    its line in the conversation the feed has drawn already."""

    def __init__(self, event: ev.Event, replay: bool) -> None:
        super().__init__()
        self.event, self.replay = event, replay


class WorkEvent(Message):
    """A plan's or the task list's event (or a session's start), drained: the plan screen and the task list panel
    (coder/tui/work_view.py); its lines in the conversation the feed has drawn already."""

    def __init__(self, event: ev.Event, replay: bool) -> None:
        super().__init__()
        self.event, self.replay = event, replay


class PlanAnswered(Message):
    """The plan screen was answered while the engine waits: the answer goes to the waiting thread."""

    def __init__(self, verdict: Any) -> None:
        super().__init__()
        self.verdict = verdict


class DropReason(Message):
    """Esc while a denial's reason is being typed: no reason is waited for."""


class SessionOpened(Message):
    """The opening worker opened a session (posted from its thread)."""

    def __init__(self, opened: Any) -> None:
        super().__init__()
        self.opened = opened


class OpenFailed(Message):
    """The opening worker could not open a session: why."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class OpenSession(Message):
    """Open a session with these options (`/model SPEC` when none is open)."""

    def __init__(self, override: dict[str, Any]) -> None:
        super().__init__()
        self.override = override


class SwitchSession(Message):
    """/clear (`resume` None) or /resume ID: the conversation starts over with another session."""

    def __init__(self, resume: str | None) -> None:
        super().__init__()
        self.resume = resume


class Submit(Message):
    """Send this as if typed (a command's result that sends a prompt: a custom command, /init)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
