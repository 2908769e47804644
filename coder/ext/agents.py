"""Subagent definitions: the built-in agents (`prompts/agents/*.md`: `explore`) plus Markdown files in the config
dir's `agents/` and, in a trusted workspace only, `.coder/agents/` (front matter: name, description, tools, model,
max_turns, max_cost, permission_mode; body: its prompt). A definition without `tools` gets the `explore` agent's.

A definition says what a child session may do, so it is read once, when the session opens (see
coder/engine/subagents.py): an agent file the model or a sandboxed command writes during the session is never
picked up by that session, and a cloned repository's definitions count only once the user trusts it.

Claude Code's subagents count too, in its format (https://docs.claude.com/en/docs/claude-code/sub-agents):
`~/.claude/agents/*.md`, `.claude/agents/*.md` of a trusted repository, each enabled plugin's `agents/`. Their
`tools` are Claude Code's names (`Read, Grep, Glob, Bash`), mapped to the tools that do that job (each tool's
`claude_code` names; one coder has no tool for is left out); without `tools` an agent gets every tool, as in
Claude Code. Their mode is not written down: an agent whose tools only read (Read, Grep, Glob, LS, ...) runs in
plan mode, any other in auto, and a child never runs above its parent's mode (coder/engine/subagents.py).
`model: inherit` and the aliases `sonnet`, `opus`, `haiku` mean the parent's model.
The order, later winning a name: built-in, plugins', the user's (Claude Code's, then coder's), the
repository's (Claude Code's, then coder's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from coder.base.errors import ConfigError
from coder.base.paths import config_dir
from coder.base.resources import data_dir
from coder.ext.manifests import AgentFile, ClaudeAgentFile, names, read_markdown
from coder.tools.registry import BUILTIN_IMPLEMENTATIONS, load_contracts, tools_for_claude_name
from coder.trust.decisions import inspect

#: the built-in agent whose tools a definition without `tools` gets
DEFAULT_AGENT = "explore"


def default_tools() -> list[str]:
    """The tools of the built-in `explore` agent (read-only use: its mode is plan)."""
    return list(builtin_agents()[DEFAULT_AGENT].tools)


@dataclass
class AgentDefinition:
    name: str
    description: str
    prompt: str
    tools: list[str] = field(default_factory=default_tools)
    model: str | None = None
    max_turns: int = 25
    max_cost: float = 1.0
    permission_mode: str = "plan"


@lru_cache(maxsize=1)
def builtin_agents() -> dict[str, AgentDefinition]:
    """The agents shipped in `prompts/agents/` (data, like every prompt), read once per process."""
    folder = data_dir("prompts") / "agents"
    return {agent.name: agent for agent in (load_agent(path) for path in sorted(folder.glob("*.md")))}


#: Claude Code's tools that only read: an agent limited to them runs in plan mode
CLAUDE_READ_ONLY = frozenset({"Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite"})
#: Claude Code's model aliases, which mean "the parent's model" here
CLAUDE_MODEL_ALIASES = frozenset({"inherit", "sonnet", "opus", "haiku"})


def load_claude_agent(path: Path, raw: bytes | None = None) -> AgentDefinition:
    """A Claude Code subagent file (name, description, tools, model; the body is its prompt)."""
    meta, body = read_markdown(ClaudeAgentFile, path, raw)
    named = names(meta.tools)
    contracts = load_contracts()
    runnable = [n for n in BUILTIN_IMPLEMENTATIONS if not contracts[n].spawns_agents]
    tools = runnable if named is None else \
        list(dict.fromkeys(t for n in named for t in tools_for_claude_name(n, contracts) if t in runnable))
    read_only = named is not None and set(named) <= CLAUDE_READ_ONLY
    if not body.strip():
        raise ConfigError(f"{path}: the agent needs a prompt (the Markdown body).")
    return AgentDefinition(meta.name or path.stem, meta.description, body.strip(), tools,
                           None if meta.model in CLAUDE_MODEL_ALIASES else meta.model,
                           permission_mode="plan" if read_only else "auto")


def load_agent(path: Path, raw: bytes | None = None) -> AgentDefinition:
    """One of coder's agent files (AgentFile: coder/ext/manifests.py)."""
    meta, body = read_markdown(AgentFile, path, raw)
    tools = names(meta.tools)
    tools = default_tools() if tools is None else tools
    if not body.strip():
        raise ConfigError(f"{path}: the agent needs a prompt (the Markdown body).")
    return AgentDefinition(meta.name or path.stem, meta.description, body.strip(), tools, meta.model,
                           meta.max_turns, meta.max_cost, meta.permission_mode)


def load_agents(workspace: Path, *, trusted: bool = False, repo_files: dict[str, bytes] | None = None,
                plugin_dirs: list[Path] | None = None) -> dict[str, AgentDefinition]:
    """Built-in agents, then plugins', then the user's (Claude Code's, then the config dir's), then the
    workspace's when it is `trusted` (later wins).

    Untrusted, `.coder/agents/` and `.claude/agents/` are not read at all. Trusted, the repository's definitions
    come from the bytes the trust check read and fingerprinted (`repo_files`, else read now the same way: never
    through a symlink, never from a fifo), so what was trusted is what runs."""
    agents = dict(builtin_agents())
    user_dirs = [(d, load_claude_agent) for d in plugin_dirs or []]
    user_dirs += [(Path.home() / ".claude" / "agents", load_claude_agent), (config_dir() / "agents", load_agent)]
    for folder, loader in user_dirs:
        for path in [folder] if folder.is_file() else sorted(folder.glob("*.md")) if folder.is_dir() else []:
            agent = loader(path)
            agents[agent.name] = agent
    if trusted:
        if repo_files is None:
            repo_files = inspect(workspace).files
        for prefix, loader in ((".claude/agents/", load_claude_agent), (".coder/agents/", load_agent)):
            for rel, raw in sorted(repo_files.items()):
                if rel.startswith(prefix) and rel.endswith(".md") and "/" not in rel[len(prefix):]:
                    agent = loader(workspace / rel, raw)
                    agents[agent.name] = agent
    return agents


#: permission classes by power; a tool that starts agents is classed by its agent's most powerful tool
Permission = Literal["read", "write", "execute", "network"]
_POWER: dict[str, int] = {"read": 0, "write": 1, "network": 2, "execute": 3}


def agent_permission(agent: AgentDefinition) -> Permission:
    """The permission class of starting `agent`: what it CAN do under its own mode.

    An agent whose mode is plan is "read": its child session runs a plan-mode policy (the parent's rules with
    mode plan), which denies every edit and every shell command that is not on the read-only list, whatever tools
    it has, so it can do no more than its parent could in plan mode itself. That is why the built-in `explore`
    agent (editor and bash, for viewing and read-only commands) runs in plan mode. Any other agent is classed by
    the most powerful tool it may use, as its tools' contracts class them (bash: execute; the editor and
    apply_patch: write, since the agent may call more than the editor's `view`; the rest: read). A tool that
    starts agents counts for nothing: a child never gets it.

    The parent's mode is deliberately not part of this: a plan-mode parent that starts a writing agent is asking
    to write, and plan mode denies that plainly, instead of starting a child whose every step is denied."""
    if agent.permission_mode == "plan":
        return "read"
    contracts = load_contracts()
    classes: list[Permission] = [contracts[name].permission for name in agent.tools
               if name in contracts and not contracts[name].spawns_agents]
    return max(classes, key=_POWER.__getitem__) if classes else "read"
