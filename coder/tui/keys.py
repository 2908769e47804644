"""Keys of CoderApp that keep input from being lost or misread (issue 24). A mixin (see coder/tui/app.py).

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

import time
from typing import Any

from textual import events

from coder.tui.widgets import CompletionList, PromptInput, ToolBlock

QUIT_WINDOW = 2.0


class KeyActions:
    # ---- Ctrl+C -----------------------------------------------------------------------------------------------
    def action_ctrl_c(self) -> None:
        modal = self._modal()
        if modal is not None:
            modal.action_dismiss_none()
            return
        if self.copy_selection():
            return
        if self.busy or self.prompt_widget is not None:
            self.interrupt()
            return
        box = self.query_one(PromptInput)
        if box.text:
            box.set_text("")
            return
        now = time.monotonic()
        if now - self.last_ctrl_c < QUIT_WINDOW:
            self.exit()
            return
        self.last_ctrl_c = now
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW)

    def copy_selection(self) -> bool:
        """Copy what is selected (the screen's mouse selection first, then the input's); True when something
        was. The terminal gets it by OSC 52 (most terminals, tmux with set-clipboard on)."""
        box = self.query_one(PromptInput)
        text = self.screen.get_selected_text() or box.selected_text
        if not text:
            return False
        self.copy_to_clipboard(text)
        self.screen.clear_selection()
        if box.selected_text:
            box.move_cursor(box.cursor_location)  # the input's selection is let go too: the next Ctrl+C clears
        self.notify(f"Copied {len(text):,} character{'s' if len(text) != 1 else ''}", timeout=1.5)
        return True

    # ---- Esc --------------------------------------------------------------------------------------------------
    def action_escape(self) -> None:
        modal = self._modal()
        if modal is not None:
            modal.action_dismiss_none()
            return
        box = self.query_one(PromptInput)
        completion = self.query_one(CompletionList)
        if completion.is_open:
            completion.close()
            box.completion_open = False
            return
        prompt = self.prompt_widget
        on_prompt = prompt is not None and prompt.has_focus
        if self.focused is not box and not on_prompt:
            box.focus()  # back to the input, and nothing else: a reader pressing Esc keeps the turn running
            return
        if self.reason_for is not None and not on_prompt:
            self.reason_for = None  # Esc while typing a denial reason: deny and stop, as on the prompt
        if prompt is not None or self.busy:
            self.interrupt()
        box.focus()

    # ---- keys that reach the app unhandled --------------------------------------------------------------------
    async def on_key(self, event: events.Key) -> None:
        """A printable key nobody took (the focus is on a tool block's title or the conversation): it was
        typing, so it goes into the input."""
        if self._modal() is not None or not event.is_printable or not event.character:
            return
        box = self.query_one(PromptInput)
        if self.focused is box:
            return
        event.stop()
        self.type_into_input(event.character)

    def type_into_input(self, character: str | None, key: str = "") -> None:
        box = self.query_one(PromptInput)
        box.focus()
        if character and (len(character) > 1 or character.isprintable()):
            box.insert(character)
        elif key == "backspace":
            box.action_delete_left()
        box.last_edit_at = time.monotonic()

    # ---- scrolling and expanding from the input ---------------------------------------------------------------
    def scroll_key(self, key: str) -> None:
        conversation = self.conversation
        if key == "pageup":
            conversation.scroll_page_up(animate=False)
        elif key == "pagedown":
            conversation.scroll_page_down(animate=False)
        elif key == "ctrl+home":
            conversation.scroll_home(animate=False)
        elif key == "ctrl+end":
            conversation.follow(force=True)

    def action_expand_last(self) -> None:
        """Ctrl+O: expand the newest tool block (or fold it again), without leaving the input."""
        blocks = list(self.query(ToolBlock))
        if not blocks:
            return
        block = blocks[-1]
        block.collapsed = not block.collapsed
        if not block.collapsed:
            self.call_after_refresh(lambda: self.conversation.scroll_to_widget(block, animate=False, top=True))

    def action_background(self) -> None:
        """Ctrl+B (as in Claude Code): the running shell command goes on in the background and the model gets
        its call back at once (coder/tools/bash_jobs.py); a finished job shows as a note."""
        running = [b for blocks in self.tool_blocks.values() for b in blocks if not b.finished]
        if self.session is None or not self.busy or not running:
            self.notify("Ctrl+B sends a running command to the background; none is running", timeout=2.0)
            return
        self.session.background()
        running[-1].note("sending it to the background…")

    def action_toggle_wrap(self) -> None:
        """Alt+Z (as in VS Code), or /wrap: long lines of code blocks and tool output wrap, or keep their shape
        and scroll sideways. The choice holds for the app's life, across /clear and /resume."""
        self.set_wrap(self.has_class("nowrap"))

    def set_wrap(self, wrap: bool) -> None:
        self.set_class(not wrap, "nowrap")
        self.notify("Long lines wrap" if wrap else "Long lines scroll sideways (Shift+wheel or the scroll bar)",
                    timeout=2.0)

    def action_transcript(self) -> None:
        """Ctrl+T: the whole session, the folded blocks included, read from the store (coder/tui/screens.py)."""
        from coder.commands.transcript import transcript_markdown
        from coder.tui.screens import TranscriptScreen

        if self.opened is None or self._modal() is not None:
            return
        store, sid = self.opened.store, self.opened.session.id
        text = transcript_markdown(store.session(sid), [e.to_dict() for e in store.events(sid)])
        self.push_screen(TranscriptScreen(text), lambda _: self.query_one(PromptInput).focus())

    def focus_prompt_or_next(self) -> None:
        prompt = self.prompt_widget
        if prompt is not None and not prompt.answered:
            prompt.focus()
        else:
            self.screen.focus_next()

    # ---- the permission prompt's hand-offs --------------------------------------------------------------------
    def on_permission_prompt_typed(self, message: Any) -> None:
        self.type_into_input(message.character if message.key != "enter" else None, message.key)
