"""The tool interface between the engine and the code behind each tool.

What the model sees of a tool (name, description, input schema, permission class) is data in the top-level
`tools/` folder (one JSON contract per tool); the code behind it implements `Tool`. The engine only knows this
module: it never imports a concrete tool.

A tool also knows itself: what the permission policy, the frontends and the context manager ask about one call
(`Tool.facts`: the shell line it runs, the files it touches and whether it writes them, a one-line title, what
an approval prompt shows, whether its result may be masked) comes from the tool, as Codex's tool handlers carry
theirs, so no module outside a tool matches tool names. Callers that hold only a name (a stored event, a
replayed trajectory) ask `coder.tools.registry.describe`.

A tool is generic over its params, a dataclass declared beside it (`class BashTool(Tool[BashParams])`): the
model's input is parsed once, where it enters (`parse_call`, in the engine's dispatch; `describe` for a stored or
streamed call), into a `ToolCall` whose params every question about the call is asked with. The door and its
messages: coder/tools/params.py; the tools whose input stays a dict (schema known only at run time):
coder/tools/external.py.
"""

from __future__ import annotations

import json
import threading
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from coder.config.sections import Config
from coder.models.types import ImageBlock, Message, ToolSpec
from coder.tools.params import parse_params, written

P = TypeVar("P")

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
    #: False: the context manager never replaces an old result of this tool by a stub (see coder/context/masking)
    maskable: bool = True
    #: True for a tool that starts child sessions (`task`): children never get it (no grandchildren), and an
    #: agent's permission class leaves it out
    spawns_agents: bool = False
    #: True: a rarely used tool, loaded on demand through the tool-search tool (coder/tools/tool_search_tool.py)
    deferred: bool = False
    #: the routes (a provider's `--model` prefix: `anthropic`, `openai`) on which this tool is loaded on demand
    #: although core elsewhere: each route's models see, loaded, the edit tool they were trained on, and the other
    #: editor waits behind the tool search (coder/tools/registry.py `builtin_tools`)
    deferred_on: list[str] = field(default_factory=list)
    #: the permission modes in which this deferred tool is wanted (`exit_plan`: plan): a session that opens in one
    #: has it whole from its first request; a switch into one tells the model to load it (coder/engine/mode_notice.py);
    #: elsewhere it waits behind the tool search like any deferred tool
    loaded_in_modes: list[str] = field(default_factory=list)
    #: the names Claude Code gives what this tool does (`Bash`; the editor: `Read`, `Write`, `Edit`, ...): what a
    #: Claude Code permission rule or an agent's `tools:` list names (docs/claude-code.md); empty: its own name
    claude_code: list[str] = field(default_factory=list)

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
            maskable=bool(data.get("maskable", True)),
            spawns_agents=bool(data.get("spawns_agents", False)),
            deferred=bool(data.get("deferred", False)),
            deferred_on=list(data.get("deferred_on", [])),
            loaded_in_modes=list(data.get("loaded_in_modes", [])),
            claude_code=list(data.get("claude_code", [])),
        )

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema, self.anthropic_type, self.deferred)


@dataclass(frozen=True)
class CallFacts:
    """What the policy, the frontends and the context manager need to know of one call, answered by its tool."""

    #: one line a person reads: `bash: pytest -q`, `edit src/app.py (insert)`
    title: str
    #: what an approval prompt shows under the title: the command, or the path and a preview of the change
    detail: str
    #: the shell line the call runs (None: not a shell): the policy checks each part, `bash(...)` rules match it
    shell: str | None = None
    #: workspace files the call touches, as written in the input (relative paths start at the working directory)
    paths: tuple[str, ...] = ()
    #: True when the call writes `paths` (edit rules, protected paths and the stay-in-the-workspace rule hold)
    writes: bool = False
    #: True when the result shows the content of `paths` (a view): a later view or edit of them makes it stale
    reads: bool = False
    #: False: an old result of this call is never masked as stale
    maskable: bool = True
    #: True when the call keeps the session's plan or task list (`todo`, `exit_plan`): a frontend shows it as
    #: planning, and the stuck detector counts it as progress
    plans: bool = False


@dataclass(frozen=True)
class ClaudeCall:
    """One call as Claude Code would name it: the `tool_name` and `tool_input` a Claude Code hook reads (file paths
    absolute, as Claude Code gives them). Each tool maps its own calls both ways (`Tool.claude_call`,
    `Tool.from_claude`), so the hooks never hold a table of tool names."""

    name: str
    input: dict[str, Any]


#: how much of an input an approval prompt shows
DETAIL_LIMIT = 600


def one_line(text: str, width: int = 100) -> str:
    """`text` flattened to one line of at most `width` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def generic_facts(name: str, args: dict[str, Any], maskable: bool = True) -> CallFacts:
    """The facts of a call whose tool says nothing more (custom and MCP tools, names no tool answers to): titled by
    its first text argument, shown as JSON, and touching the file in a `path` argument when there is one."""
    value = next((v for v in args.values() if isinstance(v, str)), None)
    shown = value if value is not None else json.dumps(args, ensure_ascii=False)
    path = args.get("path")
    return CallFacts(f"{name}: {one_line(shown, 90)}", json.dumps(args, ensure_ascii=False, indent=1)[:DETAIL_LIMIT],
                     paths=(path,) if isinstance(path, str) and path else (), maskable=maskable)


@dataclass
class ToolResult:
    """What a tool returns. `output` is exactly the text the model will read."""

    output: str
    is_error: bool = False
    #: workspace-relative paths this call changed (edits; shell commands report none, checkpoints catch them)
    files_changed: list[str] = field(default_factory=list)
    #: extra structured facts for events and frontends (exit_code, diff, truncated, ...)
    data: dict[str, Any] = field(default_factory=dict)
    #: images the model sees after `output` (issue 35), already within the API's limits (coder/models/images.py)
    images: list[ImageBlock] = field(default_factory=list)


@dataclass
class ToolContext:
    """What a running tool may know about its session."""

    workspace: Path  # repository root, or the working directory outside git
    cwd: Path
    session_id: str
    cancel: threading.Event
    #: per-session folder for large outputs and other files tools keep (outside the workspace)
    state_dir: Path
    #: the session's configuration, checked (coder/config)
    config: Config = field(default_factory=Config)
    #: per-session shared objects (the persistent shell, the edit history, the code index), created lazily
    services: dict[str, Any] = field(default_factory=dict)
    #: where a long-running tool reports its output as it comes (the session sets it for each call, so a
    #: frontend can show a running command's last lines); None: nobody listens
    progress: Callable[[str], None] | None = None
    #: set by the user (Ctrl+B) while a call runs: a tool that can (the shell) lets the work go on in the
    #: background and returns at once; the session clears it before each call
    detach: threading.Event = field(default_factory=threading.Event)


#: `ctx.services` key of the session's edit observers (a list of `EditObserver`), put there by whoever assembles
#: the session (coder/engine/builder.py); a context without it runs edits unobserved
EDIT_OBSERVERS = "edit_observers"
#: `ctx.services` key of the session's `CodeNavigator`, put there the same way
CODE_NAVIGATOR = "code_navigator"


class EditObserver(Protocol):
    """Watches the calls that view or write workspace files and may add to their result: the language servers'
    diagnostics (coder/lsp/hook.py). An interface the session fills, so a tool never imports who watches it."""

    def before_edit(self, ctx: ToolContext, facts: CallFacts) -> Any:
        """Called before the call runs, with its facts (the paths it views or writes); what it returns is handed
        to `after_edit`."""
        ...

    def after_edit(self, ctx: ToolContext, result: ToolResult, token: Any) -> ToolResult:
        """The call's result, amended or as it was. Never raises: the edit is done whatever the observer does."""
        ...

    def close(self) -> None:
        """Release what the observer started for the session (closing twice is harmless)."""
        ...


class CodeNavigator(Protocol):
    """Answers `code_search`'s position queries (definition, references, hover, calls) more precisely than the
    tree-sitter index: the language servers (coder/lsp/search.py)."""

    def answer(self, ctx: ToolContext, index: Any, query_type: str, query: str, path: str | None, line: int | None,
               limit: int) -> tuple[ToolResult | None, str]:
        """Its result, or None and a note saying why the index answers instead (empty: say nothing). `path` and
        `line` place the name (a call site) when the model gave them."""
        ...

    def close(self) -> None:
        ...


def observed(ctx: ToolContext, facts: CallFacts, run: Callable[[], ToolResult]) -> ToolResult:
    """Run one call that views or writes `facts.paths` under the session's edit observers."""
    observers: list[EditObserver] = list(ctx.services.get(EDIT_OBSERVERS) or ())
    tokens = [(observer, observer.before_edit(ctx, facts)) for observer in observers]
    result = run()
    for observer, token in tokens:
        result = observer.after_edit(ctx, result, token)
    return result


def close_observers(services: dict[str, Any] | None) -> None:
    """Close the session's edit observers and code navigator: every tool that used them calls this at session end."""
    services = services or {}
    navigator = services.get(CODE_NAVIGATOR)
    for each in [*(services.get(EDIT_OBSERVERS) or ()), *([navigator] if navigator is not None else [])]:
        each.close()


class Tool(ABC, Generic[P]):
    """Code behind one contract, generic over its params `P` (a dataclass: coder/tools/params.py). One instance per
    session, so a tool may keep state (a persistent shell). Every method that is about one call takes its params,
    never the raw input: `parse` is the one door (`parse_call`)."""

    contract: ToolContract
    #: the type a call's input is parsed into: `P` of `Tool[P]`, set from the class's declaration
    params: type[P]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is Tool and not isinstance(typing.get_args(base)[0], TypeVar):
                cls.params = typing.get_args(base)[0]

    def parse(self, raw: object) -> P:
        """The door: `raw` (the model's input, or a stored, streamed or rewritten one) as this tool's params;
        ToolInputError names every problem, one line each."""
        return parse_params(self.params, raw, self.contract.name)

    @abstractmethod
    def run(self, params: P, ctx: ToolContext) -> ToolResult:
        """Run one call. Raise ToolError (or return is_error=True) for failures the model should read."""

    def permission_for(self, params: P, ctx: ToolContext) -> PermissionClass:
        """The permission class of this call, which the policy decides on. Default: the contract's class. A tool
        whose power depends on its input (the `task` tool: the agent it starts; the editor's `view`) overrides
        this; `ctx` gives it the session's services."""
        return self.contract.permission

    def facts(self, params: P) -> CallFacts:
        """What this call is, for the policy, the frontends and the context manager (see `CallFacts`). The
        default knows only the contract; a tool that runs commands or touches files overrides it."""
        return generic_facts(self.contract.name, written(params), self.contract.maskable)

    def claude_call(self, params: P, cwd: Path) -> ClaudeCall:
        """This call as Claude Code would name it (relative paths start at `cwd`). Default: the first of the
        contract's `claude_code` names, else the tool's own (an MCP tool is `mcp__server__tool` in both), with the
        input as the model would write it."""
        return ClaudeCall((self.contract.claude_code or [self.contract.name])[0], written(params))

    def from_claude(self, updated: ClaudeCall, params: P, cwd: Path) -> dict[str, Any]:
        """The input of this tool (as the model would write it: the engine parses it at the door again) for a call
        a Claude Code hook rewrote (`updatedInput`, in the shape `claude_call` gave it) from `params`. Default: the
        hook's input as it is."""
        return dict(updated.input)

    def configure(self, config: Config, model: str) -> None:  # noqa: B027 - optional
        """The session's merged config and its model ("provider:name"), once, before the first request."""

    def spec(self) -> ToolSpec | None:
        """What the next request declares of this tool; None: not offered on it (web search past its cap)."""
        return self.contract.spec()

    def saw_answer(self, message: Message) -> None:  # noqa: B027 - optional: only tools the API runs listen
        """Each answer of the model, for a tool the API runs itself (web search counts its uses)."""

    def close(self) -> None:  # noqa: B027 - optional: most tools hold nothing
        """Release what the tool holds (processes, files) at session end."""


@dataclass(frozen=True)
class ToolCall(Generic[P]):
    """One call through its tool's door: the input as written (what events, the store, coder's hooks and Claude
    Code's hooks carry: the wire format) and the params parsed from it, which every question is asked with
    (`call.tool.facts(call.params)`: straight to the tool, so a call's path goes down to it and never back)."""

    tool: Tool[P]
    input: dict[str, Any]
    params: P

    @property
    def name(self) -> str:
        return self.tool.contract.name


def parse_call(tool: Tool[P], raw: object) -> ToolCall[P]:
    """The door of one call (the engine's dispatch; a hook's rewrite; tests and benchmarks that call a tool
    without a session): its input parsed into the tool's params. ToolInputError when it does not fit."""
    params = tool.parse(raw)
    return ToolCall(tool, cast(dict[str, Any], raw), params)
