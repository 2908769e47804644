"""The calls a handoff replaces, one line each, so nothing the model ran is out of its reach after a summary.

A summary replaces turns; without this, what they ran and the `output://` handles of their masked outputs are in
no message any more, and the model can neither see nor re-read what it found there (issue 45: at round 4's
defaults only 10 of 386 lost facts could be read back). Each line names the call (the first line of the shell
line, or the tool and its arguments) and its status; its output follows inline when it is short, else its handle,
which `read_output` reads. Built by code from the full history, so every handoff lists the calls since the session
began. Within its budget the newest calls come whole (outputs up to `inline_chars` inline) in its first half,
older ones compact (a line of output at most, else the handle) in the rest, and when even that does not fit, the
oldest give way to one line naming the handle of the whole list: nothing the session ran is more than a read away.
"""

from __future__ import annotations

from pathlib import Path

from coder.context.history import Observation, observations
from coder.context.masking import command_of, exit_status
from coder.models.types import Message
from coder.store.outputs import save_output

CALLS_HEADER = "## Calls so far (oldest first; read an output:// back with read_output)"
#: outputs up to this long are inline in a whole line
INLINE_CHARS = 1000
#: outputs up to this long stay inline in a compact line
SHORT_CHARS = 120
COMMAND_CHARS = 200


def _command(obs: Observation) -> str:
    lines = command_of(obs).strip().splitlines() or [""]
    return lines[0][:COMMAND_CHARS] + (" …" if len(lines) > 1 or len(lines[0]) > COMMAND_CHARS else "")


def call_line(command: str, status: str, output: str, handle: str | None) -> str:
    """A line: the command and status, then the output (indented when it has several lines) or its handle."""
    if handle is not None:
        return f"- `{command}` ({status}; {len(output)} chars): {handle}"
    body = output.strip().replace("\n", "\n    ")
    return f"- `{command}` ({status})" + (f":\n    {body}" if body else ": no output")


def _line(obs: Observation, state_dir: Path, limit: int) -> str:
    """The call's line, its output inline up to `limit` characters, else by its handle."""
    output = obs.content.strip()
    handle = None if len(output) <= limit else save_output(state_dir, obs.content)
    return call_line(_command(obs), exit_status(obs), output, handle)


def call_log(covered: list[Message], state_dir: Path, inline_chars: int = INLINE_CHARS,
             budget_chars: int = 12_000) -> list[str]:
    """One line per answered call in `covered`, oldest first, in `budget_chars` at most (see the module's doc)."""
    calls = [o for o in observations(covered) if o.result_index is not None]
    kept: list[str] = []
    used, whole = 0, True
    room = budget_chars - 120  # for the line that names the whole list
    for obs in reversed(calls):
        text = _line(obs, state_dir, inline_chars) if whole else ""
        if not text or used + len(text) + 1 > room // 2:  # whole lines take half the room at most
            whole, text = False, _line(obs, state_dir, SHORT_CHARS)
        if used + len(text) + 1 > room:
            every = "\n".join(_line(o, state_dir, inline_chars) for o in calls)
            handle = save_output(state_dir, f"{CALLS_HEADER}\n{every}")
            kept.append(f"- ({len(calls) - len(kept)} earlier calls: the whole list is at {handle})")
            break
        kept.append(text)
        used += len(text) + 1
    return kept[::-1]
