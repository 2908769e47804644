"""Helpers for the frontend tests: a real session (scripted provider, real store, real git checkpoints, two small
real tools) opened the way `coder.engine.builder.open_session` opens one, so pilot tests do not depend on the
built-in tool set being complete."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from coder.base import events as ev
from coder.base import paths
from coder.config.layers import settings
from coder.context.base import PassthroughContext, Pinned
from coder.engine.builder import Opened
from coder.engine.history import rebuild
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy
from coder.store.db import SessionStore, new_session_id
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params
from coder.vcs.repo import Repo

WRITE = ToolContract("write_file", "Write a file.", {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}, "write")
SHELL = ToolContract("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}},
                                                "required": ["command"]}, "execute")


@dataclass(frozen=True)
class WriteParams(Params):
    path: str
    content: str


class WriteTool(Tool[WriteParams]):
    contract = WRITE

    def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        import difflib

        path = ctx.workspace / params.path
        old = path.read_text() if path.exists() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(params.content)
        diff = "".join(difflib.unified_diff(old.splitlines(True), params.content.splitlines(True),
                                            f"a/{params.path}", f"b/{params.path}"))
        return ToolResult(f"wrote {params.path}", files_changed=[params.path], data={"diff": diff})


@dataclass(frozen=True)
class Command(Params):
    command: str


class EchoShell(Tool[Command]):
    """Stands in for the sandboxed shell: echoes, so tests need no sandbox."""

    contract = SHELL

    def facts(self, params: Command) -> CallFacts:
        """A shell, as the real one says (the rules policy matches `bash(...)` rules on the line)."""
        return CallFacts(f"bash: {params.command}", params.command, shell=params.command)

    def run(self, params: Command, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"ran: {params.command}\nexit 0")


@dataclass
class Factory:
    workspace: Path
    script: dict[str, Any]
    mode: str = "ask"
    chunk_delay: float = 0.0
    opened: list[Opened] = field(default_factory=list)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    #: the session's context manager, made from the provider (default: the whole history, never compacted)
    context: Callable[[Any], Any] | None = None

    def __call__(self, on_event: Callable[[ev.Event], None], ask: Callable, override: dict[str, Any]) -> Opened:
        store = SessionStore(paths.sessions_db())
        row = store.session(override["resume"]) if override.get("resume") else None
        restored = rebuild(store.stored(row.id)) if row else None
        self.overrides.append(dict(override))
        mode = override.get("permission_mode") or self.mode
        provider = ScriptedProvider(self.script, chunk_delay=self.chunk_delay)
        if override.get("model") and override["model"] != provider.spec:  # `/model SPEC` then `/clear`
            from coder.models.registry import create_provider

            provider = create_provider(override["model"], {})
        sid = row.id if row else new_session_id()
        if row is None:
            store.create_session(sid, str(self.workspace), str(self.workspace), provider.spec)

        def record(event: ev.Event) -> None:
            if event.persist:
                store.append(sid, event)
            on_event(event)

        from coder.vcs.checkpoints import Checkpoints

        checkpoints = Checkpoints(Repo.open(self.workspace), sid)
        ctx = ToolContext(self.workspace, self.workspace, sid, threading.Event(), paths.session_dir(sid))
        parts = SessionParts(sid, provider, {"write_file": WriteTool(), "bash": EchoShell()}, ModePolicy(mode),
                             self.context(provider) if self.context else PassthroughContext(), ctx, "system",
                             Pinned(), Limits(), record, ask,
                             checkpointer=checkpoints)
        session = Session(parts, restored)
        record(ev.SessionStart(sid, provider.spec, str(self.workspace), str(self.workspace), mode,
                               "off (test)", True, resumed=row is not None))
        opened = Opened(session, store, settings({"vcs": {"hooks": "skip"}}), self.workspace, True, row is not None)
        self.opened.append(opened)
        return opened


def app_args(workspace: Path, **kw: Any) -> SimpleNamespace:
    base = dict(cwd=str(workspace), model=None, permission_mode="ask", resume=None, continue_last=False, allow=[],
                deny=[], no_sandbox=True, plain=False)
    base.update(kw)
    return SimpleNamespace(**base)


def async_test(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run an async test body in a fresh event loop (no pytest-asyncio needed); fixtures still resolve."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


async def wait_for(pilot: Any, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Pause the app until `predicate()` holds; the deadline is for a hang (a loaded machine is slow, not stuck)."""
    import asyncio

    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.05)


def type_at_prompt(type_text: Callable[[str], None], screen: Callable[[], str], clear: Callable[[], None],
                   text: str, timeout: float = 30.0) -> None:
    """Type `text` at `--plain`'s prompt in a real terminal: keys typed before prompt-toolkit reads the terminal
    are lost (on a loaded machine it starts reading late), so it is typed again, after `clear` (Ctrl+U), until the
    prompt shows it."""
    end = time.monotonic() + timeout
    while True:
        type_text(text)
        shown_by = time.monotonic() + 3
        while time.monotonic() < shown_by:
            lines = [line.rstrip() for line in screen().splitlines() if line.strip()]
            if any(line.endswith(f"> {text}") for line in lines[-8:]):  # a completion menu may follow it
                return
            time.sleep(0.1)
        assert time.monotonic() < end, f"the prompt never took {text!r}; the screen was:\n{screen()}"
        clear()


def screen_text(app: Any) -> str:
    """The screen as plain text (what a snapshot compares), lines right-stripped."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


def conversation_text(app: Any) -> str:
    """Every block of the conversation as text: Markdown sources, tool titles, note texts."""
    from coder.tui.blocks import ToolBlock

    out = []
    for widget in app.query("#conversation > *"):
        if hasattr(widget, "source"):
            out.append(widget.source)
        elif isinstance(widget, ToolBlock):
            out.append(str(widget.title))
        else:
            out.append(str(widget.render()))
    return "\n".join(out)


def make_app(factory: Any, workspace: Path, tmp_path: Path, script: dict[str, Any], **kw: Any) -> tuple[Any, Any]:
    from coder.frontend.history import InputHistory
    from coder.tui.app import CoderApp

    f = factory(script, **kw)
    app = CoderApp(app_args(workspace), opener=f, history=InputHistory(tmp_path / "hist.jsonl"))
    return app, f


async def type_and_send(pilot: Any, app: Any, text: str) -> None:
    from coder.tui.widgets import PromptInput

    box = app.query_one(PromptInput)
    box.focus()
    box.set_text(text)
    await pilot.press("enter")


async def wait_armed(pilot: Any, app: Any) -> Any:
    """Wait until a question is up, has the focus and is armed (its keys answer only then)."""
    await wait_for(pilot, lambda: app.questions.prompt is not None and app.questions.prompt.armed)
    return app.questions.prompt


async def answer(pilot: Any, app: Any, which: str) -> Any:
    """Answer the waiting question with the choice `which` (once, always, project, deny, reason; trust, not_now)
    as a person does: its number once the question is armed; for a choice that grants something lasting, Enter
    opens its confirmation, and once that counts keys (drawn, then CONFIRM_DWELL with no key), Down and Enter
    save it (coder/frontend/choices.py)."""
    prompt = await wait_armed(pilot, app)
    choices = prompt.question.choices
    number = next(i for i, choice in enumerate(choices, 1) if choice.answer == which)
    await pilot.press(str(number))
    if choices[number - 1].lasting:
        await pilot.press("enter")
        await wait_for(pilot, lambda: prompt.chooser.confirming and prompt.chooser.ready(time.monotonic()))
        await pilot.press("down", "enter")
    return prompt
