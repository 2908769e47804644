"""The app's parts hold no sibling (issue 48, item 6): they are handed the app and the state, post messages up, and
the app hands each message to the part concerned. The one part a part holds, the feed's transcript, is named in
coder/tui/app.py's docstring with why. Checked in the source (benchmarks/tui_wiring.py's counts, with planted
controls) and in a running app after a session has worked (a field set later, an alias or a bound method the
source check cannot see). The parts' class refuses such a field when it is set (coder/tui/part.py)."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from tui_support import answer, async_test, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
#: the one sibling field left, and why: coder/tui/app.py's docstring
ALLOWED = ["feed.transcript"]

WRITE_SCRIPT = {"turns": [
    {"text": "Writing.", "tool_calls": [{"name": "write_file", "input": {"path": "w.txt", "content": "w\n"}}]},
    {"text": "Done."},
]}


def _wiring() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tui_wiring  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return tui_wiring


def test_no_part_holds_a_sibling_in_the_source() -> None:
    m = _wiring().measure(ROOT)
    assert m.late == []
    assert m.siblings == ALLOWED
    assert m.through_app == []
    assert {p: n for p, n in m.peers.items() if n} == {"feed": 1}
    assert m.app_fields == m.app_handed == len(m.parts) >= 10  # every part is handed the app, and keeps it


def test_the_source_check_finds_a_planted_sibling(tmp_path: Path) -> None:
    """Control: a part handed a peer, a part reaching one through the app, a callback attached later."""
    shutil.copytree(ROOT / "coder" / "tui", tmp_path / "coder" / "tui")
    app_py, questions_py = tmp_path / "coder/tui/app.py", tmp_path / "coder/tui/questions.py"
    text = app_py.read_text()
    assert "self.questions = Questions(self, self.state)" in text
    app_py.write_text(text.replace("self.questions = Questions(self, self.state)",
                                   "self.questions = Questions(self, self.state, self.status.refresh)\n"
                                   "        self.work.late = self.questions.close"))
    text = questions_py.read_text()
    anchor = "    def __init__(self, app: App[Any], state: AppState) -> None:\n        super().__init__(app, state)\n"
    assert anchor in text
    questions_py.write_text(text.replace(anchor, "    def __init__(self, app: App[Any], state: AppState, redraw) -> "
                                                 "None:\n        super().__init__(app, state)\n"
                                                 "        self.redraw = redraw\n        self.feed = self.app.feed\n"))
    m = _wiring().measure(tmp_path)
    assert m.siblings == ["questions.redraw", *ALLOWED]
    assert m.peers["questions"] == 1
    assert [line.split(" ", 1)[1] for line in m.through_app] == ["self.app.feed"]
    assert [line.split(" ", 1)[1] for line in m.late] == ["self.work.late = self.questions.close"]


def _held(app: Any, names: list[str]) -> list[str]:
    """What each part holds of another part, at run time: a field that is one, a bound method of one, or either
    inside a list, tuple, set or dict field."""
    parts = {id(getattr(app, name)): name for name in names}
    found: list[str] = []
    for name in names:
        for attr, value in vars(getattr(app, name)).items():
            values = list(value.values()) if isinstance(value, dict) else \
                list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
            for item in values:
                target = item.__self__ if isinstance(item, types.MethodType) else item
                other = parts.get(id(target))
                if other is not None and other != name:
                    found.append(f"{name}.{attr}")
    return sorted(set(found))


@async_test
async def test_no_part_holds_a_sibling_in_a_running_app(factory, git_repo: Path, tmp_path: Path) -> None:
    names = _wiring().measure(ROOT).parts
    app, _ = make_app(factory, git_repo, tmp_path, WRITE_SCRIPT)
    assert _held(app, names) == ALLOWED
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write it")
        await answer(pilot, app, "once")  # a question went up and was answered: questions, feed, status, control
        await wait_for(pilot, lambda: not app.busy and (git_repo / "w.txt").exists())
        assert _held(app, names) == ALLOWED
        app.keys.later = [app.control.send]  # control: a bound method of a sibling, kept in a list
        assert _held(app, names) == ["feed.transcript", "keys.later"]


def test_a_part_refuses_to_hold_another(tmp_path: Path, git_repo: Path) -> None:
    """The rule is the parts' class's (coder/tui/part.py): setting a field to another part, or to a bound method
    of one, raises wherever it is done; the feed's transcript, declared, is the one it takes."""
    from tui_support import app_args  # type: ignore[import-not-found]

    from coder.tui.app import CoderApp
    from coder.tui.part import Part

    app = CoderApp(app_args(git_repo))
    names = _wiring().measure(ROOT).parts
    assert all(isinstance(getattr(app, name), Part) for name in names)
    with pytest.raises(TypeError, match=r"KeyActions.control = SessionControl: a part holds no other part"):
        app.keys.control = app.control
    with pytest.raises(TypeError, match=r"WorkView.resolve = Questions"):
        app.work.resolve = app.questions.resolve
    with pytest.raises(TypeError, match=r"EventFeed.status = StatusLine"):
        app.feed.status = app.status
    app.feed.transcript = app.transcript  # declared in EventFeed.HOLDS
    app.keys.redraw = app.keys.tab  # its own method: not another part
    assert _held(app, names) == ALLOWED
