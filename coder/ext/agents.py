"""Subagent definitions: the built-in `explore` agent plus Markdown files in `.coder/agents/` and the config dir's
`agents/` (front matter: name, description, tools, model, max_turns, max_cost, permission_mode; body: its prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coder.errors import ConfigError
from coder.ext.frontmatter import read_front_matter
from coder.paths import config_dir

READ_ONLY_TOOLS = ["code_search", "str_replace_based_edit_tool", "read_output", "bash"]

EXPLORE_PROMPT = """You are a search subagent working for another coding agent. Answer its question about the
repository by searching and reading code; you cannot change anything. Be quick and thorough: use code_search for
definitions, references and text, view only the ranges you need, and use read-only shell commands when they help.
End with a concise report: the answer, the exact files and line numbers that support it, and anything uncertain.
The caller sees only your final message, so put everything it needs there."""


@dataclass
class AgentDefinition:
    name: str
    description: str
    prompt: str
    tools: list[str] = field(default_factory=lambda: list(READ_ONLY_TOOLS))
    model: str | None = None
    max_turns: int = 25
    max_cost: float = 1.0
    permission_mode: str = "plan"


BUILTIN_AGENTS = {
    "explore": AgentDefinition("explore", "Read-only search of the repository: finds code, explains how it fits, "
                                          "reports files and lines.", EXPLORE_PROMPT),
}


def load_agent(path: Path) -> AgentDefinition:
    meta, body = read_front_matter(path)
    name = str(meta.get("name") or path.stem)
    tools = meta.get("tools", READ_ONLY_TOOLS)
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ConfigError(f"{path}: `tools` must be a list of tool names.")
    from coder.tools.registry import BUILTIN_IMPLEMENTATIONS

    unknown = sorted(set(tools) - set(BUILTIN_IMPLEMENTATIONS) - {"task"})
    if unknown:
        raise ConfigError(f"{path}: unknown tool(s) {', '.join(unknown)}; built-in tools: "
                          f"{', '.join(sorted(BUILTIN_IMPLEMENTATIONS))}.")
    mode = str(meta.get("permission_mode", "plan"))
    if mode not in ("plan", "ask", "auto-edit", "auto"):
        raise ConfigError(f"{path}: permission_mode {mode!r} is not plan, ask, auto-edit or auto.")
    if not body.strip():
        raise ConfigError(f"{path}: the agent needs a prompt (the Markdown body).")
    try:
        return AgentDefinition(name, str(meta.get("description", "")), body.strip(), tools, meta.get("model"),
                               int(meta.get("max_turns", 25)), float(meta.get("max_cost", 1.0)), mode)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}.") from exc


def load_agents(workspace: Path) -> dict[str, AgentDefinition]:
    agents = dict(BUILTIN_AGENTS)
    for folder in (config_dir() / "agents", workspace / ".coder" / "agents"):
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                agent = load_agent(path)
                agents[agent.name] = agent
    return agents
