"""Issue 24: `/resume` and `/model` without an argument open a searchable list (a picker) in the app instead of
asking for a 22-character id or a model name to be typed; the plain REPL prints the same list as text."""

from __future__ import annotations

from pathlib import Path

from tui_support import (  # type: ignore[import-not-found]
    async_test,
    conversation_text,
    make_app,
    type_and_send,
    wait_for,
)

from coder.tui.screens import Picker

HELLO = {"turns": [{"text": "Hello."}, {"text": "Again."}]}


async def type_keys(pilot, text: str) -> None:
    for ch in text:
        await pilot.press("space" if ch == " " else ch)


@async_test
async def test_resume_picker_filters_and_resumes_the_chosen_session(factory, git_repo: Path,
                                                                   tmp_path: Path) -> None:
    ids = {}
    for prompt in ("fix the parser bug", "write the release notes"):
        opened = factory(HELLO)(lambda e: None, None, {})
        opened.session.send(prompt)
        ids[prompt] = opened.session.id
        opened.store.close()
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "/resume")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker))
        picker = app.screen
        assert {v for v, _ in picker.items} == set(ids.values())  # not the current session
        await type_keys(pilot, "release notes")
        await pilot.pause(0.1)
        assert [v for v, _ in picker.matches] == [ids["write the release notes"]]
        await pilot.press("enter")
        chosen = ids["write the release notes"]
        await wait_for(pilot, lambda: app.opened is not None and app.opened.session.id == chosen)
        await wait_for(pilot, lambda: "write the release notes" in conversation_text(app))


@async_test
async def test_model_picker_runs_model_with_the_choice_and_esc_cancels(factory, git_repo: Path,
                                                                      tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, Picker))
        assert "› /model " not in conversation_text(app).replace("› /model\n", "")
        await type_and_send(pilot, app, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker))
        await type_keys(pilot, "gpt 4.1 mini")
        await pilot.pause(0.1)
        assert [v for v, _ in app.screen.matches] == ["openai:gpt-4.1-mini"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: "› /model openai:gpt-4.1-mini" in conversation_text(app))


@async_test
async def test_model_refuses_a_hosted_name_the_table_does_not_know(factory, git_repo: Path, tmp_path: Path,
                                                                  monkeypatch) -> None:
    """`/model` accepted any name and the next request failed; a typo now says so, with the closest names."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        before = app.session.parts.provider.spec
        await type_and_send(pilot, app, "/model anthropic:claude-sonet-4-6")
        await wait_for(pilot, lambda: "not a model coder knows" in conversation_text(app))
        assert "`anthropic:claude-sonnet-4-6`" in conversation_text(app) and app.session.parts.provider.spec == before
        await type_and_send(pilot, app, "/model anthropic:claude-sonnet-4-6")
        await wait_for(pilot, lambda: "Model switched to `anthropic:claude-sonnet-4-6`" in conversation_text(app))
        await type_and_send(pilot, app, "/model anthropic:claude-next-preview --force")
        await wait_for(pilot, lambda: "Model switched to `anthropic:claude-next-preview`" in conversation_text(app))
