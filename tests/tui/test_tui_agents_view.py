"""Issue 47, the app's view of agents (through Pilot, the events as the engine sends them): the panel of running
agents stands above the status bar without hiding it, a `task` that started an agent in the background does not
read `background job True`, and following an agent shows its commands' output, not only their first line."""

from __future__ import annotations

from pathlib import Path

from tui_support import async_test, make_app, screen_text, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.frontend.calls import result_line
from coder.tui.agents_view import AgentsScreen

SCRIPT = {"turns": [{"text": "Started it."}]}


def started(ident: str = "a1") -> list[ev.Event]:
    return [ev.AgentStarted(ident, "writer", "write the notes", f"child-{ident}", True),
            ev.AgentUpdate(ident, "running", 2, 0.0123, 100, 20, 3.0, "the model")]


@async_test
async def test_the_agents_panel_leaves_the_status_bar_in_view(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.feed.queue.extend(started())
        await wait_for(pilot, lambda: "Ctrl+G: agents" in screen_text(app))
        lines = screen_text(app).splitlines()
        panel = next(i for i, line in enumerate(lines) if "a1 writer · write the notes" in line)
        status = next(i for i, line in enumerate(lines) if "idle │" in line and "mode ask" in line)
        assert panel < status  # both on screen: the panel above the bar (mode, model, cost, branch)


def test_an_agent_started_in_the_background_is_not_a_background_job() -> None:
    line = result_line("Started agent a1 (writer: notes) in the background.", False, 0.2,
                       {"agent": "a1", "background": True})
    assert "background job" not in line and "True" not in line and line.startswith("✓ Started agent a1")
    job = result_line("[sent to the background as bg1]", False, 1.0, {"background": "bg1"})
    assert job.startswith("⇥ background job bg1")  # the control: Ctrl+B's jobs still say so


@async_test
async def test_following_an_agent_shows_its_commands_output(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "go")
        run = "for i in $(seq 20); do echo step $i; done"
        relay = [ev.ToolCallRequested("c1", "bash", {"command": run}),
                 ev.ToolOutput("c1", "step 1\nstep 2\nst"), ev.ToolOutput("c1", "ep 3\nstep 4\n"),
                 ev.ToolCallFinished("c1", "bash", {"command": run}, "\n".join(f"step {i}" for i in range(1, 21)),
                                     False),
                 ev.ToolCallRequested("c2", "bash", {"command": "cat notes.txt"}),
                 ev.ToolCallFinished("c2", "bash", {"command": "cat notes.txt"}, "first\nsecond\nthird\n", False)]
        app.feed.queue.extend([*started(), *(ev.AgentRelay("a1", e) for e in relay)])
        await wait_for(pilot, lambda: "Ctrl+G: agents" in screen_text(app))
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentsScreen))
        await wait_for(pilot, lambda: "│ third" in screen_text(app))
        shown = screen_text(app)
        for n in (1, 2, 3, 4):
            assert f"│ step {n}" in shown  # live, a line split across two chunks whole
        assert "✓ 20 lines of output" in shown and "│ first" in shown and "│ second" in shown
        assert "│ step 5" not in shown  # what came live is not repeated from the result
        await pilot.press("escape")

