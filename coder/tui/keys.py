"""Keys of the app that keep input from being lost or misread (issue 24). A part of the app (coder/tui/app.py).

- Esc always brings the focus back to the input. From another widget (a tool block reached with Tab, a clicked
  block, a permission prompt the person Tabbed away from) that is all it does; in the input it closes an open
  completion, else interrupts a running turn (a waiting permission prompt is answered "deny and stop").
- A printable key pressed while the focus is on something that does not take text (a tool block's title, the
  conversation) goes into the input, and the focus with it: nothing typed is dropped.
- Ctrl+C copies a selection (mouse selection on the screen, or the input's own) and quits only without one:
  interrupt when a turn runs, clear the input when it holds text, and twice within QUIT_WINDOW on an idle app.
- From the input: PageUp/PageDown scroll the conversation, Ctrl+Home/Ctrl+End go to its top/bottom, Ctrl+O
  expands (or folds) the newest tool block, Tab goes to a waiting permission prompt, Alt+Z makes long lines
  wrap or scroll sideways, Ctrl+B sends a running command to the background.
"""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Console
from rich.segment import Segment
from textual import events
from textual.app import App
from textual.screen import Screen

from coder.frontend.history import InputHistory
from coder.tui.agents_view import AgentsScreen
from coder.tui.blocks import ToolBlock
from coder.tui.inputs import close_completion
from coder.tui.messages import DropReason, StopTurn
from coder.tui.part import Part
from coder.tui.screens import HistorySearch, Picker, TranscriptScreen
from coder.tui.state import AppState
from coder.tui.widgets import CompletionList, Conversation, PromptInput
from coder.tui.work_view import PlanScreen

QUIT_WINDOW = 2.0
TRANSCRIPT_OUTPUT_LINES = 20  # of each tool call's output in Ctrl+T (`/export` writes more)
#: modal screens the app's priority keys (Esc, Ctrl+C, Ctrl+R) are handed to
MODALS = (HistorySearch, Picker, PlanScreen, TranscriptScreen, AgentsScreen)


class KeyActions(Part):
    """Reads the question on screen from the state and acts on widgets; stopping the turn and dropping a denial's
    reason go up as messages (StopTurn, DropReason)."""

    def __init__(self, app: App[Any], state: AppState, history: InputHistory) -> None:
        super().__init__(app, state)
        self.history = history
        self.last_ctrl_c = 0.0
        self.last_escape = 0.0

    @property
    def box(self) -> PromptInput:
        return self.app.query_one(PromptInput)

    @property
    def conversation(self) -> Conversation:
        return self.app.query_one(Conversation)

    def modal(self) -> Screen[Any] | None:
        """The history search, a picker, the plan or the transcript when open: the app's keys are priority
        bindings, so they reach the app even over a modal screen and must hand Esc / Ctrl+R / Ctrl+C to it (or the
        modal stays up and the next prompt typed goes into its filter instead of the input)."""
        screen = self.app.screen
        return screen if isinstance(screen, MODALS) else None

    # ---- Ctrl+C -----------------------------------------------------------------------------------------------
    def ctrl_c(self) -> None:
        modal = self.modal()
        if isinstance(modal, MODALS):
            modal.action_dismiss_none()
            return
        if self.copy_selection():
            return
        if self.state.busy or self.state.waiting:
            self.app.post_message(StopTurn())
            return
        box = self.box
        if box.text:
            box.set_text("")
            return
        now = time.monotonic()
        if now - self.last_ctrl_c < QUIT_WINDOW:
            self.app.exit()
            return
        self.last_ctrl_c = now
        self.app.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW)

    def copy_selection(self) -> bool:
        """Copy what is selected (the screen's mouse selection first, then the input's); True when something
        was. The terminal gets it by OSC 52 (most terminals, tmux with set-clipboard on)."""
        box = self.box
        screen = self.app.screen
        text = screen.get_selected_text() or box.selected_text
        if not text:
            return False
        self.app.copy_to_clipboard(text)
        screen.clear_selection()
        if box.selected_text:
            box.move_cursor(box.cursor_location)  # the input's selection is let go too: the next Ctrl+C clears
        self.app.notify(f"Copied {len(text):,} character{'s' if len(text) != 1 else ''}", timeout=1.5)
        return True

    # ---- Esc --------------------------------------------------------------------------------------------------
    def escape(self) -> None:
        modal = self.modal()
        if isinstance(modal, MODALS):
            modal.action_dismiss_none()
            return
        box = self.box
        if self.app.query_one(CompletionList).is_open:
            close_completion(self.app)
            return
        prompt = self.state.question
        on_prompt = prompt is not None and prompt.has_focus
        if self.app.focused is not box and not on_prompt:
            box.focus()  # back to the input, and nothing else: a reader pressing Esc keeps the turn running
            return
        if self.state.reason_for is not None and not on_prompt:
            self.app.post_message(DropReason())  # Esc while typing a denial reason: deny and stop, as on the prompt
        if prompt is not None and not prompt.answered:
            prompt.press("escape")  # its escape answer: deny and stop; not now
        elif self.state.busy:
            self.app.post_message(StopTurn())
        elif box.text.strip():  # idle with a draft: Esc twice clears it, as in Claude Code (Up brings it back)
            now = time.monotonic()
            if now - self.last_escape < QUIT_WINDOW:
                self.history.add(box.text)
                box.set_text("")
            else:
                self.last_escape = now
                self.app.notify("Esc again clears the input (Up brings it back)", timeout=QUIT_WINDOW)
        box.focus()

    # ---- keys that reach the app unhandled --------------------------------------------------------------------
    def unhandled(self, event: events.Key) -> None:
        """A printable key nobody took (the focus is on a tool block or the conversation): it was typing, so it
        goes into the input."""
        if self.modal() is not None or not event.is_printable or not event.character:
            return
        if self.app.focused is self.box:
            return
        event.stop()
        self.type_into_input(event.character)

    def type_ahead(self, typed: str) -> None:
        """Keys typed before coder took the terminal (coder/frontend/typeahead.py), into the input as if typed
        there: Enter (a line feed by then) sends what is before it; the keys typed since follow them."""
        box = self.box
        for character in typed:
            if character in "\r\n":
                box.send(box.text)
            elif character in "\x7f\b":
                box.action_delete_left()
            elif character.isprintable():
                box.insert(character)

    def type_into_input(self, character: str | None, key: str = "") -> None:
        box = self.box
        box.focus()
        if character and (len(character) > 1 or character.isprintable()):
            box.insert(character)
        elif key == "backspace":
            box.action_delete_left()
        box.last_edit_at = time.monotonic()

    # ---- scrolling and expanding from the input ---------------------------------------------------------------
    def scroll(self, key: str) -> None:
        conversation = self.conversation
        if key == "pageup":
            conversation.scroll_page_up(animate=False)
        elif key == "pagedown":
            conversation.scroll_page_down(animate=False)
        elif key == "ctrl+home":
            conversation.scroll_home(animate=False)
        elif key == "ctrl+end":
            conversation.follow(force=True)

    def tab(self) -> None:
        """Tab from the input (no completion open): to a waiting question, else the next widget."""
        prompt = self.state.question
        if prompt is not None and not prompt.answered:
            prompt.focus()
        else:
            self.app.screen.focus_next()

    def expand_last(self) -> None:
        """Ctrl+O: expand the newest tool block (or fold it again), without leaving the input."""
        blocks = list(self.app.query(ToolBlock))
        if not blocks:
            return
        block = blocks[-1]
        block.set_collapsed(not block.collapsed)
        if not block.collapsed:
            self.app.call_after_refresh(
                lambda: self.conversation.scroll_to_widget(block, animate=False, top=True))

    def background(self, running: list[ToolBlock]) -> None:
        """Ctrl+B (as in Claude Code): the running shell command goes on in the background and the model gets
        its call back at once (coder/tools/bash/jobs.py); a finished job shows as a note. `running`: the calls
        that have not finished (the app hands them down from the transcript)."""
        session = self.state.session
        if session is None or not self.state.busy or not running:
            self.app.notify("Ctrl+B sends a running command to the background; none is running", timeout=2.0)
            return
        session.background()
        running[-1].note("sending it to the background…")

    def toggle_wrap(self) -> None:
        """Alt+Z (as in VS Code), or /wrap: long lines of code blocks and tool output wrap, or keep their shape
        and scroll sideways. The choice holds for the app's life, across /clear and /resume."""
        self.set_wrap(self.app.has_class("nowrap"))

    def set_wrap(self, wrap: bool) -> None:
        self.app.set_class(not wrap, "nowrap")
        self.app.notify("Long lines wrap" if wrap else "Long lines scroll sideways (Shift+wheel or the scroll bar)",
                        timeout=2.0)

    def history_search(self) -> bool:
        """Ctrl+R over a modal: True when it was the modal's (the app opens the history search otherwise)."""
        modal = self.modal()
        if modal is not None:
            if isinstance(modal, (HistorySearch, Picker)):  # a list moves to its next match; others ignore Ctrl+R
                modal.action_next()
            return True
        return False

    def transcript_view(self) -> None:
        """Ctrl+T: the whole session, the folded blocks included, read from the store (coder/tui/screens.py)."""
        opened = self.state.opened
        if opened is None or self.modal() is not None:
            return
        store, sid = opened.store, opened.session.id

        def read(last: int | None, width: int) -> list[list[Segment]]:  # in the screen's worker, off the app's thread
            from coder.tui.session_text import session_lines  # lazy: read when first asked for

            console = Console(width=width, file=io.StringIO(), force_terminal=True, highlight=False)
            return session_lines(store.session(sid), [e.to_dict() for e in store.events(sid, last)], console, width,
                                 TRANSCRIPT_OUTPUT_LINES)

        def closed(_: None) -> None:
            self.box.focus()

        self.app.push_screen(TranscriptScreen(read), closed)
