"""Issue 24, bug 6: the apply_patch prompt showed escaped JSON and named (and offered a rule for) only the first
file of a multi-file patch. With Pilot, the real apply_patch tool and the real rules policy: the prompt names
every file, shows the patch as a diff, and "always" remembers a rule for each file."""

from __future__ import annotations

from pathlib import Path

from tui_support import (  # type: ignore[import-not-found]
    answer,
    async_test,
    conversation_text,
    make_app,
    screen_text,
    type_and_send,
    wait_armed,
    wait_for,
)

from coder.config.sections import PermissionsSettings
from coder.policy.patterns import Rule
from coder.policy.rules import policy_from_config
from coder.tools.patch_tool import ApplyPatchTool
from coder.tools.registry import load_contracts

PATCH = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-    return 'hello ' + name\n+    return 'hi ' + name\n"
         "*** Add File: docs/notes.md\n+# Notes\n*** End Patch\n")
SCRIPT = {"turns": [{"tool_calls": [{"name": "apply_patch", "input": {"patch": PATCH}}]}, {"text": "patched"}]}


@async_test
async def test_a_multi_file_patch_prompt_names_every_file_and_remembers_each(factory, git_repo: Path,
                                                                            tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        session = app.opened.session
        session.parts.policy = policy_from_config(PermissionsSettings(), "ask", project_dir=git_repo)
        session.parts.tools["apply_patch"] = ApplyPatchTool(load_contracts()["apply_patch"])
        await type_and_send(pilot, app, "greet with hi and add notes")
        await wait_armed(pilot, app)
        screen = screen_text(app)
        assert "patch src/app.py, docs/notes.md" in screen
        assert "+    return 'hi ' + name" in screen and "+# Notes" in screen  # the patch as lines, not JSON
        assert "\\n" not in screen and '"patch"' not in screen
        assert "edit(src/app.py), edit(docs/notes.md)" in screen
        await answer(pilot, app, "always")
        await wait_for(pilot, lambda: not app.busy)
        assert "saved: allow edit(src/app.py), edit(docs/notes.md) for this session" in conversation_text(app)
        assert "'hi '" in (git_repo / "src" / "app.py").read_text() and (git_repo / "docs" / "notes.md").exists()
        assert {Rule.parse("edit(src/app.py)"), Rule.parse("edit(docs/notes.md)")} <= set(
            session.parts.policy.session_allow)
