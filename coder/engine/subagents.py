"""Child sessions: their own history, tools and budget; the caller gets only the report. Children are stored as
sessions with a parent_id, so `coder sessions show` can replay them. Which child runs when, in the background or
not, in which tree, is coder/engine/agents.py; this module makes one child session.

A child inherits and never escalates:
- its mode is the lower of its agent's and its parent's (plan < ask < auto-edit < auto), read at each spawn, so
  a parent switched to plan mode starts only plan-mode children;
- its policy is a copy of the parent's policy object, so every allow / ask / deny rule the parent has (config,
  `.coder/permissions.json`, `--allow` / `--deny` flags) holds inside it, with nothing read again from disk; a
  child in an isolated tree has the same rules about that tree (its workspace);
- the "always allow" answers the user gave this session so far carry over (copied at the spawn);
- it asks through the parent's frontend (issue 36): in the app the user answers, the question says which agent
  asks; headless, an ask is a denial the child reads. An answer "always, in this project" is the user's for the
  project, so the parent's policy keeps it too; "for this session" stays with the child;
- the parent's before_tool / after_tool hooks run around every child tool call;
- its turn and cost limits are the agent's, capped by the parent's configured ones;
- agent definitions are the session's, read once when it opened (`Parent.agents`);
- it never gets a tool that starts or steers agents (no grandchildren).
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from coder import __version__
from coder.base import events as ev
from coder.base import paths
from coder.base.resources import template
from coder.config.sections import Config
from coder.context.base import PassthroughContext, Pinned
from coder.engine.hook_steps import Hooks
from coder.engine.session import Session
from coder.engine.session_parts import AskHandler, Limits, SessionParts, no_questions
from coder.ext.agents import AgentDefinition
from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.lsp.hook import install as install_language_servers
from coder.models.registry import create_provider
from coder.models.types import ModelProvider
from coder.policy.base import MODES, PermissionAnswer, PermissionPolicy
from coder.store.db import SessionStore, new_session_id
from coder.stuck.guard import StuckGuard
from coder.tools.base import ToolCall, ToolContext, ToolResult
from coder.tools.registry import builtin_tools

#: a child's own wall-time limit per turn (seconds)
CHILD_WALL_TIME = 900.0


@dataclass
class Parent:
    session_id: str
    provider: ModelProvider
    config: Config
    store: SessionStore
    tool_ctx: ToolContext  # the parent's: its cancel event stops a foreground child too
    #: the parent's live policy object (its mode may change during the session; rules include the flags)
    policy: PermissionPolicy
    hooks: Hooks | None = None
    #: name -> AgentDefinition, read once at session open
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    #: the frontend's answer to a permission question (children ask through it)
    ask: AskHandler = no_questions
    #: the frontend alone (a child's events reach it tagged; its own session stores them)
    relay: Callable[[ev.Event], None] = lambda event: None
    #: the parent's stream: persisted in the parent's session and passed to the frontend
    record: Callable[[ev.Event], None] = lambda event: None
    #: the sandbox's state as the parent's session start said it, and whether the workspace is a git repository
    sandbox: str = ""
    git: bool = False


@dataclass
class ChildRun:
    """One child to open: which agent with which task, where it works, and who watches its events."""

    ident: str
    agent: AgentDefinition
    prompt: str
    description: str
    workspace: Path
    cwd: Path
    cancel: threading.Event
    background: bool
    #: its stored session's id (known before it opens, so the parent's record of its start names it)
    session_id: str = field(default_factory=new_session_id)
    #: folders its sandbox may read besides its workspace (an isolated tree's borrowed object store)
    extra_ro: list[str] = field(default_factory=list)
    #: sees each of the child's events first (the agents' tracker)
    observe: Callable[[ev.Event], None] = lambda event: None


def child_mode(agent_mode: str, parent_mode: str) -> str:
    """The lower of the two modes: a child never runs with more freedom than its parent has."""
    return min(agent_mode, parent_mode, key=MODES.index)


def child_policy(parent: PermissionPolicy, mode: str, workspace: Path | None = None,
                 cwd: Path | None = None) -> PermissionPolicy:
    """A deep copy of the parent's policy with the child's mode: every rule and remembered answer the parent has
    at this moment, and nothing the child does (it cannot remember answers anyway) reaches back into it. A child
    in another tree (`workspace`) has the rules about that tree: writes stay inside it."""
    policy = copy.deepcopy(parent)
    policy.mode = mode  # type: ignore[assignment]
    if workspace is not None and hasattr(policy, "project_dir"):
        policy.project_dir = workspace.resolve()  # type: ignore[attr-defined]
        policy.cwd = (cwd or workspace).resolve()  # type: ignore[attr-defined]
    return policy


def child_limits(agent: AgentDefinition, config: Config) -> Limits:
    """The agent's budget, never above the parent's configured limits (a definition cannot raise them)."""
    return Limits(min(agent.max_turns, config.max_turns), min(agent.max_cost, config.max_cost), CHILD_WALL_TIME)


def child_config(config: Config, extra_ro: list[str]) -> Config:
    """The parent's configuration, with the folders the child's sandbox may also read."""
    if not extra_ro:
        return config
    sandbox = dataclasses.replace(config.sandbox, extra_ro=[*config.sandbox.extra_ro, *extra_ro])
    return dataclasses.replace(config, sandbox=sandbox)


class ChildHooks:
    """The parent's hooks around the child's tool calls, and its SubagentStop hooks when the child would stop.
    The child's own start, prompt, turn and session ends are not the user's, so they fire none of the parent's
    (SessionStart, UserPromptSubmit, turn_end, session_end)."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def started(self, source: str) -> HookVerdict:
        return NO_VERDICT

    def prompt(self, text: str) -> HookVerdict:
        return NO_VERDICT

    def pre_tool(self, use_id: str, call: ToolCall) -> HookVerdict:
        return self.hooks.pre_tool(use_id, call)

    def permission_request(self, call: ToolCall) -> HookVerdict:
        return self.hooks.permission_request(call)

    def before_tool(self, call: ToolCall) -> str | None:
        return self.hooks.before_tool(call)

    def after_tool(self, use_id: str, call: ToolCall, result: ToolResult) -> HookVerdict:
        return self.hooks.after_tool(use_id, call, result)

    def stopping(self, active: bool, last_text: str, subagent: bool = True) -> HookVerdict:
        return self.hooks.stopping(active, last_text, subagent=True)

    def compacting(self, instructions: str) -> None:
        return None  # a child has no /compact

    def on_event(self, event: ev.Event) -> None:
        return None


def child_asker(parent: Parent, ident: str) -> AskHandler:
    """The child's questions go to the parent's frontend, saying which agent asks (see the module docstring)."""

    if parent.ask is no_questions:
        return no_questions  # headless: the same denial, and code that asks "can anyone answer?" still can

    def ask(request: ev.PermissionRequest) -> PermissionAnswer:
        request.agent = ident
        answer = parent.ask(request)
        if answer.allow and answer.remember == "project":
            parent.policy.remember(answer)  # the user's rule for the project, saved where the parent's are
            answer = dataclasses.replace(answer, remember="session")
        return answer

    return ask


def open_child(parent: Parent, run: ChildRun) -> Session:
    """A child session for `run`, stored (its events persisted under its own id) and ready for `send`."""
    agent = run.agent
    provider = create_provider(agent.model, parent.config.providers, parent.config.pricing) if agent.model \
        else parent.provider
    mode = child_mode(agent.permission_mode, parent.policy.mode)
    isolated = run.workspace != parent.tool_ctx.workspace
    policy = child_policy(parent.policy, mode, run.workspace if isolated else None, run.cwd)
    child_id = run.session_id
    parent.store.create_session(child_id, str(run.workspace), str(run.cwd), provider.spec,
                                title=run.description or run.prompt[:80], parent_id=parent.session_id)
    state = paths.session_dir(child_id)
    state.mkdir(parents=True, exist_ok=True)
    ctx = ToolContext(run.workspace, run.cwd, child_id, run.cancel, state, child_config(parent.config, run.extra_ro))
    install_language_servers(ctx.services)
    # no grandchildren; the editor of its model's route; exit_plan whole when it plans
    tools = builtin_tools(agent.tools, for_subagent=True, route=provider.spec.partition(":")[0], mode=mode)

    def record(event: ev.Event) -> None:
        if event.persist:
            parent.store.append(child_id, event)
        run.observe(event)
        parent.relay(ev.AgentRelay(run.ident, event))

    record(ev.SessionStart(child_id, provider.spec, str(run.workspace), str(run.cwd), mode, parent.sandbox,
                           parent.git, version=__version__))
    system = template("subagent.md", ("agent_prompt", "workspace", "cwd")).render(
        agent_prompt=agent.prompt, workspace=run.workspace, cwd=run.cwd)
    headless = parent.ask is no_questions
    stuck = StuckGuard.from_config(parent.config.stuck, headless=headless or run.background)
    parts = SessionParts(child_id, provider, tools, policy, PassthroughContext(), ctx, system, Pinned(task=run.prompt),
                         child_limits(agent, parent.config), record, child_asker(parent, run.ident),
                         hooks=ChildHooks(parent.hooks) if parent.hooks is not None else None, stuck=stuck)
    return Session(parts)
