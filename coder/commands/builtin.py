"""The built-in slash commands (shared by the Textual app and the plain REPL so both behave the same); the git
ones (/diff /review /commit /undo /rewind) live in git.py, /todo and /skills in work.py.

Each handler takes a `Ctx` and the text after the command name and returns a `CommandResult`; it reaches the
session only through its public objects (`Session`, `SessionParts`, `Opened`)."""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from coder.base import events as ev
from coder.commands import agents as subagents
from coder.commands import work
from coder.commands.agents_md import write_agents_md
from coder.commands.base import Command, CommandResult, Ctx
from coder.commands.git import commit, diff, review, rewind, undo
from coder.commands.model import _model
from coder.commands.modes import current_mode, set_mode
from coder.commands.perms import permissions
from coder.commands.transcript import export
from coder.config.modes import MODES
from coder.engine.doctor import run_checks
from coder.tools.tool_search_tool import ToolSearchTool

if TYPE_CHECKING:
    from coder.store.db import SessionStore

# ---- built-in commands ----------------------------------------------------------------------------------------
def _help(ctx: Ctx, arg: str) -> CommandResult:
    lines = ["| command | what it does |", "| --- | --- |"]
    for cmd in ctx.commands.values():
        lines.append(f"| `/{cmd.name}{' ' + cmd.usage if cmd.usage else ''}` | {cmd.summary} |")
    keys = ("Keys: **Enter** sends, **Shift+Enter** / **Ctrl+J** new line, **Esc** / **Ctrl+C** interrupts the "
            "turn; on a permission prompt a number or **↑**/**↓** and **Enter** answer (letters never do), **Esc** "
            "denies and stops the turn, and allowing for the session or the project asks to confirm (**↓** and "
            "**Enter** once the confirmation has been up a second); "
            "**Ctrl+C** twice on an idle prompt quits, **Shift+Tab** cycles the mode (ask → auto-edit → plan), "
            "**Ctrl+R** searches history, **Ctrl+O** opens the newest tool block, **Ctrl+T** shows the whole "
            "session (folded blocks included), **Alt+Z** wraps long lines or scrolls them sideways, **Ctrl+B** "
            "sends a running command to the background, `@path` attaches a file.")
    return CommandResult("\n".join(lines) + "\n\n" + keys)




def _mode(ctx: Ctx, arg: str) -> CommandResult:
    if not arg:
        return CommandResult(f"Mode: **{current_mode(ctx.session)}** (one of {', '.join(MODES)}).",
                             mode=current_mode(ctx.session))
    mode = set_mode(ctx.session, arg.strip())
    return CommandResult(f"Mode set to **{mode}**.", mode=mode)


def _compact(ctx: Ctx, arg: str) -> CommandResult:
    parts = ctx.session.parts
    ctx.session.compacting(arg.strip())
    compaction = parts.context.compact_now(ctx.session.history, parts.pinned, arg.strip())
    if compaction is None:
        t = usage_totals(ctx)
        used, window = t["context_tokens"], t["context_window"]
        size = (f"the context is {used:,} of {window:,} tokens ({100 * used / max(window, 1):.0f}%) at the last "
                "request" if used else f"no request has been sent yet (the window is {window:,} tokens)")
        return CommandResult(f"Nothing needed compacting yet: {size}, {len(ctx.session.history)} message(s) in "
                             "the history, too little to summarise.")
    parts.record(compaction.event())
    return CommandResult()  # both frontends show the compaction from its event: said once, not twice


def usage_totals(ctx: Ctx) -> dict[str, Any]:
    """Token and cost totals of the session from the stored usage events (a resumed session counts them all)."""
    totals = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), 0)
    last: ev.UsageEvent | None = None
    if ctx.store is not None:
        for event in ctx.store.stored(ctx.session.id):
            if isinstance(event, ev.UsageEvent):
                for key in totals:
                    totals[key] += getattr(event, key)
                last = event
    return {**totals, "requests": ctx.session.stats.turns, "cost_usd": ctx.session.stats.cost_usd,
            "context_tokens": last.context_tokens if last else 0,
            "context_window": last.context_window if last else ctx.session.parts.provider.context_window}


def _cost(ctx: Ctx, arg: str) -> CommandResult:
    t = usage_totals(ctx)
    total = sum(t[k] for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
    return CommandResult(  # the total is the status bar's token figure: both count every token of every request
        f"Session cost **${t['cost_usd']:.4f}** over {t['requests']} model request(s).\n\n"
        f"| input | output | cache read | cache write | total (status bar) |\n| ---: | ---: | ---: | ---: | ---: |\n"
        f"| {t['input_tokens']:,} | {t['output_tokens']:,} | {t['cache_read_tokens']:,} | "
        f"{t['cache_write_tokens']:,} | {total:,} |")


def _estimate(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str)) // 4 if not isinstance(value, str) \
        else len(value) // 4


def _context(ctx: Ctx, arg: str) -> CommandResult:
    """What the context holds, part by part. The parts' sizes are estimates (4 characters a token); scaled to the
    measured size of the last request, they add up to it (issue 47: a table of raw estimates did not add up to the
    figure above it, and counted the definitions of deferred tools, which are not sent whole)."""
    parts = ctx.session.parts
    search = next((t for t in parts.tools.values() if isinstance(t, ToolSearchTool)), None)
    deferred = set(search.catalog) if search is not None else set()
    sent = [t.contract.spec().__dict__ for name, t in parts.tools.items() if name not in deferred]
    rows: dict[str, int] = {"system prompt": _estimate(parts.system_prompt), "tool definitions": _estimate(sent)}
    for message in ctx.session.history:
        for block in message.content:
            kind = type(block).__name__
            label = {"TextBlock": f"{message.role} text", "ToolUseBlock": "tool calls",
                     "ToolResultBlock": "tool results", "ThinkingBlock": "thinking"}.get(kind, kind)
            rows[label] = rows.get(label, 0) + _estimate(block.__dict__)
    t = usage_totals(ctx)
    used, window = t["context_tokens"], t["context_window"]
    estimated = sum(rows.values())
    if used:  # the measured size, shared out as the estimates are
        scaled = {label: round(n * used / max(estimated, 1)) for label, n in rows.items()}
        largest = max(scaled, key=lambda label: scaled[label])
        scaled[largest] += used - sum(scaled.values())  # what rounding left over: the sum is the measured size
        rows = scaled
    total = sum(rows.values())
    lines = ["| part | ~tokens | share |", "| --- | ---: | ---: |"]
    for label, n in sorted(rows.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {label} | {n:,} | {100 * n / max(total, 1):.0f}% |")
    lines.append(f"| **all** | **{total:,}** | 100% |")
    if used:
        head = (f"Context: **{used:,}** of {window:,} tokens ({100 * used / max(window, 1):.1f}%) at the last "
                f"request; {len(ctx.session.history)} messages in the history. Its parts, their shares estimated "
                "from their characters:")
    else:
        head = (f"No request yet (the window is {window:,} tokens); what the first would hold, estimated at 4 "
                "characters a token:")
    note = f"\n\n{len(deferred)} more tools load on demand (`tool search`): only their names are sent." \
        if deferred else ""
    return CommandResult(head + "\n\n" + "\n".join(lines) + note)


def _sessions(ctx: Ctx, arg: str) -> CommandResult:
    if ctx.store is None:
        return CommandResult("The sessions store is not open in this frontend.", error=True)
    rows = ctx.store.sessions(20, None if arg.strip() == "--all" else str(ctx.workspace), ctx.session.id,
                             top_level=True)
    if not rows:
        return CommandResult("No stored sessions here (`/sessions --all` lists every workspace).")
    # one line a session, the id first as a single unbreakable word: a Markdown table squeezes its columns at 80
    # columns and wraps (or cuts) the id, which then cannot be copied into `/resume ID`; the model goes last
    lines = []
    for row in rows:
        title = " ".join((row.title or first_user_text(ctx.store, row.id)).split())[:60] or "(no prompt yet)"
        mark = " **(this one)**" if row.id == ctx.session.id else ""
        when = time.strftime("%m-%d %H:%M", time.localtime(row.updated))
        model = row.model if len(row.model) <= 32 else row.model[:31] + "…"
        lines.append(f"- `{row.id}`{mark} · {when} · {row.status} · {_md_escape(title)} · _{_md_escape(model)}_")
    return CommandResult("Stored sessions, newest first:\n\n" + "\n".join(lines) +
                         "\n\n`/resume ID` goes on with one.")


def _session_label(store: Any, row: Any) -> str:
    title = " ".join((row.title or first_user_text(store, row.id)).split())[:70] or "(no prompt yet)"
    return f"{time.strftime('%m-%d %H:%M', time.localtime(row.updated))} · {row.status} · {title} · {row.id}"


def _md_escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text)


def first_user_text(store: SessionStore, session_id: str) -> str:
    for row in store.events(session_id):
        if row.type == "user_message":
            text = str(row.data.get("text", ""))
            return text.splitlines()[0] if text else ""
    return ""


def _resume(ctx: Ctx, arg: str) -> CommandResult:
    if not arg.strip():
        if ctx.store is None:
            return CommandResult("The sessions store is not open in this frontend.", error=True)
        rows = [r for r in ctx.store.sessions(50, str(ctx.workspace), top_level=True) if r.id != ctx.session.id]
        if not rows:  # said as such: the list would have held only this session
            return CommandResult("No other session to resume in this workspace (`/sessions --all` lists every "
                                 "workspace's, `/resume ID` takes any of them).")
        listing = _sessions(ctx, "")
        listing.pick = ("resume", "Resume a session", [(r.id, _session_label(ctx.store, r)) for r in rows])
        return listing
    if ctx.store is None:
        return CommandResult("The sessions store is not open in this frontend.", error=True)
    row = ctx.store.session(arg.strip())  # UsageError names the problem
    if row.id == ctx.session.id:
        return CommandResult("That is the current session.")
    return CommandResult(f"Resuming session `{row.id}`.", resume=row.id)


def _clear(ctx: Ctx, arg: str) -> CommandResult:
    return CommandResult("Started a fresh session (the previous one is saved; `/resume` goes back).",
                         new_session=True)


def _init(ctx: Ctx, arg: str) -> CommandResult:
    path, created = write_agents_md(ctx.workspace, force=arg.strip() == "--force")
    if not created:
        return CommandResult(f"`{path}` exists already; `/init --force` rewrites it.", error=True)
    return CommandResult(f"Wrote `{path}` from what the repository shows; review and extend it.")


def _doctor(ctx: Ctx, arg: str) -> CommandResult:
    """The machine checks of `coder doctor`, but the model line is this session's model: the command-line check
    asks which model a *new* session would get, which says "none usable" in a session started with `--model`.
    Information (an unset API key of another provider, a language server not installed) is shown neutral, `·`,
    not as a pass."""
    provider = ctx.session.parts.provider
    lines = []
    for c in run_checks(ctx.workspace):
        if c.name == "model":
            window = provider.context_window
            lines.append(f"- ✓ **model** `{provider.spec}` (this session" +
                         (f", context window {window:,} tokens)" if window else ")"))
            continue
        mark = "·" if c.info else "✓" if c.ok else "✗"
        # a check indented under another (each language server under "language servers") is a nested item: the
        # spaces inside `** name**` left the bold unrendered (issue 47)
        nested = "  " if c.name != c.name.lstrip() else ""
        lines.append(f"{nested}- {mark} **{c.name.strip()}** {c.detail}" +
                     (f" (fix: `{c.fix}`)" if not c.ok and c.fix else ""))
    return CommandResult("\n".join(lines))


def _wrap(ctx: Ctx, arg: str) -> CommandResult:
    """The app takes /wrap itself (coder/tui/keys.py: long lines wrap or scroll sideways); here it is what the
    plain REPL answers, whose lines the terminal wraps."""
    return CommandResult("The plain REPL's long lines wrap at the terminal's width. In the app, `/wrap` (or "
                         "**Alt+Z**) switches code blocks and tool output between wrapping and scrolling sideways.")


def bye() -> CommandResult:
    """What `/quit` answers, with a session or without one."""
    return CommandResult("Bye.", quit=True)


def _quit(ctx: Ctx, arg: str) -> CommandResult:
    return bye()


BUILTINS: dict[str, Command] = {c.name: c for c in (
    Command("help", "this list", "", _help),
    Command("model", "show or switch the model", "[PROVIDER:NAME]", _model),
    Command("mode", "show or set the permission mode: plan, ask, auto-edit, auto", "[MODE]", _mode),
    Command("permissions", "the rules your “always” answers saved; remove N takes one back", "[remove N]",
            permissions),
    Command("compact", "summarise the conversation now", "[focus]", _compact),
    Command("cost", "tokens and cost of this session", "", _cost),
    Command("context", "what fills the context window", "", _context),
    Command("diff", "the work tree's changes against HEAD", "", diff),
    Command("review", "review the current changes", "", review),
    Command("commit", "review, then commit the changes (message generated if none given)", "[--force] [message]",
            commit),
    Command("undo", "say what undoing your last message's file changes touches; `yes` does it",
            "[yes] [--force]", undo),
    Command("rewind", "list your messages and what changed after each, or go back to before one",
            "[N] [yes] [--conversation]", rewind),
    Command("export", "write this session's transcript as Markdown", "[FILE]", export),
    Command("sessions", "stored sessions of this repository", "[--all]", _sessions),
    Command("resume", "go on with a stored session", "[ID]", _resume),
    Command("clear", "start a fresh session", "", _clear),
    Command("init", "write AGENTS.md from what the repository shows", "[--force]", _init),
    Command("doctor", "check the machine", "", _doctor),
    Command("todo", "the task list the model keeps (--plan: and the approved plan)", "[--plan]", work.todo),
    Command("agents", "the subagents: state and cost; show, run, stop, merge or discard one",
            "[ACTION]", subagents.agents),
    Command("skills", "the Agent Skills this session offers", "", work.skills),
    Command("wrap", "long lines of code and tool output: wrap, or scroll sideways (Alt+Z)", "[on/off]", _wrap),
    Command("quit", "leave (the session is saved)", "", _quit),
)}
