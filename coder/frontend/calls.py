"""How a tool call and its result read for a person, in one line: the call as its tool names it, the result's
first line with a mark, and why a call failed. The app, the REPL, the transcript and the stuck warnings all use
these, so a call reads the same everywhere."""

from __future__ import annotations

from typing import Any

from coder.base.events import call_failure as failure

__all__ = ["failure", "input_summary", "one_line", "result_line", "tool_title"]


def one_line(text: str, limit: int) -> str:
    """`coder.tools.base.one_line`: the frontends load the tools only once a session has calls to show."""
    from coder.tools.base import one_line as line  # start-up time: the tools load after the app's first paint

    return line(text, limit)


def tool_title(tool: str, args: dict[str, Any]) -> str:
    """`bash: pytest -q`, `edit src/app.py (str_replace)`: the call as a person would name it (its tool says)."""
    from coder.tools.registry import describe  # start-up time: the tools load after the app's first paint

    return describe(tool, args).title


def input_summary(tool: str, args: dict[str, Any]) -> str:
    """What a permission prompt shows: the command itself, or the edit's path and a preview (its tool says)."""
    from coder.tools.registry import describe  # start-up time: the tools load after the app's first paint

    return describe(tool, args).detail


def result_line(output: str, is_error: bool, duration: float = 0.0, data: dict[str, Any] | None = None) -> str:
    """`✓ first line … 3 more lines 0.4s`, or `✗ exit 127 · first line` for a failed call."""
    lines = [line for line in output.splitlines() if line.strip()]
    first = one_line(lines[0], 80) if lines else "(no output)"
    rest = len(lines) - 1
    more = f" … {rest} more line{'s' if rest > 1 else ''}" if rest > 0 else ""
    took = f" {duration:.1f}s" if duration >= 0.1 else ""
    why = failure(is_error, data, output)
    job = data.get("background") if data else None
    if isinstance(job, str) and job:  # the user sent it on with Ctrl+B (coder/tools/bash/jobs.py): its job id
        return f"⇥ background job {job} · {first}{more}{took}"
    if why is None:
        return f"✓ {first}{more}{took}"
    return f"✗ {why + ' · ' if why != 'failed' else ''}{first}{more}{took}"
