"""Slash commands, shared by the Textual app and the plain REPL so both behave the same.

A frontend hands the typed line to `run_slash(opened, line)` and renders the `CommandResult`: text (Markdown),
an optional unified diff, and actions the frontend carries out (quit, start a fresh session, resume another one,
send a prompt). Everything a command needs (policy mode, compaction, checkpoints, review, commit, the sessions
store, the doctor) is reached from here, never from a frontend; the git commands (/diff /review /commit /undo
/rewind) live in commands_git.py.

Custom commands are Markdown files in `.coder/commands/` of the repository or `$XDG_CONFIG_HOME/coder/commands/`
(the project's win on a name clash): a YAML front matter (`description`, `allowed-tools`) and a body that becomes
the user message, with `$ARGUMENTS` replaced by what follows the command name.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from coder import events as ev
from coder.config import MODES
from coder.engine import commands_work as work
from coder.engine.command_types import Command, CommandResult, Ctx
from coder.engine.commands_git import commit, diff, review, rewind, undo
from coder.errors import CoderError

#: Shift+Tab cycles through these; `auto` is only ever chosen explicitly (/mode auto, --permission-mode auto)
MODE_CYCLE: tuple[str, ...] = ("ask", "auto-edit", "plan")
#: commands that may run while a turn is streaming (they only read)
SAFE_WHILE_BUSY = {"todo", "skills", "help", "cost", "context", "diff", "sessions", "quit", "doctor", "model"}


# ---- built-in commands ----------------------------------------------------------------------------------------
def _help(ctx: Ctx, arg: str) -> CommandResult:
    lines = ["| command | what it does |", "| --- | --- |"]
    for cmd in all_commands(ctx.workspace).values():
        lines.append(f"| `/{cmd.name}{' ' + cmd.usage if cmd.usage else ''}` | {cmd.summary} |")
    keys = ("Keys: **Enter** sends, **Shift+Enter** / **Ctrl+J** new line, **Esc** / **Ctrl+C** interrupts the "
            "turn, on a permission prompt **n** denies that call and **Esc** denies and stops the turn, "
            "**Ctrl+C** twice on an idle prompt quits, **Shift+Tab** cycles the mode (ask → auto-edit → plan), "
            "**Ctrl+R** searches history, `@path` completes files.")
    return CommandResult("\n".join(lines) + "\n\n" + keys)


def _model(ctx: Ctx, arg: str) -> CommandResult:
    provider = ctx.session.parts.provider
    if not arg:
        return CommandResult(f"Model: `{provider.spec}` (context window {provider.context_window:,} tokens). "
                             "`/model PROVIDER:NAME` switches.", model=provider.spec)
    from coder.models.registry import create_provider as create

    config = getattr(ctx.opened, "config", None) or {}
    new = create(arg.strip(), config)
    ctx.session.parts.provider = new
    compressor = getattr(ctx.session.parts.context, "provider", None)
    if compressor is provider:
        ctx.session.parts.context.provider = new
    return CommandResult(f"Model switched to `{new.spec}`.", model=new.spec)


def current_mode(session: Any) -> str:
    return str(getattr(session.parts.policy, "mode", "ask"))


def set_mode(session: Any, mode: str) -> str:
    from coder.errors import UsageError

    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}.")
    session.parts.policy.mode = mode
    return mode


def cycle_mode(session: Any) -> str:
    """Shift+Tab: the next mode of MODE_CYCLE (auto, chosen explicitly, goes back to ask)."""
    mode = current_mode(session)
    nxt = MODE_CYCLE[(MODE_CYCLE.index(mode) + 1) % len(MODE_CYCLE)] if mode in MODE_CYCLE else "ask"
    return set_mode(session, nxt)


def carry_over(session: Any) -> dict[str, Any]:
    """What `/clear` keeps in the fresh session: the model chosen with /model and the permission mode (a user who
    switched either expects a clean conversation, not their settings reset to the launch flags)."""
    out: dict[str, Any] = {"permission_mode": current_mode(session)}
    spec = getattr(session.parts.provider, "spec", None)
    if spec:
        out["model"] = str(spec)
    return out


def _mode(ctx: Ctx, arg: str) -> CommandResult:
    if not arg:
        return CommandResult(f"Mode: **{current_mode(ctx.session)}** (one of {', '.join(MODES)}).",
                             mode=current_mode(ctx.session))
    mode = set_mode(ctx.session, arg.strip())
    return CommandResult(f"Mode set to **{mode}**.", mode=mode)


def _compact(ctx: Ctx, arg: str) -> CommandResult:
    parts = ctx.session.parts
    compaction = parts.context.compact_now(ctx.session.history, parts.pinned, arg.strip())
    if compaction is None:
        t = usage_totals(ctx)
        used, window = t["context_tokens"], t["context_window"]
        size = (f"the context is {used:,} of {window:,} tokens ({100 * used / max(window, 1):.0f}%) at the last "
                "request" if used else f"no request has been sent yet (the window is {window:,} tokens)")
        return CommandResult(f"Nothing needed compacting yet: {size}, {len(ctx.session.history)} message(s) in "
                             "the history, too little to summarise.")
    parts.record(ev.CompactionEvent(compaction.kind, compaction.tokens_before, compaction.tokens_after,
                                    compaction.data))
    return CommandResult()  # both frontends show the compaction from its event: said once, not twice


def usage_totals(ctx: Ctx) -> dict[str, Any]:
    """Token and cost totals of the session from the stored usage events (a resumed session counts them all)."""
    totals = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), 0)
    last: dict[str, Any] = {}
    if ctx.store is not None:
        for row in ctx.store.events(ctx.session.id):
            if row.type == "usage":
                for key in totals:
                    totals[key] += int(row.data.get(key, 0))
                last = row.data
    return {**totals, "requests": ctx.session.stats.turns, "cost_usd": ctx.session.stats.cost_usd,
            "context_tokens": int(last.get("context_tokens", 0)),
            "context_window": int(last.get("context_window", ctx.session.parts.provider.context_window))}


def _cost(ctx: Ctx, arg: str) -> CommandResult:
    t = usage_totals(ctx)
    return CommandResult(
        f"Session cost **${t['cost_usd']:.4f}** over {t['requests']} model request(s).\n\n"
        f"| input | output | cache read | cache write |\n| ---: | ---: | ---: | ---: |\n"
        f"| {t['input_tokens']:,} | {t['output_tokens']:,} | {t['cache_read_tokens']:,} | "
        f"{t['cache_write_tokens']:,} |")


def _estimate(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str)) // 4 if not isinstance(value, str) \
        else len(value) // 4


def _context(ctx: Ctx, arg: str) -> CommandResult:
    parts = ctx.session.parts
    rows: dict[str, int] = {"system prompt": _estimate(parts.system_prompt),
                            "tool definitions": _estimate([t.contract.spec().__dict__ for t in parts.tools.values()])}
    for message in ctx.session.history:
        for block in message.content:
            kind = type(block).__name__
            label = {"TextBlock": f"{message.role} text", "ToolUseBlock": "tool calls",
                     "ToolResultBlock": "tool results", "ThinkingBlock": "thinking"}.get(kind, kind)
            rows[label] = rows.get(label, 0) + _estimate(block.__dict__)
    t = usage_totals(ctx)
    total = sum(rows.values())
    lines = ["| part | ~tokens | share |", "| --- | ---: | ---: |"]
    for label, n in sorted(rows.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {label} | {n:,} | {100 * n / max(total, 1):.0f}% |")
    used = t["context_tokens"]
    head = (f"Context: **{used:,}** of {t['context_window']:,} tokens "
            f"({100 * used / max(t['context_window'], 1):.1f}%) at the last request; "
            f"{len(ctx.session.history)} messages in the history (estimates below, 4 characters a token).\n\n")
    return CommandResult(head + "\n".join(lines))


def _sessions(ctx: Ctx, arg: str) -> CommandResult:
    if ctx.store is None:
        return CommandResult("The sessions store is not open in this frontend.", error=True)
    rows = ctx.store.sessions(20, None if arg.strip() == "--all" else str(ctx.workspace))
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


def _md_escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text)


def first_user_text(store: Any, session_id: str) -> str:
    for row in store.events(session_id):
        if row.type == "user_message":
            text = str(row.data.get("text", ""))
            return text.splitlines()[0] if text else ""
    return ""


def _resume(ctx: Ctx, arg: str) -> CommandResult:
    if not arg.strip():
        return _sessions(ctx, "")
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
    from coder.engine.agents_md import write_agents_md

    path, created = write_agents_md(ctx.workspace, force=arg.strip() == "--force")
    if not created:
        return CommandResult(f"`{path}` exists already; `/init --force` rewrites it.", error=True)
    return CommandResult(f"Wrote `{path}` from what the repository shows; review and extend it.")


def _doctor(ctx: Ctx, arg: str) -> CommandResult:
    """The machine checks of `coder doctor`, but the model line is this session's model: the command-line check
    asks which model a *new* session would get, which says "none usable" in a session started with `--model`.
    An unset API key is information (another provider may be in use), so it is shown neutral, not as a pass."""
    from coder.engine.doctor import run_checks

    provider = ctx.session.parts.provider
    lines = []
    for c in run_checks(ctx.workspace):
        if c.name == "model":
            window = getattr(provider, "context_window", 0)
            lines.append(f"- ✓ **model** `{provider.spec}` (this session" +
                         (f", context window {window:,} tokens)" if window else ")"))
            continue
        mark = "·" if c.ok and c.detail == "not set" else "✓" if c.ok else "✗"
        lines.append(f"- {mark} **{c.name}** {c.detail}" + (f" (fix: `{c.fix}`)" if not c.ok and c.fix else ""))
    return CommandResult("\n".join(lines))


def _quit(ctx: Ctx, arg: str) -> CommandResult:
    return CommandResult("Bye.", quit=True)


BUILTINS: dict[str, Command] = {c.name: c for c in (
    Command("help", "this list", "", _help),
    Command("model", "show or switch the model", "[PROVIDER:NAME]", _model),
    Command("mode", "show or set the permission mode: plan, ask, auto-edit, auto", "[MODE]", _mode),
    Command("compact", "summarise the conversation now", "[focus]", _compact),
    Command("cost", "tokens and cost of this session", "", _cost),
    Command("context", "what fills the context window", "", _context),
    Command("diff", "the work tree's changes against HEAD", "", diff),
    Command("review", "review the current changes", "", review),
    Command("commit", "review, then commit the changes (message generated if none given)", "[--force] [message]",
            commit),
    Command("undo", "undo the last turn's file changes", "[--force]", undo),
    Command("rewind", "list checkpoints, or restore one (files, and the conversation with --conversation)",
            "[ID] [--conversation] [--force]", rewind),
    Command("sessions", "stored sessions of this repository", "[--all]", _sessions),
    Command("resume", "go on with a stored session", "[ID]", _resume),
    Command("clear", "start a fresh session", "", _clear),
    Command("init", "write AGENTS.md from what the repository shows", "[--force]", _init),
    Command("doctor", "check the machine", "", _doctor),
    Command("todo", "the task list the model keeps (--plan: and the approved plan)", "[--plan]", work.todo),
    Command("skills", "the Agent Skills this session offers", "", work.skills),
    Command("quit", "leave (the session is saved)", "", _quit),
)}
ALIASES = {"exit": "quit", "q": "quit", "?": "help", "new": "clear"}


# ---- custom commands ------------------------------------------------------------------------------------------
def all_commands(workspace: Path) -> dict[str, Command]:
    """Built-ins first; custom commands (coder/engine/custom_commands.py) add names, never shadow one."""
    from coder.engine.custom_commands import discover
    from coder.trust import decided

    commands = dict(BUILTINS)
    for name, custom in discover(workspace, set(BUILTINS) | set(ALIASES), decided(workspace)).items():
        commands[name] = Command(name, custom.summary, custom.usage, None, custom, custom.allowed_tools,
                                 custom.source)
    return commands


def _run_custom(ctx: Ctx, cmd: Command, arg: str) -> CommandResult:
    custom = cmd.custom
    if custom is None or custom.body is None:
        return CommandResult(f"/{cmd.name} is broken: {cmd.summary}", error=True)
    from coder.policy.base import PermissionAnswer

    remember = getattr(ctx.session.parts.policy, "remember", None)
    for rule in cmd.allowed_tools:
        if remember is not None:
            remember(PermissionAnswer(True, "session", rule))
    note = f" (allowed for this session: {', '.join(cmd.allowed_tools)})" if cmd.allowed_tools else ""
    return CommandResult(f"/{cmd.name}{note}", send=custom.expand(arg))


# ---- entry points ---------------------------------------------------------------------------------------------
def parse(line: str) -> tuple[str, str]:
    """'/compact keep the API' -> ('compact', 'keep the API')."""
    stripped = line.strip()[1:]
    name, _, arg = stripped.partition(" ")
    name = name.lower()
    return ALIASES.get(name, name), arg


def is_command(line: str) -> bool:
    """A line is a command when it starts with '/' followed by a name (a path like /etc/x is not)."""
    return bool(re.match(r"^/[A-Za-z?][\w-]*(\s|$)", line.strip()))


def completions(workspace: Path, prefix: str) -> list[tuple[str, str]]:
    """(name, summary) of commands starting with `prefix` (without the slash)."""
    return [(n, c.summary) for n, c in sorted(all_commands(workspace).items()) if n.startswith(prefix.lower())]


def known_models() -> list[str]:
    """`provider:family` of every model the model table knows, for `/model` without an argument."""
    from coder.models.model_table import load_table

    return [f"{info.provider}:{info.family}" for info in load_table()]


def _models_text(current: str | None = None) -> str:
    head = f"Model: `{current}`. " if current else ""
    names = ", ".join(f"`{m}`" for m in known_models())
    return f"{head}`/model PROVIDER:NAME` switches; the model table knows {names} (and `scripted:FILE`)."


def run_without_session(workspace: Path, line: str) -> CommandResult:
    """The commands that answer while no session could be opened (a broken config, no key): /doctor says what
    is wrong, /model lists the models (with a name it is the frontend that opens a session), /help, /quit."""
    name, arg = parse(line)
    if name == "doctor":
        from coder.engine.doctor import run_checks

        lines = []
        for c in run_checks(workspace):
            mark = "·" if c.ok and c.detail == "not set" else "✓" if c.ok else "✗"
            lines.append(f"- {mark} **{c.name}** {c.detail}" + (f" (fix: `{c.fix}`)" if not c.ok and c.fix else ""))
        return CommandResult("\n".join(lines))
    if name == "model":
        return CommandResult(_models_text())
    if name == "quit":
        return _quit(None, arg)  # type: ignore[arg-type]
    if name == "help":
        return CommandResult("No session is open. These work now: `/doctor` (what is wrong), `/model` (the "
                             "models; `/model PROVIDER:NAME` opens a session with one), `/quit`.")
    return CommandResult(f"/{name} needs a session, and none is open: `/doctor` says why, `/model PROVIDER:NAME` "
                         "opens one with another model.", error=True)


def run_slash(target: Any, line: str, busy: bool = False) -> CommandResult:
    """Run one slash command on an `Opened` (or a bare Session). Errors come back as results, never raised:
    a mistyped command must not end the session."""
    session = getattr(target, "session", target)
    opened = target if hasattr(target, "session") else None
    ctx = Ctx(session, opened)
    name, arg = parse(line)
    commands = all_commands(ctx.workspace)
    cmd = commands.get(name)
    if cmd is None:
        near = [n for n in commands if n.startswith(name[:2])] if name else []
        hint = f" Did you mean {', '.join('/' + n for n in near[:4])}?" if near else ""
        return CommandResult(f"Unknown command `/{name}`.{hint} `/help` lists them.", error=True)
    if busy and name not in SAFE_WHILE_BUSY:
        return CommandResult(f"/{name} waits for the running turn: press Esc to interrupt it first.", error=True)
    try:
        if cmd.handler is None:
            return _run_custom(ctx, cmd, arg)
        return cmd.handler(ctx, arg)
    except CoderError as exc:
        return CommandResult(str(exc), error=True)
    except (OSError, ValueError) as exc:
        return CommandResult(f"/{name} failed: {exc}", error=True)
