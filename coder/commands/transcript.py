"""A session as a Markdown transcript: `/export [FILE]` in the app and the REPL, `coder sessions export --format md`.

The app shows a session in blocks that page out and vanish when it quits; a transcript is what a person pastes in
an issue or keeps next to a change (issue 24). It is built from the stored events, not from the screen, so it
holds everything: the messages, each tool call as a person names it with its result (long outputs cut), the
checkpoints and commits. Fences are made longer than any backtick run inside, so an output quoting Markdown
cannot end its block early.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from coder.base.events import call_failure
from coder.commands.base import CommandResult, Ctx
from coder.tools.registry import describe

MAX_OUTPUT_LINES = 60


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _cut(output: str, most: int) -> str:
    """The first `most` lines, and how many more there were (split no further than that: outputs can be long)."""
    head = output.rstrip("\n").split("\n", most)
    if len(head) <= most:
        return output
    rest = head.pop().count("\n") + 1
    return "\n".join(head) + f"\n… ({rest} more lines)"


def transcript_markdown(row: Any, events: list[dict[str, Any]], max_output_lines: int = MAX_OUTPUT_LINES) -> str:
    """The Markdown of one stored session (`row` a SessionRow, `events` its event dicts in order); each tool
    call's output cut to `max_output_lines`."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.created))
    out = [f"# coder session {row.id}", "", f"- started {when} · model `{row.model}` · status {row.status}",
           f"- workspace `{row.workspace}`", ""]
    for e in events:
        kind = e["type"]
        if kind == "user_message":
            out += ["## You", "", e["text"].rstrip(), ""]
        elif kind == "assistant_message":
            text = "".join(b.get("text", "") for b in e["message"]["content"] if b.get("type") == "text")
            if text.strip():
                out += ["## coder", "", text.rstrip(), ""]
        elif kind == "tool_call_finished":
            title = describe(e["tool"], e.get("input") or {}).title
            why = call_failure(bool(e.get("is_error")), e.get("data"), str(e.get("output", "")))
            mark = "✓" if why is None else "✗" + (f" {why}" if why != "failed" else "")
            out += [f"**{mark} {title}**" + (f" ({e['duration_s']:.1f}s)" if e.get("duration_s") else ""), ""]
            diff = str((e.get("data") or {}).get("diff") or "")
            body = diff or _cut(str(e.get("output", "")), max_output_lines)
            if body.strip():
                out += [_fence(body, "diff" if diff else ""), ""]
        elif kind == "checkpoint" and not str(e.get("label", "")).startswith("before"):
            files = ", ".join(f"`{p}`" for p in (e.get("files_changed") or [])[:8])
            out += [f"_checkpoint {e['id']}: {files or 'no files'}_", ""]
        elif kind == "commit":
            out += [f"_committed {str(e.get('sha', ''))[:10]}: {str(e.get('message', '')).splitlines()[0]}_", ""]
        elif kind == "error":
            out += [f"> {e.get('message', '')}", ""]
    return "\n".join(out).rstrip() + "\n"


def export(ctx: Ctx, arg: str) -> CommandResult:
    """`/export [FILE]`: the transcript of this session as Markdown, by default `coder-<session>.md` in the
    workspace; a relative FILE is taken from the workspace."""
    store = ctx.store
    if store is None:
        return CommandResult("The sessions store is not open in this frontend: nothing to export.", error=True)
    row = store.session(ctx.session.id)
    events = [e.to_dict() for e in store.events(row.id)]
    target = Path(arg.strip()).expanduser() if arg.strip() else Path(f"coder-{row.id}.md")
    if not target.is_absolute():
        target = ctx.workspace / target
    if target.is_dir():
        target = target / f"coder-{row.id}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(transcript_markdown(row, events), encoding="utf-8")
    return CommandResult(f"Transcript written to `{target}` ({sum(1 for e in events if e['type'] == 'user_message')}"
                         " message(s)).")
