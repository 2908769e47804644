"""Issue 36 in the app, with the real session, the real sandbox and real git: a background agent that asks
permission while the parent's turn has ended (the question says which agent asks; the status bar and the panel
show its live cost and what it waits on), its end wakes the model, which merges its patch; the agents screen
(Ctrl+G) lists and follows it. And "deny and stop" on an agent's question stops that agent, not the session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agents_support import LOAD_AGENT_TOOLS, control, define_agent, start  # type: ignore[import-not-found]
from tui_support import answer, app_args, async_test, type_and_send, wait_armed, wait_for  # type: ignore[import-not-found]

from coder.tui.agents_view import AgentsPanel, AgentsScreen
from coder.tui.blocks import NoteBlock


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


def writer(tmp_path: Path) -> None:
    define_agent(tmp_path, "writer", [
        {"text": "Writing the notes.", "tool_calls": [{"name": "bash", "input": {
            "command": "printf 'from the agent\\n' > NOTES.md && echo written"}}]},
        {"text": "REPORT: wrote NOTES.md"},
    ], tools=("bash",))


def make(git_repo: Path, tmp_path: Path, turns: list[dict[str, Any]]) -> Any:
    from coder.frontend.history import InputHistory
    from coder.tui.app import CoderApp

    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS, *turns]}))
    args = app_args(git_repo, model=f"scripted:{script}", permission_mode="auto-edit", no_sandbox=False)
    return CoderApp(args, history=InputHistory(tmp_path / "hist.jsonl"))


async def agents_question(pilot: Any, app: Any) -> Any:
    """Agent a1's question, up and armed (the session's own, just answered, may still be going)."""
    await wait_for(pilot, lambda: app.questions.prompt is not None and app.questions.prompt.agent == "a1", 60)
    return await wait_armed(pilot, app)


def notes(app: Any) -> list[str]:
    return [str(n.render()) for n in app.query(NoteBlock)]


@async_test
async def test_a_background_agent_asks_the_user_and_its_patch_is_merged(git_repo: Path, tmp_path: Path) -> None:
    writer(tmp_path)
    app = make(git_repo, tmp_path, [
        {"text": "Handing it over.", "tool_calls": [start("writer", "write the notes", "notes")]},
        {"text": "The agent works; I wait for it."},
        {"text": "It is done: merging.", "tool_calls": [control("merge", "a1")]},
        {"text": "Merged."},
    ])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None, timeout=30)
        await type_and_send(pilot, app, "have the notes written")
        prompt = await answer(pilot, app, "once")  # the session's own question: may it start an agent that runs
        assert not prompt.asker
        # the agent's question, from its own thread, once the parent's turn has ended
        prompt = await agents_question(pilot, app)
        assert prompt.tool == "bash"
        await wait_for(pilot, lambda: not app.busy, timeout=30)
        shown = "\n".join(str(s.render()) for s in prompt.query("Static"))
        assert "agent a1 (writer: notes) asks:" in shown
        panel = str(app.query_one(AgentsPanel).render())
        assert "a1 writer · notes" in panel and "waiting on your answer" in panel
        assert "a1 $" in str(app.query_one("#status").render())  # the live cost per agent
        assert not (git_repo / "NOTES.md").exists()
        await answer(pilot, app, "once")
        # it ran in its own tree, ended, woke the model, which merged its patch into the work tree
        await wait_for(pilot, lambda: any("agent a1's patch: merged" in n for n in notes(app)), timeout=60)
        await wait_for(pilot, lambda: not app.busy, timeout=30)
        assert (git_repo / "NOTES.md").read_text() == "from the agent\n"
        assert any(n.startswith("agent a1 ended: done") for n in notes(app))
        assert not app.query_one(AgentsPanel).has_class("shown")  # nothing runs, nothing waits to be merged
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentsScreen))
        screen = app.screen
        await wait_for(pilot, lambda: "written" in str(screen.query_one("#log").render()))
        listed = str(screen.query_one("#agents").get_option_at_index(0).prompt)
        assert "a1 writer · notes" in listed and "done" in listed and "patch merged" in listed
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, AgentsScreen))


@async_test
async def test_deny_and_stop_on_an_agents_question_stops_only_that_agent(git_repo: Path, tmp_path: Path) -> None:
    writer(tmp_path)
    app = make(git_repo, tmp_path, [
        {"text": "Handing it over.", "tool_calls": [start("writer", "write the notes", "notes")]},
        {"text": "Waiting for it.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "It was stopped; I carry on."},
    ])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None, timeout=30)
        await type_and_send(pilot, app, "have the notes written")
        await answer(pilot, app, "once")
        await agents_question(pilot, app)
        assert app.busy  # the parent waits for its agent; the agent asks
        await pilot.press("escape")  # deny, and stop: the agent
        await wait_for(pilot, lambda: any(n.startswith("agent a1 ended: stopped") for n in notes(app)), timeout=60)
        await wait_for(pilot, lambda: not app.busy, timeout=30)
        assert not any("turn stopped" in n for n in notes(app))  # the parent's turn went on to its end
        assert app.session.history[-1].content[0].text == "It was stopped; I carry on."
        assert not (git_repo / "NOTES.md").exists()
