"""The read_output tool: reading a clipped or masked output back, in line ranges."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from coder.base.errors import ToolError
from coder.base.resources import data_dir
from coder.store.outputs import clip_output
from coder.tools.base import ToolContext, ToolContract
from coder.tools.read_output_tool import ReadOutputTool


def _tool_and_ctx(tmp_path: Path) -> tuple[ReadOutputTool, ToolContext]:
    contract = ToolContract.load(data_dir("tools") / "read_output.json")
    ctx = ToolContext(workspace=tmp_path, cwd=tmp_path, session_id="s1", cancel=threading.Event(),
                      state_dir=tmp_path / "state")
    return ReadOutputTool(contract), ctx


def test_contract_is_read_only_and_names_the_handle() -> None:
    contract = ToolContract.load(data_dir("tools") / "read_output.json")
    assert contract.name == "read_output" and contract.permission == "read"
    assert contract.input_schema["required"] == ["handle"]


def test_reads_ranges_with_line_numbers_and_says_what_is_left(tmp_path: Path) -> None:
    tool, ctx = _tool_and_ctx(tmp_path)
    text = "\n".join(f"row {i}" for i in range(1, 1001))
    handle = clip_output(text, ctx.state_dir, max_chars=2_000).handle
    assert handle
    out = tool.run(tool.parse({"handle": handle, "start_line": 10, "end_line": 12}), ctx).output
    assert out.splitlines()[1:4] == ["    10\trow 10", "    11\trow 11", "    12\trow 12"]
    assert "lines 10-12 of 1000" in out and "start_line=13" in out
    default = tool.run(tool.parse({"handle": handle}), ctx)
    assert default.data["last_line"] == 200
    capped = tool.run(tool.parse({"handle": handle, "start_line": 1, "end_line": 1000}), ctx)
    assert capped.data["last_line"] == 400, "at most 400 lines per call"
    grep = tool.run(tool.parse({"handle": handle, "grep": "row 99", "start_line": 1, "end_line": 400}), ctx).output
    assert "row 99\n" in grep + "\n" and "row 98" not in grep
    tail = tool.run(tool.parse({"handle": handle, "start_line": 995}), ctx).output
    assert "row 1000" in tail and "more:" not in tail


@pytest.mark.parametrize("args, message", [
    ({"handle": "file:///etc/passwd"}, "not an output handle"),
    ({"handle": "output://0123456789abcdef"}, "no stored output"),
    ({"handle": "output://../../etc"}, "no stored output"),
])
def test_bad_handles_are_tool_errors(tmp_path: Path, args: dict[str, str], message: str) -> None:
    tool, ctx = _tool_and_ctx(tmp_path)
    with pytest.raises(ToolError, match=message):
        tool.run(tool.parse(args), ctx)


def test_bad_ranges_are_tool_errors(tmp_path: Path) -> None:
    tool, ctx = _tool_and_ctx(tmp_path)
    handle = clip_output("x\n" * 50_000, ctx.state_dir, max_chars=1_000).handle
    with pytest.raises(ToolError, match="past the end"):
        tool.run(tool.parse({"handle": handle, "start_line": 60_000}), ctx)
    with pytest.raises(ToolError, match="before start_line"):
        tool.run(tool.parse({"handle": handle, "start_line": 10, "end_line": 5}), ctx)
    with pytest.raises(ToolError, match="start_line = \"ten\": expected a whole number"):
        tool.run(tool.parse({"handle": handle, "start_line": "ten"}), ctx)
