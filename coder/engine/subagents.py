"""Child sessions for the `task` tool: their own history, tools, policy and budget; the caller gets only the
report. Children are stored as sessions with a parent_id, so `coder sessions show` can replay them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder import paths
from coder.context.base import PassthroughContext, Pinned
from coder.engine.session import Limits, Session, SessionParts, no_questions
from coder.models.types import ModelProvider
from coder.store.db import SessionStore, new_session_id
from coder.tools.base import ToolContext


@dataclass
class Parent:
    session_id: str
    provider: ModelProvider
    config: dict[str, Any]
    store: SessionStore
    tool_ctx: ToolContext  # the parent's: its cancel event stops the child too


def make_spawner(parent: Parent):
    """The `spawn_subagent` service: spawn(agent, prompt, description) -> (report, is_error, data)."""

    def spawn(agent_name: str, prompt: str, description: str) -> tuple[str, bool, dict[str, Any]]:
        from coder.ext.agents import load_agents
        from coder.tools.registry import builtin_tools

        workspace: Path = parent.tool_ctx.workspace
        agents = load_agents(workspace)
        agent = agents.get(agent_name)
        if agent is None:
            return f"Unknown agent {agent_name!r}. Available: {', '.join(sorted(agents))}.", True, {}
        provider = parent.provider
        if agent.model:
            from coder.models.registry import create_provider

            provider = create_provider(agent.model, parent.config)
        child_id = new_session_id()
        parent.store.create_session(child_id, str(workspace), str(parent.tool_ctx.cwd), provider.spec,
                                    title=description or prompt[:80], parent_id=parent.session_id)
        state = paths.session_dir(child_id)
        state.mkdir(parents=True, exist_ok=True)
        ctx = ToolContext(workspace, parent.tool_ctx.cwd, child_id, parent.tool_ctx.cancel, state, parent.config)
        tools = builtin_tools([name for name in agent.tools if name != "task"])  # no grandchildren
        try:
            from coder.policy.rules import policy_from_config

            policy = policy_from_config(parent.config, agent.permission_mode, [], [], workspace)
        except ImportError:
            from coder.policy.base import ModePolicy

            policy = ModePolicy(agent.permission_mode)  # type: ignore[arg-type]

        def record(event) -> None:
            if event.persist:
                parent.store.append(child_id, event.type, event.to_dict())

        system = f"{agent.prompt}\n\nWorkspace: {workspace}\nWorking directory: {parent.tool_ctx.cwd}\n"
        parts = SessionParts(child_id, provider, tools, policy, PassthroughContext(), ctx, system, Pinned(task=prompt),
                             Limits(agent.max_turns, agent.max_cost, 900.0), record, no_questions)
        child = Session(parts)
        outcome = child.send(prompt)
        child.close(outcome.reason)
        parent.store.set_status(child_id, outcome.reason)
        report = outcome.final_text or "(the subagent gave no report)"
        if outcome.reason != "done":
            report += f"\n[subagent {agent.name} stopped: {outcome.reason}" + \
                      (f": {outcome.error}" if outcome.error else "") + "]"
        data = {"subagent_session": child_id, "agent": agent.name, "turns": child.stats.turns,
                "cost_usd": round(child.stats.cost_usd, 6)}
        return report, outcome.reason == "error", data

    return spawn
