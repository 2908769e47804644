"""Child sessions for the `task` tool: their own history, tools and budget; the caller gets only the report.
Children are stored as sessions with a parent_id, so `coder sessions show` can replay them.

A child inherits and never escalates:
- its mode is the lower of its agent's and its parent's (plan < ask < auto-edit < auto), read at each spawn, so
  a parent switched to plan mode starts only plan-mode children;
- its policy is a copy of the parent's policy object, so every allow / ask / deny rule the parent has (config,
  `.coder/permissions.json`, `--allow` / `--deny` flags) holds inside it, with nothing read again from disk;
- the "always allow" answers the user gave this session so far carry over (copied at the spawn): the child is
  part of the session the user answered for, and it cannot ask (an ask is a denial it reads), so without them a
  child could not do what the parent may do without asking; they never add more than that;
- the parent's before_tool / after_tool hooks run around every child tool call;
- its turn and cost limits are the agent's, capped by the parent's configured ones;
- agent definitions are the session's, read once when it opened (`install_subagents`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.base import paths
from coder.base.resources import template
from coder.config.sections import Config
from coder.context.base import PassthroughContext, Pinned
from coder.engine.hook_steps import Hooks
from coder.engine.session import Limits, Session, SessionParts, no_questions
from coder.ext.agents import load_agents
from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.lsp.hook import install as install_language_servers
from coder.models.registry import create_provider
from coder.models.types import ModelProvider
from coder.policy.base import MODES, PermissionPolicy
from coder.store.db import SessionStore, new_session_id
from coder.tools.base import ToolContext, ToolResult
from coder.tools.registry import builtin_tools


@dataclass
class Parent:
    session_id: str
    provider: ModelProvider
    config: Config
    store: SessionStore
    tool_ctx: ToolContext  # the parent's: its cancel event stops the child too
    #: the parent's live policy object (its mode may change during the session; rules include the flags)
    policy: PermissionPolicy
    hooks: Hooks | None = None
    #: name -> AgentDefinition, read once at session open (`install_subagents` fills it)
    agents: dict[str, Any] = field(default_factory=dict)


def install_subagents(parent: Parent) -> None:
    """Read the agent definitions once (the repository's only when `config.trusted`) and give the session's
    tools the spawner and the definitions (`services["spawn_subagent"]`, `services["subagents"]`)."""
    parent.agents = load_agents(parent.tool_ctx.workspace, trusted=parent.config.trusted,
                                repo_files=parent.config.repo_files,
                                plugin_dirs=parent.config.plugin_dirs.get("agents", []))
    parent.tool_ctx.services["subagents"] = parent.agents
    parent.tool_ctx.services["spawn_subagent"] = make_spawner(parent)


def child_mode(agent_mode: str, parent_mode: str) -> str:
    """The lower of the two modes: a child never runs with more freedom than its parent has."""
    return min(agent_mode, parent_mode, key=MODES.index)


def child_policy(parent: PermissionPolicy, mode: str) -> PermissionPolicy:
    """A deep copy of the parent's policy with the child's mode: every rule and remembered answer the parent has
    at this moment, and nothing the child does (it cannot remember answers anyway) reaches back into it."""
    policy = copy.deepcopy(parent)
    policy.mode = mode  # type: ignore[assignment]
    return policy


def child_limits(agent: Any, config: Config) -> Limits:
    """The agent's budget, never above the parent's configured limits (a definition cannot raise them)."""
    return Limits(min(agent.max_turns, config.max_turns), min(agent.max_cost, config.max_cost), 900.0)


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

    def pre_tool(self, use_id: str, tool: str, args: dict[str, Any]) -> HookVerdict:
        return self.hooks.pre_tool(use_id, tool, args)

    def permission_request(self, tool: str, args: dict[str, Any]) -> HookVerdict:
        return self.hooks.permission_request(tool, args)

    def before_tool(self, tool: str, args: dict[str, Any]) -> str | None:
        return self.hooks.before_tool(tool, args)

    def after_tool(self, use_id: str, tool: str, args: dict[str, Any], result: ToolResult) -> HookVerdict:
        return self.hooks.after_tool(use_id, tool, args, result)

    def stopping(self, active: bool, last_text: str, subagent: bool = True) -> HookVerdict:
        return self.hooks.stopping(active, last_text, subagent=True)

    def compacting(self, instructions: str) -> None:
        return None  # a child has no /compact

    def on_event(self, event: ev.Event) -> None:
        return None


def make_spawner(parent: Parent):
    """The `spawn_subagent` service: spawn(agent, prompt, description) -> (report, is_error, data)."""

    def spawn(agent_name: str, prompt: str, description: str) -> tuple[str, bool, dict[str, Any]]:
        workspace: Path = parent.tool_ctx.workspace
        agent = parent.agents.get(agent_name)
        if agent is None:
            return (f"Unknown agent {agent_name!r}. Available: {', '.join(sorted(parent.agents))}. (Agent "
                    "definitions are read when the session starts: from your config dir, and from the "
                    "repository's .coder/agents/ only when the workspace is trusted.)"), True, {}
        provider = parent.provider
        if agent.model:
            provider = create_provider(agent.model, parent.config.providers, parent.config.pricing)
        mode = child_mode(agent.permission_mode, parent.policy.mode)
        policy = child_policy(parent.policy, mode)
        child_id = new_session_id()
        parent.store.create_session(child_id, str(workspace), str(parent.tool_ctx.cwd), provider.spec,
                                    title=description or prompt[:80], parent_id=parent.session_id)
        state = paths.session_dir(child_id)
        state.mkdir(parents=True, exist_ok=True)
        ctx = ToolContext(workspace, parent.tool_ctx.cwd, child_id, parent.tool_ctx.cancel, state, parent.config)
        install_language_servers(ctx.services)
        tools = builtin_tools(agent.tools, for_subagent=True)  # no grandchildren

        def record(event) -> None:
            if event.persist:
                parent.store.append(child_id, event.type, event.to_dict())

        system = template("subagent.md", ("agent_prompt", "workspace", "cwd")).render(
            agent_prompt=agent.prompt, workspace=workspace, cwd=parent.tool_ctx.cwd)
        parts = SessionParts(child_id, provider, tools, policy, PassthroughContext(), ctx, system, Pinned(task=prompt),
                             child_limits(agent, parent.config), record, no_questions,
                             hooks=ChildHooks(parent.hooks) if parent.hooks is not None else None)
        child = Session(parts)
        outcome = child.send(prompt)
        child.close(outcome.reason)
        parent.store.set_status(child_id, outcome.reason)
        report = outcome.final_text or "(the subagent gave no report)"
        if outcome.reason != "done":
            report += f"\n[subagent {agent.name} stopped: {outcome.reason}" + \
                      (f": {outcome.error}" if outcome.error else "") + "]"
        data = {"subagent_session": child_id, "agent": agent.name, "mode": mode, "turns": child.stats.turns,
                "cost_usd": round(child.stats.cost_usd, 6)}
        return report, outcome.reason == "error", data

    return spawn
