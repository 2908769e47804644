"""`read_output`: read a clipped or masked tool output back from the session store, in line ranges.

Clipping (coder.store.outputs) and masking (coder.context.masking) keep the full text on disk behind an
output://<id> handle so that shrinking the context forgets nothing for good; this tool is the way back."""

from __future__ import annotations

from dataclasses import dataclass

from coder.base.errors import ToolError
from coder.base.schema import key
from coder.store.outputs import HANDLE_PREFIX, load_output
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

MAX_LINES = 400
MAX_CHARS = 20_000
DEFAULT_LINES = 200


@dataclass(frozen=True)
class ReadOutputParams(Params):
    """tools/read_output.json: a handle, a line range (the end: DEFAULT_LINES on from the start), a filter."""

    handle: str
    start_line: int = key(1, at_least=1)
    end_line: int | None = key(None, at_least=1)
    grep: str | None = None


class ReadOutputTool(Tool[ReadOutputParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def run(self, params: ReadOutputParams, ctx: ToolContext) -> ToolResult:
        handle = params.handle.strip()
        if not handle.startswith(HANDLE_PREFIX):
            raise ToolError(f"not an output handle: {handle!r} (handles look like {HANDLE_PREFIX}3f2a9c1b7d4e5f60)")
        try:
            text = load_output(ctx.state_dir, handle)
        except (FileNotFoundError, OSError):
            raise ToolError(f"no stored output {handle} in this session") from None
        lines = text.splitlines()
        total = len(lines)
        start = params.start_line
        end = params.end_line if params.end_line is not None else start + DEFAULT_LINES - 1
        if start > max(total, 1):
            raise ToolError(f"{handle} has {total} lines; start_line {start} is past the end")
        if end < start:
            raise ToolError(f"end_line {end} is before start_line {start}")
        end = min(end, total, start + MAX_LINES - 1)
        needle = params.grep
        shown: list[str] = []
        size = 0
        last = start - 1
        for number in range(start, end + 1):
            line = lines[number - 1]
            if needle and needle not in line:
                last = number
                continue
            row = f"{number:>6}\t{line}"
            if size + len(row) > MAX_CHARS and shown:
                break
            shown.append(row)
            size += len(row) + 1
            last = number
        header = f"[{handle}: lines {start}-{last} of {total}"
        header += f", only lines containing {needle!r}]" if needle else "]"
        more = f"\n[… more: continue with start_line={last + 1}]" if last < total else ""
        body = "\n".join(shown) if shown else "(no matching lines)"
        return ToolResult(f"{header}\n{body}{more}", data={"total_lines": total, "last_line": last})

