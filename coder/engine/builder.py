"""Assembles a Session from options and configuration: the composition root shared by every frontend.

Optional services (the rules policy, the tiered context manager, checkpoints, hooks) are imported here and only
here, so the loop in session.py stays free of them and each can be swapped in a test."""

from __future__ import annotations

import datetime
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, Callable

from coder import __version__, paths
from coder.config import load_config
from coder.context.base import PassthroughContext, Pinned
from coder.engine import events as ev
from coder.engine.history import rebuild
from coder.engine.session import AskHandler, Limits, Session, SessionParts, no_questions
from coder.errors import UsageError
from coder.instructions import discover
from coder.resources import prompt
from coder.store.db import SessionStore, new_session_id
from coder.tools.base import ToolContext


@dataclass
class SessionOptions:
    cwd: Path
    model: str | None = None
    permission_mode: str | None = None
    max_turns: int | None = None
    max_cost: float | None = None
    max_wall_time: float | None = None
    resume: str | None = None
    continue_last: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    no_sandbox: bool = False


@dataclass
class Opened:
    session: Session
    store: SessionStore
    config: dict[str, Any]
    workspace: Path
    is_git: bool
    resumed: bool


def git_root(cwd: Path) -> Path | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _optional(module: str, attr: str) -> Any | None:
    """An optional service's factory, or None while that package does not provide it."""
    import importlib

    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def open_session(options: SessionOptions, on_event: Callable[[ev.Event], None],
                 ask: AskHandler = no_questions) -> Opened:
    """Open a new or resumed session. Raises CoderError subclasses for every user mistake."""
    cwd = options.cwd.expanduser().resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {options.cwd}: not a directory.")
    root = git_root(cwd)
    workspace = root or cwd
    flags = {"model": options.model, "permission_mode": options.permission_mode, "max_turns": options.max_turns,
             "max_cost": options.max_cost, "max_wall_time": options.max_wall_time}
    config = load_config(workspace, flags)
    if options.no_sandbox:
        config["sandbox"]["enabled"] = False

    store = SessionStore(paths.sessions_db())
    row = None
    if options.resume:
        row = store.session(options.resume)
    elif options.continue_last:
        row = store.latest(str(workspace))
        if row is None:
            raise UsageError(f"--continue: no earlier session in {workspace}.")
    restored = rebuild(e.to_dict() for e in store.events(row.id)) if row else None
    model_spec = options.model or (row.model if row else None) or config.get("model")

    from coder.models.registry import create_provider  # lazy: pulls in the SDKs

    provider = create_provider(model_spec, config)
    session_id = row.id if row else new_session_id()
    if row is None:
        store.create_session(session_id, str(workspace), str(cwd), provider.spec)
    else:
        store.set_status(session_id, "running")

    def record(event: ev.Event) -> None:
        if event.persist:
            store.append(session_id, event.type, event.to_dict())
        on_event(event)

    from coder.tools.registry import builtin_tools

    state = paths.session_dir(session_id)
    state.mkdir(parents=True, exist_ok=True)
    tool_ctx = ToolContext(workspace, cwd, session_id, threading.Event(), state, config)
    mode = config["permission_mode"]
    policy_factory = _optional("coder.policy.rules", "policy_from_config")
    if policy_factory is not None:
        policy = policy_factory(config, mode, options.allow, options.deny, workspace)
    else:
        from coder.policy.base import ModePolicy

        policy = ModePolicy(mode)
    context_factory = _optional("coder.context.manager", "TieredContext")
    context = context_factory(provider, config, state) if context_factory else PassthroughContext()
    checkpointer = None
    checkpoints_cls = _optional("coder.vcs.checkpoints", "Checkpoints") if root else None
    if checkpoints_cls is not None:
        checkpointer = checkpoints_cls(workspace, session_id)
    hooks_factory = _optional("coder.ext.hooks", "hooks_from_config")
    hooks = hooks_factory(config, workspace, session_id, lambda m: record(ev.ErrorEvent(m))) if hooks_factory else None

    instructions = discover(workspace, cwd, int(config["instructions"].get("max_bytes", 32_000)))
    sandbox_state = sandbox_status(config)
    system = render_system_prompt(workspace, cwd, root is not None, sandbox_state, instructions.text)
    tools = builtin_tools()
    custom = _optional("coder.ext.custom_tools", "load_custom_tools")
    if custom is not None:
        tools.update(custom(workspace, set(tools)))
    parts = SessionParts(
        session_id=session_id, provider=provider, tools=tools, policy=policy, context=context,
        tool_ctx=tool_ctx, system_prompt=system, pinned=Pinned(instructions=instructions.text),
        limits=Limits(int(config["max_turns"]), float(config["max_cost"]), float(config["max_wall_time"])),
        record=record, ask=ask, checkpointer=checkpointer, hooks=hooks,
        max_tokens=int(config["max_tokens"]), thinking_budget=config.get("thinking_budget"),
    )
    if "task" in tools:
        from coder.engine.subagents import Parent, make_spawner

        tool_ctx.services["spawn_subagent"] = make_spawner(Parent(session_id, provider, config, store, tool_ctx))
    session = Session(parts, restored)
    record(ev.SessionStart(session_id, provider.spec, str(workspace), str(cwd), mode, sandbox_state, root is not None,
                           resumed=row is not None, version=__version__))
    if root is None:
        record(ev.ErrorEvent("not a git repository: checkpoints, /undo and commits are off"))
    if instructions.truncated:
        record(ev.ErrorEvent(f"project instructions were cut at {config['instructions'].get('max_bytes')} characters"))
    return Opened(session, store, config, workspace, root is not None, row is not None)


def sandbox_status(config: dict[str, Any]) -> str:
    if not config["sandbox"].get("enabled", True):
        return "off (--no-sandbox)"
    check = _optional("coder.sandbox.check", "check_sandbox")
    if check is None:
        return "unavailable (sandbox not built)"
    result = check()
    return "bubblewrap" if result.ok else f"unavailable: {result.detail}"


def render_system_prompt(workspace: Path, cwd: Path, is_git: bool, sandbox_state: str, instructions: str) -> str:
    git_state = "a git repository; coder checkpoints the tree after every turn" if is_git else \
        "not a git repository: checkpoints and commits are off"
    hint = ("the network is off, the file system is read-only outside the workspace and /tmp, and secrets are "
            "not in the environment." if sandbox_state == "bubblewrap" else f"state: {sandbox_state}.")
    section = f"\n# Project instructions (AGENTS.md)\n{instructions}\n" if instructions else ""
    return Template(prompt("system.md")).safe_substitute(
        workspace=str(workspace), cwd=str(cwd), date=datetime.date.today().isoformat(), git_state=git_state,
        sandbox_state=sandbox_state, sandbox_hint=hint, instructions=section,
    )


def environment_keys() -> dict[str, bool]:
    """Which API keys are present (never their values)."""
    return {k: bool(os.environ.get(k)) for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
