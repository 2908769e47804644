"""The app's side of notifications (coder/frontend/notify.py): the terminal's focus as Textual reports it, and the
sequence written through Textual's driver, on the app's thread (the engine's thread asks for it). A part of the
app (coder/tui/app.py)."""

from __future__ import annotations

from typing import Any

from textual.app import App

from coder.frontend.notify import Notifier, for_session


class Notifications:
    """`start` when a session opens; `turn_ended` and `question` from any thread."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.notifier: Notifier | None = None
        #: the focus as the terminal last reported it (None: no report yet, e.g. a terminal without focus reporting)
        self.terminal_focused: bool | None = None

    def start(self, opened: Any) -> Notifier:
        self.notifier = for_session(opened, self._terminal_write)
        self.notifier.focused = self.terminal_focused
        return self.notifier

    def stop(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
            self.notifier = None

    def turn_ended(self, reason: str) -> None:
        if self.notifier is not None:
            self.notifier.turn_ended(reason)

    def _terminal_write(self, text: str) -> None:
        if not self.app.is_running:  # the app is closing: its loop would not run the write
            return
        try:
            self.app.call_from_thread(self._driver_write, text)
        except RuntimeError:  # already on the app's thread
            self._driver_write(text)

    def _driver_write(self, text: str) -> None:
        driver = self.app._driver
        if not self.app.is_headless and driver is not None:  # as Textual's own App.bell writes the BEL
            driver.write(text)

    def focus_changed(self, focused: bool) -> None:
        self.terminal_focused = focused
        if self.notifier is not None:
            self.notifier.focused = focused
