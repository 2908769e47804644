"""A tool call's path from the model's answer to the sandbox reads top-down without returning to a module it left
(issue 48): one real bash call through a real session (scripted model, the real policy, Claude Code hooks, the
real sandbox), traced with `sys.setprofile` from the engine's dispatch (`Dispatch.call`) until the sandbox's
shell runs the command.

What is checked, on every stack of coder frames the trace sees on the way (consecutive frames of one module
counted once): no module appears twice in a stack (a call never comes back into a module the path has left for a
lower one), and each module sits in the same layer as its caller or a lower one (pyproject's import contract),
with one named exception: the schema layer builds the params dataclass the tool declares and asks its own rules
(`__init__`, `check`, `normalize`), as any parser calls its model. And the stack that reaches the sandbox is the
short one the design says: engine -> the bash tool -> the sandbox's shell.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import tomllib
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from coder.base import events as ev
from coder.config.sections import PermissionsSettings
from coder.context.base import PassthroughContext, Pinned
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts, no_questions
from coder.models.scripted import ScriptedProvider
from coder.policy.rules import policy_from_config
from coder.tools.base import ToolContext
from coder.tools.registry import builtin_tools

ROOT = Path(__file__).resolve().parents[2]
#: the params' own code the schema layer calls while it builds them (the one call that runs up a layer)
MODEL_RULES = {"__init__", "check", "normalize"}


def layers() -> dict[str, int]:
    """Each package's layer, 0 at the top, as pyproject's import contract says."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    blocks = next(c for c in contract["tool"]["importlinter"]["contracts"] if c["id"] == "layers")["layers"]
    return {name: i for i, block in enumerate(blocks) for name in re.findall(r"coder\.\w+", block)}


class Trace:
    """Every stack of coder frames from the dispatch until the sandbox's shell runs, as (module, function) pairs."""

    def __init__(self) -> None:
        self.root: FrameType | None = None
        self.stacks: list[list[tuple[str, str]]] = []
        self.done = False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.done:
            return
        module = frame.f_globals.get("__name__", "")
        if self.root is None:
            if module == "coder.engine.dispatch" and frame.f_code.co_name == "call":
                self.root = frame
            else:
                return
        if not module.startswith("coder."):
            return
        stack: list[tuple[str, str]] = []
        walk: FrameType | None = frame
        while walk is not None:
            name = walk.f_globals.get("__name__", "")
            if name.startswith("coder.") and (not stack or stack[-1][0] != name):
                stack.append((name, walk.f_code.co_name))
            if walk is self.root:
                break
            walk = walk.f_back
        self.stacks.append(stack[::-1])
        if module == "coder.sandbox.shell" and frame.f_code.co_name == "run":
            self.done = True


def problems(stacks: list[list[tuple[str, str]]], layer: dict[str, int]) -> list[str]:
    def of(module: str) -> int:
        return layer[".".join(module.split(".")[:2])]

    found = []
    for stack in stacks:
        modules = [m for m, _ in stack]
        shown = " -> ".join(f"{m}.{f}" for m, f in stack)
        again = [m for i, m in enumerate(modules) if m in modules[:i]]
        if again:
            found.append(f"returns to {again[0]}: {shown}")
        for (caller, _), (callee, function) in zip(stack, stack[1:], strict=False):
            up = of(callee) < of(caller)
            if up and not (caller.startswith("coder.base.") and function in MODEL_RULES):
                found.append(f"up a layer, {caller} -> {callee}.{function}: {shown}")
    return sorted(set(found))


@pytest.fixture
def traced(git_repo: Path, tmp_path: Path) -> tuple[Trace, list[ev.Event]]:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"
    script = {"turns": [{"tool_calls": [{"name": "bash", "input": {"command": "echo traced > out.txt"}}]},
                        {"text": "done"}]}
    seen: list[ev.Event] = []
    ctx = ToolContext(git_repo, git_repo, "trace", threading.Event(), tmp_path / "state")
    policy = policy_from_config(PermissionsSettings(), "auto-edit", ["bash(echo *)"], [], git_repo)
    tools = builtin_tools(["bash"])
    parts = SessionParts("trace", ScriptedProvider(script), tools, policy, PassthroughContext(), ctx, "system",
                         Pinned(), Limits(), seen.append, no_questions)
    session = Session(parts)
    trace = Trace()
    sys.setprofile(trace)
    try:
        session.send("write it")
    finally:
        sys.setprofile(None)
        session.close("done")
    return trace, seen


def test_one_bash_call_goes_down_the_layers_to_the_sandbox(traced: tuple[Trace, list[ev.Event]],
                                                           git_repo: Path) -> None:
    trace, seen = traced
    assert (git_repo / "out.txt").read_text() == "traced\n"  # the call ran, in the sandbox
    assert any(isinstance(e, ev.ToolCallApproved) and e.rule == "rules" for e in seen)  # the policy was asked
    assert trace.done, "the trace never reached the sandbox's shell"
    assert [m for m, _ in trace.stacks[-1]] == ["coder.engine.dispatch", "coder.tools.bash.tool", "coder.sandbox.shell"]
    entered = list(dict.fromkeys(m for stack in trace.stacks for m, _ in stack))
    assert {"coder.tools.params", "coder.base.converters", "coder.policy.rules"} <= set(entered), entered
    assert problems(trace.stacks, layers()) == []


def test_the_check_sees_a_return_and_a_call_up_a_layer() -> None:
    """The control: a stack that comes back into a module it left, and one that calls up a layer, are caught;
    the schema layer calling the params' own `check` is the one exception."""
    layer = layers()
    back = [("coder.engine.dispatch", "call"), ("coder.tools.base", "observed"),
            ("coder.tools.edit_tool", "<lambda>"), ("coder.tools.base", "observed")]
    up = [("coder.engine.dispatch", "call"), ("coder.sandbox.shell", "run"), ("coder.engine.live_output", "add")]
    model = [("coder.tools.params", "parse_params"), ("coder.base.converters", "model"),
             ("coder.tools.bash.tool", "check")]
    assert problems([back, up, model], layer) == [
        "returns to coder.tools.base: " + " -> ".join(f"{m}.{f}" for m, f in back),
        "up a layer, coder.sandbox.shell -> coder.engine.live_output.add: " + " -> ".join(f"{m}.{f}" for m, f in up),
    ]
