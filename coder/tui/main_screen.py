"""The app's own screen (the conversation, the input, the bars): Textual's `Screen`, arranged without a collection.

Textual's compositor arranges a screen with a recursive inner function (`Compositor._arrange_root`'s `add_widget`),
a reference cycle that holds the arrangement's map and its sets of widgets, the hidden ones included. Once the
arrangement is replaced the cycle is garbage, and a young collection frees it, unless a collection ran while the
arrangement was being made (it allocates several objects a widget, a few thousand for the conversation): the cycle,
alive then, moved to an older generation, and there only a full collection frees it. The app freezes its heap and
its full collections are rare (2 in a run of 2,000 tool calls: coder/tui/control.py), so a folded block
(coder/tui/transcript.py) stayed held by every arrangement it had been in that a collection had caught: on a loaded
machine, where more runs between two frames, `test_a_folded_block_is_freed_without_the_collector` saw them alive a
minute later. No collection runs while this screen is arranged, so each arrangement's cycle is young garbage when it
is dropped, whatever the machine's load.
"""

from __future__ import annotations

import gc

from textual._compositor import Compositor, CompositorMap
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget


class _Compositor(Compositor):
    def _arrange_root(self, root: Widget, size: Size, visible_only: bool = True) -> tuple[CompositorMap, set[Widget]]:
        if not gc.isenabled():  # someone else turned the collector off: theirs to turn on again
            return super()._arrange_root(root, size, visible_only)
        gc.disable()
        try:
            return super()._arrange_root(root, size, visible_only)
        finally:
            gc.enable()


class MainScreen(Screen[None]):
    """The screen the app starts on (`App.get_default_screen`)."""

    def __init__(self) -> None:
        super().__init__(id="_default")
        self._compositor = _Compositor()
