"""The first-open question of the app: trust this repository's own servers, hooks, tools and config, or not now.

Asked only when the repository defines something that runs (see coder/trust/decisions.py); the answer is remembered
in the user's state dir, and a change to those files asks again. Keys: `t` trusts, `n` or Esc does not; nothing else
answers it, so type-ahead cannot."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from coder.base.termsafe import visible


class TrustScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    TrustScreen > Vertical { width: 90%; height: auto; max-height: 80%; border: round $warning;
                             background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("t", "answer(True)", "trust"), Binding("n", "answer(False)", "not now"),
                Binding("escape", "answer(False)", "not now")]

    def __init__(self, request: Any, reason: str) -> None:
        super().__init__()
        self.request = request
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]This repository is not trusted[/b] ({visible(self.reason)}).", markup=True)
            yield Static(visible(self.request.describe()), markup=False)
            yield Static("Untrusted, coder ignores all of that and still works on the code. Trust it only if you "
                         "know what those commands do.\n[b]t[/b] trust this repository · [b]n[/b] / Esc not now",
                         markup=True)

    def action_answer(self, trusted: bool) -> None:
        self.dismiss(trusted)
