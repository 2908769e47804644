"""Issue 24: `/review` and `/commit` showed "idle" for 5-10 s; each review stage now shows as it ends, in the app
(Pilot) and in the plain REPL, with the real review pipeline on a real repository."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from tui_support import (  # type: ignore[import-not-found]
    app_args,
    async_test,
    conversation_text,
    make_app,
    type_and_send,
    wait_for,
)

HELLO = {"turns": [{"text": "Hello."}]}
STAGES = {"stages": ["apply", "parse", "hygiene"]}


@async_test
async def test_review_stages_show_as_they_end(factory, git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.opened.config["review"] = STAGES
        await type_and_send(pilot, app, "/review")
        await wait_for(pilot, lambda: "review: " in conversation_text(app) and not app.info["state"].startswith("/"))
        text = conversation_text(app)
        for name in STAGES["stages"]:
            assert f"{name}: pass" in text, text
        assert text.index("✓ apply: pass") < text.index("✓ hygiene: pass") < text.index("review: pass")


def test_repl_prints_the_review_stages(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.tui.repl import Repl

    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    f = factory(HELLO)
    opener = f

    def opened_with_stages(*args, **kwargs):
        opened = opener(*args, **kwargs)
        opened.config["review"] = STAGES
        return opened

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("/review\n/quit\n"))
    monkeypatch.setattr(sys, "stdout", out)
    assert Repl(app_args(git_repo, plain=True), opener=opened_with_stages, out=out).run() == 0
    text = out.getvalue()
    assert "review apply: pass" in text and "review hygiene: pass" in text
