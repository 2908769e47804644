"""What a part of the app is (coder/tui/app.py lists them): a plain object handed the app, its parent, and the
state the parts share, and nothing of another part (issue 48, item 6: Textual's "attributes down, messages up").

The rule is the class's, checked where it would be broken: setting a field of a part to another part, or to a
bound method of one, raises, whatever the code that does it. A part that needs another to act posts a message to
the app (coder/tui/messages.py). The one part a part may hold is declared by name in its `HOLDS`, with why.
"""

from __future__ import annotations

from types import MethodType
from typing import Any, ClassVar

from textual.app import App

from coder.tui.state import AppState


class Part:
    #: fields this part may set to another part (each named with why in coder/tui/app.py's docstring)
    HOLDS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, app: App[Any], state: AppState) -> None:
        self.app = app
        self.state = state

    def __setattr__(self, name: str, value: object) -> None:
        held = value.__self__ if isinstance(value, MethodType) else value
        if isinstance(held, Part) and held is not self and name not in self.HOLDS:
            raise TypeError(f"{type(self).__name__}.{name} = {type(held).__name__}: a part holds no other part; "
                            "post a message to the app (coder/tui/messages.py)")
        object.__setattr__(self, name, value)
