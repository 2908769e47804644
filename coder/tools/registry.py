"""Contracts (data in `tools/`) joined to the code behind them.

Adding a built-in tool is its contract in `tools/`, its module, and one line in `BUILTIN_IMPLEMENTATIONS`: what
the policy, the frontends and the context manager need to know of a call, the tool says itself (`Tool.facts`).

Implementations are named by import string and imported only when a session builds its tool set (or a caller
asks `describe`), so that `coder --help` stays fast."""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.base.resources import data_dir
from coder.tools.base import CallFacts, Tool, ToolContract, generic_facts
from coder.tools.params import ToolInputError
from coder.tools.tool_search_tool import arrange

#: tool name -> "module:Class"; the class takes the contract as its only argument
BUILTIN_IMPLEMENTATIONS: dict[str, str] = {
    "bash": "coder.tools.bash.tool:BashTool",
    "str_replace_based_edit_tool": "coder.tools.edit_tool:EditTool",
    "code_search": "coder.tools.search_tool:CodeSearchTool",
    "apply_patch": "coder.tools.patch_tool:ApplyPatchTool",
    "read_output": "coder.tools.read_output_tool:ReadOutputTool",
    "bash_output": "coder.tools.bash.output_tool:BashOutputTool",
    "task": "coder.tools.agents.task_tool:TaskTool",
    "subagents": "coder.tools.agents.subagents_tool:SubagentsTool",
    "todo": "coder.tools.todo_tool:TodoTool",
    "exit_plan": "coder.tools.plan_tool:ExitPlanTool",
    "skill": "coder.tools.skill_tool:SkillTool",
    "tool_search": "coder.tools.tool_search_tool:ToolSearchTool",
    "web_fetch": "coder.tools.web_fetch_tool:WebFetchTool",
    "web_search": "coder.tools.web_search_tool:WebSearchTool",
}


def load_contracts(folder: Path | None = None) -> dict[str, ToolContract]:
    folder = folder or data_dir("tools")
    contracts: dict[str, ToolContract] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            contract = ToolContract.load(path)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"tool contract {path} is invalid: {exc}") from exc
        contracts[contract.name] = contract
    return contracts


def _import(target: str) -> Callable[[ToolContract], Tool]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def builtin_tools(names: list[str] | None = None, *, for_subagent: bool = False, route: str = "",
                  mode: str = "") -> dict[str, Tool]:
    """Instantiate the built-in tools (all, or those in `names`) for one session, in the order they are sent
    (`tool_search_tool.arrange`: deferred tools last, loaded through the tool search). A subagent's session
    (`for_subagent`) never gets a tool that starts agents itself: no grandchildren. `route` is the provider's
    `--model` prefix: a contract whose `deferred_on` names it is deferred on that route (the editor a route's
    models were not trained on). `mode` is the permission mode the session opens in: a contract whose
    `loaded_in_modes` names it is sent whole from the first request (a resumed history's load of it is then left
    out of the Anthropic request: coder/models/request_rules.py)."""
    contracts = {name: replace(c, deferred=_deferred(c, route, mode)) for name, c in load_contracts().items()}
    tools: dict[str, Tool] = {}
    for name, target in BUILTIN_IMPLEMENTATIONS.items():
        if names is not None and name not in names:
            continue
        if name not in contracts:
            raise ConfigError(f"built-in tool {name!r} has no contract in {data_dir('tools')}")
        if for_subagent and contracts[name].spawns_agents:
            continue
        tools[name] = _import(target)(contracts[name])
    return arrange(tools)


def _deferred(contract: ToolContract, route: str, mode: str) -> bool:
    if mode and mode in contract.loaded_in_modes:
        return False
    return contract.deferred or bool(route and route in contract.deferred_on)


@lru_cache(maxsize=1)
def _reference_tools() -> dict[str, Tool]:
    """One idle instance of each built-in tool, only ever asked for facts (never run, so never holding a shell)."""
    return builtin_tools()


def describe(name: str, args: dict[str, Any], tools: Mapping[str, Tool] | None = None) -> CallFacts:
    """The facts of one call known only by its tool's name and its input as written (a stored event, a streamed
    call not yet through the engine's door, a replayed trajectory, a policy asked without the session's tools):
    parsed at this door by the tool of that name in `tools`, else the built-in one. A name no tool answers to,
    or an input its tool no longer parses (a session stored by an older coder, a call the door refused), gets the
    generic facts every tool starts from (its name and first text argument; the contract's word on masking)."""
    tool = (tools or {}).get(name) or _reference_tools().get(name)
    if tool is None:
        return generic_facts(name, args if isinstance(args, dict) else {})
    key = (id(tool), id(args))
    known = _described.get(key)
    if known is not None and known[0] is tool and known[1] is args:
        return known[2]
    try:
        facts = tool.facts(tool.parse(args))
    except ToolInputError:
        facts = generic_facts(name, args if isinstance(args, dict) else {}, tool.contract.maskable)
    with _describing:
        if len(_described) >= DESCRIBED:
            _described.popitem(last=False)
        _described[key] = (tool, args, facts)
    return facts


#: how many calls `describe` remembers. The history's calls are described again for every request (masking and
#: the handoff ask each one's facts, ~50 times a call over a long session), and one input dict is one call: its
#: facts, a pure function of the input, are kept with the tool and the dict themselves (so neither id is reused
#: while remembered). Nothing in coder changes an input in place.
DESCRIBED = 16_384
_described: OrderedDict[tuple[int, int], tuple[Tool, object, CallFacts]] = OrderedDict()
_describing = threading.Lock()


def builtin_by_protocol(prefix: str) -> str:
    """The name of the built-in tool that speaks a protocol the models were trained on, by the start of its
    contract's `anthropic_type` (`bash_`, `text_editor_`): how a translator of another agent's trajectories
    finds our shell and our editor without naming them."""
    for contract in load_contracts().values():
        if (contract.anthropic_type or "").startswith(prefix) and contract.name in BUILTIN_IMPLEMENTATIONS:
            return contract.name
    raise ConfigError(f"no built-in tool speaks the {prefix!r} protocol (anthropic_type in {data_dir('tools')})")


def claude_code_names(contract: ToolContract) -> list[str]:
    """The names Claude Code gives what `contract`'s tool does (its `claude_code` list), or its own name."""
    return list(contract.claude_code) or [contract.name]


def tools_for_claude_name(name: str, contracts: Mapping[str, ToolContract] | None = None) -> list[str]:
    """The built-in tools that do what Claude Code calls `name` (`Read` -> the editor; `Grep` -> code search), a
    tool's own name included; empty when no tool does (a Claude Code tool coder does not have)."""
    contracts = contracts if contracts is not None else load_contracts()
    return [c.name for c in contracts.values() if name in claude_code_names(c) or name == c.name]
