"""Issue 24: `/permissions` lists the rules the person's "always" answers saved (this session's and this
project's) and takes them back, in the app with Pilot and the real rules policy."""

from __future__ import annotations

import json
from pathlib import Path

from tui_support import (  # type: ignore[import-not-found]
    answer,
    async_test,
    conversation_text,
    make_app,
    type_and_send,
    wait_armed,
    wait_for,
)

from coder.config.sections import PermissionsSettings
from coder.policy.rules import policy_from_config, remembered_rules_path

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "bash", "input": {"command": "npm test -- --watch=false"}}]},
    {"tool_calls": [{"name": "bash", "input": {"command": "make lint"}}]},
    {"text": "both ran"},
    {"tool_calls": [{"name": "bash", "input": {"command": "npm test -- --ci"}}]},
    {"tool_calls": [{"name": "bash", "input": {"command": "make lint"}}]},
    {"text": "ran again"},
]}


@async_test
async def test_permissions_lists_the_saved_rules_and_removes_them(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        policy = policy_from_config(PermissionsSettings(), "ask", deny=["bash(rm -rf*)"], project_dir=git_repo)
        app.opened.session.parts.policy = policy
        await type_and_send(pilot, app, "run the tests and lint")
        await answer(pilot, app, "project")  # always, in this project
        await wait_for(pilot, lambda: app.questions.prompt is not None and
                       app.questions.prompt.args.get("command") == "make lint")
        await answer(pilot, app, "always")  # always, in this session
        await wait_for(pilot, lambda: not app.busy)
        saved = json.loads(remembered_rules_path(git_repo).read_text())["allow"]
        assert saved == ["bash(npm test*)"]

        await type_and_send(pilot, app, "/permissions")
        await wait_for(pilot, lambda: "Saved answers" in conversation_text(app))
        text = conversation_text(app)
        assert "1. `bash(npm test*)` · this project" in text and "2. `bash(make lint*)` · this session" in text
        assert "deny `bash(rm -rf*)`" in text  # from the flags: listed, not removable here

        await type_and_send(pilot, app, "/permissions remove 1")
        await wait_for(pilot, lambda: "Removed `bash(npm test*)`" in conversation_text(app))
        assert json.loads(remembered_rules_path(git_repo).read_text())["allow"] == []
        await type_and_send(pilot, app, "/permissions remove 9")
        await wait_for(pilot, lambda: "Which one?" in conversation_text(app))

        opened = f.opened[0]

        def asked() -> list[str]:
            return [r.data["input"]["command"] for r in opened.store.events(opened.session.id)
                    if r.type == "permission_request"]

        assert asked() == ["npm test -- --watch=false", "make lint"]
        await type_and_send(pilot, app, "again")
        await wait_armed(pilot, app)  # npm test asks again; make lint (still saved for the session) will not
        assert app.questions.prompt.args["command"] == "npm test -- --ci"
        await answer(pilot, app, "once")
        await wait_for(pilot, lambda: not app.busy and "ran again" in conversation_text(app))
        assert asked()[2:] == ["npm test -- --ci"]  # make lint did not ask: its session rule stays
