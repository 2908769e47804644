"""The tool interface between the engine and the code behind each tool.

What the model sees of a tool (name, description, input schema, permission class) is data in the top-level
`tools/` folder (one JSON contract per tool); the code behind it implements `Tool`. The engine only knows this
module: it never imports a concrete tool.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from coder.models.types import ToolSpec

PermissionClass = Literal["read", "write", "execute", "network"]


@dataclass
class ToolContract:
    """One tool as the model sees it, loaded from `tools/<name>.json`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    permission: PermissionClass
    anthropic_type: str | None = None
    #: values of the input's `command` field that only read (e.g. "view" of the editor): permission "read"
    read_commands: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> ToolContract:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            name=data["name"],
            description=data["description"],
            input_schema=data["input_schema"],
            permission=data.get("permission", "execute"),
            anthropic_type=data.get("anthropic_type"),
            read_commands=list(data.get("read_commands", [])),
        )

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema, self.anthropic_type)


@dataclass
class ToolResult:
    """What a tool returns. `output` is exactly the text the model will read."""

    output: str
    is_error: bool = False
    #: workspace-relative paths this call changed (edits; shell commands report none, checkpoints catch them)
    files_changed: list[str] = field(default_factory=list)
    #: extra structured facts for events and frontends (exit_code, diff, truncated, ...)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    """What a running tool may know about its session."""

    workspace: Path  # repository root, or the working directory outside git
    cwd: Path
    session_id: str
    cancel: threading.Event
    #: per-session folder for large outputs and other files tools keep (outside the workspace)
    state_dir: Path
    #: the merged configuration (plain dict, see coder.config)
    config: dict[str, Any] = field(default_factory=dict)
    #: per-session shared objects (the persistent shell, the edit history, the code index), created lazily
    services: dict[str, Any] = field(default_factory=dict)


class Tool(ABC):
    """Code behind one contract. One instance per session, so a tool may keep state (a persistent shell)."""

    contract: ToolContract

    @abstractmethod
    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one call. Raise ToolError (or return is_error=True) for failures the model should read."""

    def permission_for(self, args: dict[str, Any], ctx: ToolContext) -> PermissionClass:
        """The permission class of this call, which the policy decides on. Default: the contract's class, or
        "read" for a command listed in `read_commands` (the editor's `view`). A tool whose power depends on its
        input (the `task` tool: the agent it starts) overrides this; `ctx` gives it the session's services."""
        if args.get("command") in self.contract.read_commands:
            return "read"
        return self.contract.permission

    def close(self) -> None:  # noqa: B027 - optional: most tools hold nothing
        """Release what the tool holds (processes, files) at session end."""
