"""The tools whose input schema arrives at run time: an MCP server's tools (coder/ext/mcp_tools.py builds them from
the server's tool list) and custom tools (a contract in `.coder/tools/`, coder/ext/custom_tools.py). This is the
one module where a call's params stay the input dict: no dataclass can be declared for a schema nobody has seen,
so the door checks the input against the schema itself, with `jsonschema` (Draft 2020-12 unless the schema names
its own `$schema`), every problem one line like the typed tools' (coder/tools/params.py).

A schema `jsonschema` cannot use (an MCP server's that is not valid JSON Schema, or names a `$ref` it cannot
resolve) checks nothing: the server answers for its own input, as it did before coder checked it. A custom tool's
schema was checked when its file was read (coder/ext/manifests.py).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import string
from typing import Any, Protocol

from coder.models.types import ImageBlock
from coder.sandbox.exec import run_sandboxed
from coder.store.outputs import clip_output
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult, generic_facts
from coder.tools.params import MAX_PROBLEMS, ToolInputError, input_object


class ExternalTool(Tool[dict[str, Any]]):
    """A tool whose params are its input, checked against the contract's schema at the door."""

    contract: ToolContract
    _validator: Any = None

    def parse(self, raw: object) -> dict[str, Any]:
        data = input_object(self.contract.name, raw)
        validator = self._schema_validator()
        if validator is None:
            return data
        try:
            errors = sorted(validator.iter_errors(data), key=lambda e: ([str(p) for p in e.absolute_path], e.message))
        except Exception:  # noqa: BLE001 - a $ref the schema cannot resolve: the server checks its own input
            return data
        if errors:
            raise ToolInputError(self.contract.name, [_line(e) for e in errors[:MAX_PROBLEMS]])
        return data

    def _schema_validator(self) -> Any:
        """jsonschema's validator of the contract's schema, made once; None when the schema is not one."""
        if self._validator is None:
            # start-up time: jsonschema loads only when a session calls a tool whose schema came at run time
            from jsonschema import exceptions, validators

            schema = self.contract.input_schema
            try:
                cls = validators.validator_for(schema)
                cls.check_schema(schema)
                self._validator = cls(schema)
            except (exceptions.SchemaError, TypeError):
                self._validator = False
        return self._validator or None

    def facts(self, params: dict[str, Any]) -> CallFacts:
        return generic_facts(self.contract.name, params, self.contract.maskable)


def _line(error: Any) -> str:
    """One jsonschema error as the typed tools word theirs: `key[0].sub: what is wrong`."""
    where = ""
    for part in error.absolute_path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return f"{where}: {error.message}" if where else error.message


class McpCalls(Protocol):
    """The session's MCP servers (coder/ext/mcp_client.py MCPManager), as the tools call them."""

    def call_tool(self, server: str, tool: str, args: dict[str, Any]) -> tuple[str, bool, list[ImageBlock]]: ...

    def close(self) -> None: ...


class MCPTool(ExternalTool):
    """One tool of an MCP server: the call goes to the server; its text (clipped) and images are the result."""

    def __init__(self, contract: ToolContract, manager: McpCalls, server: str, tool: str) -> None:
        self.contract = contract
        self.manager = manager
        self.server = server
        self.tool = tool

    def run(self, params: dict[str, Any], ctx: ToolContext) -> ToolResult:
        text, is_error, images = self.manager.call_tool(self.server, self.tool, params)
        clipped = clip_output(text, ctx.state_dir)
        return ToolResult(clipped.text, is_error, data={"server": self.server, "output_handle": clipped.handle},
                          images=images)

    def close(self) -> None:
        self.manager.close()  # idempotent: every tool of the session shares the manager


class CommandTool(ExternalTool):
    """A custom tool: runs the contract's command; what it prints is the result, its exit code the error flag."""

    def __init__(self, contract: ToolContract, command: str, input_mode: str, timeout: float, sandbox: bool) -> None:
        self.contract = contract
        self.command = command
        self.input_mode = input_mode
        self.timeout = timeout
        self.sandbox = sandbox

    def render(self, params: dict[str, Any]) -> str:
        """The command with each `{field}` replaced by the shell-quoted input value (empty when not given)."""
        if self.input_mode == "stdin":
            return self.command
        fields = {name for _, name, _, _ in string.Formatter().parse(self.command) if name}
        values = {name: shlex.quote(_text(params[name])) if params.get(name) is not None else "" for name in fields}
        return self.command.format(**values)

    def run(self, params: dict[str, Any], ctx: ToolContext) -> ToolResult:
        stdin = json.dumps(params) if self.input_mode == "stdin" else None
        sandbox = ctx.config.sandbox if self.sandbox else dataclasses.replace(ctx.config.sandbox, enabled=False)
        run = run_sandboxed(self.render(params), ctx.workspace, sandbox, self.timeout, stdin=stdin)
        text = clip_output(run.output, ctx.state_dir).text or "(no output)"
        if run.timed_out:
            return ToolResult(f"{text}\n[timed out after {self.timeout:g}s]", True, data={"timed_out": True})
        return ToolResult(text if run.exit_code == 0 else f"{text}\n[exit code {run.exit_code}]",
                          run.exit_code != 0, data={"exit_code": run.exit_code})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
