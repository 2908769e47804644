"""Issue 32, item 3 in the interactive frontends: a command that floods its output (a 5-second `yes`, a 10 MB line)
reaches the app and `--plain` bounded, and the result still says how it ended. Pilot (the events the app is
handed, counted) and tmux with the real binary and the real sandboxed shell (what the terminal shows)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from terminal_support import Tmux, coder_command, quit_plain  # type: ignore[import-not-found]
from tui_support import async_test, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.engine.live_output import HEAD
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params
from coder.tui.blocks import ToolBlock

#: 4 MB of lines and a 10 MB line, under the shell's own 16 MB stop (tests/cli/test_cli_live_output.py goes over it)
FLOOD = "timeout 5 yes | head -c 4000000; head -c 10000000 /dev/zero | tr '\\\\0' x; echo; echo THE-END"


@dataclass(frozen=True)
class NoParams(Params):
    pass


class Flood(Tool[NoParams]):
    """Writes 20 MB of live output in small pieces, as a chatty command does, then returns a short result."""

    contract = ToolContract("flood", "Print a lot.", {"type": "object", "properties": {}}, "read")

    def facts(self, params: NoParams) -> CallFacts:
        return CallFacts("flood", "")

    def run(self, params: NoParams, ctx: ToolContext) -> ToolResult:
        assert ctx.progress is not None
        for _ in range(20_000):
            ctx.progress("y\n" * 500)
        return ToolResult("y\n… 10,000,000 lines cut …\nTHE-END", data={"exit_code": 0})


@async_test
async def test_the_app_is_handed_a_bounded_stream(factory, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "flood", "input": {}}]}, {"text": "flooded"}]}
    app, f = make_app(factory, git_repo, tmp_path, script, mode="auto")
    async with app.run_test(size=(110, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.session.parts.tools["flood"] = Flood()
        seen: list[ev.ToolOutput] = []
        record = app.session.parts.record

        def counting(event: ev.Event) -> None:
            if isinstance(event, ev.ToolOutput):
                seen.append(event)
            record(event)

        app.session.parts.record = counting
        await type_and_send(pilot, app, "flood")
        await wait_for(pilot, lambda: not app.busy, timeout=60)
        shown = "".join(e.text for e in seen)
        assert HEAD <= len(shown) < HEAD + 400 and len(seen) < 100  # 20 MB were written
        block = next(b for b in app.query(ToolBlock) if b.call_id == seen[0].id)
        assert "THE-END" in str(block.title) or "✓" in str(block.title)


def test_the_app_and_plain_in_tmux_stay_small_and_say_the_end(git_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "flood.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "bash", "input": {"command": FLOOD, "timeout": 60}}]}, {"text": "FLOODED."}]}))
    for extra in ((), ("--plain",)):
        tmux = Tmux(tmp_path, coder_command(script, "--permission-mode", "auto", *extra), git_repo)
        try:
            tmux.wait("auto>" if extra else "idle │")
            tmux.type("flood please")
            tmux.send("Enter")
            screen = tmux.wait("FLOODED.", timeout=120)
            assert "✓ y … " in screen, screen  # the call's one-line result: its first line and how many more
            history = tmux.run("capture-pane", "-p", "-S", "-", "-t", "t")  # everything the pane printed
            assert len(history.splitlines()) < 400, len(history.splitlines())
            if extra:
                assert "more output: the result has the whole text" in history
                tmux.wait("ctx ")  # the turn's status line: the prompt is next
                time.sleep(0.3)
            else:
                tmux.wait("idle │")
            tmux.type("/quit")
            tmux.send("Enter")
            tmux.wait("EXIT=0")
        finally:
            tmux.close()


def test_plain_shows_the_lines_a_command_prints_as_it_ends(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: `--plain` showed a command's lines as they came, except those read together with the
    shell's end marker (a test runner's summary, the last line a builtin prints): they were in the result only,
    folded into `… 2 more lines`, so the terminal never showed them. Three calls whose last two lines come at
    the end: every one of them is on the screen, each once."""
    turns: list[dict[str, object]] = []
    for n in range(3):
        command = f"echo c{n}-first; sleep 1; printf 'c{n}-second\\nc{n}-last\\n'"
        turns += [{"text": f"Call {n}.", "tool_calls": [{"name": "bash", "input": {"command": command}}]}]
    turns.append({"text": "PRINTED."})
    script = tmp_path / "ends.json"
    script.write_text(json.dumps({"turns": turns}))
    tmux = Tmux(tmp_path, coder_command(script, "--permission-mode", "auto", "--plain"), git_repo, width=110,
                height=40)
    try:
        tmux.wait("auto>")
        tmux.type_at_prompt("print")
        tmux.send("Enter")
        screen = tmux.wait("PRINTED.", timeout=60)
        for n in range(3):
            for word in ("first", "second", "last"):
                assert screen.count(f"│ c{n}-{word}") == 1, screen
        tmux.wait("ctx ")
        quit_plain(tmux)
    finally:
        tmux.close()
