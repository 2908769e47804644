"""The app's side of notifications (coder/tui/notify.py): the terminal's focus as Textual reports it, and the
sequence written through Textual's driver, on the app's thread (the engine's thread asks for it)."""

from __future__ import annotations

from typing import Any


class NotifyActions:
    """Mixed into CoderApp: `start_notifier` when a session opens; `notify_turn_end` and `notify_question` from
    any thread."""

    notifier: Any = None
    #: the focus as the terminal last reported it (None: no report yet, e.g. a terminal without focus reporting)
    terminal_focused: bool | None = None

    def start_notifier(self, opened: Any) -> None:
        from coder.tui.notify import for_session

        self.notifier = for_session(opened, self._terminal_write)
        self.notifier.focused = self.terminal_focused

    def stop_notifier(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
            self.notifier = None

    def notify_turn_end(self, reason: str) -> None:
        if self.notifier is not None:
            self.notifier.turn_ended(reason)

    def notify_question(self, title: str) -> None:
        if self.notifier is not None:
            self.notifier.question(title)

    def _terminal_write(self, text: str) -> None:
        app: Any = self
        if not app.is_running:  # the app is closing: its loop would not run the write
            return
        try:
            app.call_from_thread(self._driver_write, text)
        except RuntimeError:  # already on the app's thread
            self._driver_write(text)

    def _driver_write(self, text: str) -> None:
        app: Any = self
        if not app.is_headless and app._driver is not None:  # as Textual's own App.bell writes the BEL
            app._driver.write(text)

    def on_app_focus(self, event: Any) -> None:
        self._focus(True)

    def on_app_blur(self, event: Any) -> None:
        self._focus(False)

    def _focus(self, focused: bool) -> None:
        self.terminal_focused = focused
        if self.notifier is not None:
            self.notifier.focused = focused
