"""The app's side of plans and the task list (issue 19): the plan approval screen, the task list panel that stays
visible under the conversation, and the part of the app (coder/tui/app.py) that turns their events into them.

The plan question arrives like a permission request (coder/engine/work.py): the engine thread waits on the app's
ask future, and the screen answers it with a `PlanVerdict`. Esc and Ctrl+C stay the app's (priority bindings):
they interrupt the turn, which answers the future, and the screen closes itself when it sees that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.frontend.choices import plan_question
from coder.frontend.work import plan_line
from coder.tui.blocks import NoteBlock, markdown_block
from coder.tui.messages import PlanAnswered, StopTurn
from coder.tui.part import Part
from coder.tui.prompts import ChoicePrompt
from coder.tui.state import AppState

if TYPE_CHECKING:  # the engine loads in a worker after the first paint (PlanVerdict is made when a plan is answered)
    from textual.widget import Widget

    from coder.engine.work import PlanVerdict

#: how a status reads in the panel
_MARKS = {"done": ("✓ ", "green"), "in_progress": ("▶ ", "bold yellow"), "pending": ("○ ", "")}
PANEL_ROWS = 10


class TodoPanel(Static):
    """The task list, docked under the conversation; hidden while there is none."""

    DEFAULT_CSS = """
    TodoPanel { height: auto; max-height: 12; border-top: solid $secondary; padding: 0 1; display: none; }
    """

    def __init__(self) -> None:
        super().__init__(id="todo-panel")
        self.items: list[dict[str, Any]] = []

    def show(self, items: list[dict[str, Any]]) -> None:
        self.items = [dict(i) for i in items]
        self.display = bool(self.items)
        self.update(render_todos(self.items))


def render_todos(items: list[dict[str, Any]], rows: int = PANEL_ROWS) -> Text:
    """The list as the panel draws it: a title with the count, then one line an item; with more items than
    rows, the finished ones at the top are folded first, so the current item stays in view."""
    done = sum(1 for i in items if i.get("status") == "done")
    text = Text(f"Tasks {done}/{len(items)}", style="bold")
    shown = list(items)
    folded = 0
    while len(shown) > rows and shown and shown[0].get("status") == "done":
        shown.pop(0)
        folded += 1
    if folded:
        text.append(f"  ({folded} done above)", style="dim")
    for item in shown[:rows]:
        mark, style = _MARKS.get(str(item.get("status")), ("○ ", ""))
        text.append("\n" + mark, style=style or None)
        text.append(visible(str(item.get("text", ""))), style="dim strike" if item.get("status") == "done" else
                    (style or None))
    if len(shown) > rows:
        text.append(f"\n… {len(shown) - rows} more", style="dim")
    return text


class PlanPrompt(ChoicePrompt):
    """The plan's choices (coder/frontend/choices.py: plan_question): typing cannot answer them, and approving in
    auto-edit, a lasting grant, only through its confirmation."""

    def __init__(self) -> None:
        super().__init__(plan_question())


class PlanScreen(ModalScreen["PlanVerdict | None"]):
    """The plan and its question: approve and go on in auto-edit (1, confirmed after a pause, or a click), approve
    and go on in ask (2, the highlighted one), or keep planning with the feedback typed in the box (3, or Enter in
    the box). Keys typed before the question counts them go into the box (issue 47: a `1` or an Enter typed as
    the screen appeared switched the session to auto-edit)."""

    DEFAULT_CSS = """
    PlanScreen { align: center middle; }
    PlanScreen > Vertical { width: 92%; height: auto; max-height: 90%; border: round $accent; background: $surface;
                            padding: 0 1; }
    PlanScreen VerticalScroll { height: auto; max-height: 24; }
    """

    def __init__(self, plan: str, asking: Callable[[], bool], working: Callable[[], bool],
                 stop: Callable[[], None]) -> None:
        """`asking`: the engine waits for an answer now; `working`: the turn still runs (the event may be drawn a
        moment before the engine starts to wait, so the screen goes away only once the wait it saw is over);
        `stop` interrupts the turn."""
        super().__init__()
        self.plan = plan
        self.asking = asking
        self.working = working
        self.stop_turn = stop
        self.closed = False
        self.seen_wait = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The plan is ready. Approve it to leave plan mode, or keep planning.", style="bold"))
            with VerticalScroll():
                yield markdown_block(self.plan, "command")
            yield Input(placeholder="Feedback for the model (what to change), then Enter to keep planning",
                        id="feedback")
            yield PlanPrompt()

    def on_mount(self) -> None:
        self.query_one(PlanPrompt).focus()
        self.set_interval(0.1, self._check)

    def _check(self) -> None:
        if not self.is_current:  # a tick that comes after the screen was dismissed (a loaded machine) does nothing
            return
        asking = self.asking()
        self.seen_wait = self.seen_wait or asking
        if (self.seen_wait and not asking) or not self.working():  # interrupted (Esc, Ctrl+C), or the turn ended
            self.close(None)

    def close(self, verdict: PlanVerdict | None) -> None:
        """Dismiss once: an answer and the check that sees the wait end can come in the same moment."""
        if not self.closed:
            self.closed = True
            self.dismiss(verdict)

    def action_dismiss_none(self) -> None:
        """Esc or Ctrl+C (the app's keys hand them to the open modal): stop the turn, as on a permission prompt;
        the interrupt answers the engine's question, and `_check` then closes the screen."""
        self.stop_turn()

    def action_next(self) -> None:
        """Ctrl+R (the history search's key, handed to the open modal): nothing to search here."""

    def on_choice_prompt_answered(self, message: ChoicePrompt.Answered) -> None:
        message.stop()
        if message.answer == "stop":
            self.stop_turn()
        else:
            self.action_answer(message.answer)

    def on_choice_prompt_typed(self, message: ChoicePrompt.Typed) -> None:
        """Typing, not an answer: it goes into the feedback box, which takes the focus."""
        message.stop()
        box = self.query_one("#feedback", Input)
        box.focus()
        if message.character and (len(message.character) > 1 or message.character.isprintable()):
            box.insert_text_at_cursor(message.character)
        elif message.key == "backspace":
            box.action_delete_left()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_answer("revise")

    def action_answer(self, choice: str) -> None:
        from coder.engine.work import PlanVerdict  # lazy: see the TYPE_CHECKING import above

        feedback = self.query_one("#feedback", Input).value.strip()
        if choice == "revise":
            if not feedback and not self.query_one("#feedback", Input).has_focus:
                self.query_one("#feedback", Input).focus()  # say what to change first
                return
            self.close(PlanVerdict("revise", "plan", feedback))
        else:
            self.close(PlanVerdict("approved", choice, feedback))


def plan_blocks(item: ev.Event, replay: bool) -> list[Widget]:
    """What a plan's event adds to the conversation: the feed adds it in order with the events around it."""
    if isinstance(item, ev.PlanProposed) and replay:
        return [markdown_block("**Plan proposed**\n\n" + item.plan, "command")]
    if isinstance(item, ev.PlanDecision):
        blocks: list[Widget] = [NoteBlock(plan_line(item), "ok" if item.outcome == "approved" else "")]
        if item.outcome == "approved" and item.source == "user" and not replay:
            blocks.append(markdown_block("**Approved plan**\n\n" + item.plan, "command"))
        return blocks
    return []


class WorkView(Part):
    """Plan and task-list events (the app hands them over: WorkEvent, after the feed drew their lines,
    `plan_blocks`). The plan question waits like a permission request: on the state's `answer`, answered with a
    PlanVerdict (PlanAnswered, which the app hands to Questions)."""

    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)

    def _stop_turn(self) -> None:
        """Esc or Ctrl+C on the plan: stop the turn."""
        self.app.post_message(StopTurn())

    def event(self, item: Any, replay: bool) -> None:
        if isinstance(item, ev.PlanProposed) and not replay:

            def answered(verdict: PlanVerdict | None) -> None:
                if verdict is None:
                    return
                if not self.state.waiting and self.state.busy:  # answered before the engine began to wait
                    self.app.set_timer(0.05, lambda: answered(verdict))
                    return
                self.app.post_message(PlanAnswered(verdict))

            state = self.state
            self.app.push_screen(PlanScreen(item.plan, lambda: state.waiting, lambda: state.busy, self._stop_turn),
                                 answered)
        elif isinstance(item, ev.TodoUpdated):
            self.show_todos(item.items)
        elif isinstance(item, ev.SessionStart) and not item.resumed:  # /clear, or a replayed session's start
            self.show_todos([])

    def show_todos(self, items: list[dict[str, Any]]) -> None:
        self.app.query_one(TodoPanel).show(items)
