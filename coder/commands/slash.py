"""Slash commands, the frontends' entry points: the Textual app and the plain REPL hand the typed line to
`run_slash(opened, line)` and render the `CommandResult`: text (Markdown), an optional unified diff, and actions
the frontend carries out (quit, start a fresh session, resume another one, send a prompt). Everything a command
needs (policy mode, compaction, checkpoints, review, commit, the sessions store, the doctor) is reached from this
package, never from a frontend; the engine never imports it (pyproject.toml, `[tool.importlinter]`).

Custom commands are Markdown files in `.coder/commands/` of the repository or `$XDG_CONFIG_HOME/coder/commands/`
(the project's win on a name clash): a YAML front matter (`description`, `allowed-tools`) and a body that becomes
the user message, with `$ARGUMENTS` replaced by what follows the command name (custom.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from coder.base.errors import CoderError
from coder.commands.agents import allowed_while_busy
from coder.commands.base import Command, CommandResult, Ctx
from coder.commands.builtin import BUILTINS, bye
from coder.commands.custom import discover
from coder.commands.line import ALIASES, parse
from coder.commands.model import _models_text, known_models
from coder.engine.doctor import run_checks
from coder.engine.session import Session
from coder.ext.claude_settings import load_claude_settings, repo_settings_files
from coder.policy.base import PermissionAnswer
from coder.trust.decisions import decided

if TYPE_CHECKING:
    from coder.engine.builder import Opened

#: commands that may run while a turn is streaming (they only read)
SAFE_WHILE_BUSY = {"todo", "skills", "help", "cost", "context", "diff", "sessions", "quit", "doctor", "model", "wrap"}


# ---- custom commands ------------------------------------------------------------------------------------------
def all_commands(workspace: Path) -> dict[str, Command]:
    """Built-ins first; custom commands (custom.py) add names, never shadow one."""
    commands = dict(BUILTINS)
    trusted = decided(workspace)
    try:  # enabled plugins' commands (coder/ext/plugins.py), as a session here would have them
        settings = load_claude_settings(workspace, trusted, repo_settings_files(workspace) if trusted else {})
        plugin_dirs = [(p.name, folder) for p in settings.plugins for folder in p.folders("commands")]
    except CoderError:  # a broken settings file stops the session with its message; the list goes without
        plugin_dirs = []
    for name, custom in discover(workspace, set(BUILTINS) | set(ALIASES), trusted, plugin_dirs).items():
        commands[name] = Command(name, custom.summary, custom.usage, None, custom, custom.allowed_tools,
                                 custom.source)
    return commands


def _run_custom(ctx: Ctx, cmd: Command, arg: str) -> CommandResult:
    custom = cmd.custom
    if custom is None or custom.body is None:
        return CommandResult(f"/{cmd.name} is broken: {cmd.summary}", error=True)

    for rule in cmd.allowed_tools:
        ctx.session.parts.policy.remember(PermissionAnswer(True, "session", rule))
    note = f" (allowed for this session: {', '.join(cmd.allowed_tools)})" if cmd.allowed_tools else ""
    return CommandResult(f"/{cmd.name}{note}", send=custom.expand(arg))


# ---- entry points ---------------------------------------------------------------------------------------------
def completions(workspace: Path, prefix: str) -> list[tuple[str, str]]:
    """(name, summary) of commands starting with `prefix` (without the slash)."""
    return [(n, c.summary) for n, c in sorted(all_commands(workspace).items()) if n.startswith(prefix.lower())]


def run_without_session(workspace: Path, line: str) -> CommandResult:
    """The commands that answer while no session could be opened (a broken config, no key): /doctor says what
    is wrong, /model lists the models (with a name it is the frontend that opens a session), /help, /quit."""
    name, arg = parse(line)
    if name == "doctor":
        lines = []
        for c in run_checks(workspace):
            mark = "·" if c.ok and c.detail == "not set" else "✓" if c.ok else "✗"
            lines.append(f"- {mark} **{c.name}** {c.detail}" + (f" (fix: `{c.fix}`)" if not c.ok and c.fix else ""))
        return CommandResult("\n".join(lines))
    if name == "model":
        return CommandResult(_models_text(), pick=("model", "Open a session with", [(m, m) for m in known_models()]))
    if name == "quit":
        return bye()
    if name == "help":
        return CommandResult("No session is open. These work now: `/doctor` (what is wrong), `/model` (the "
                             "models; `/model PROVIDER:NAME` opens a session with one), `/quit`.")
    return CommandResult(f"/{name} needs a session, and none is open: `/doctor` says why, `/model PROVIDER:NAME` "
                         "opens one with another model.", error=True)


def run_slash(target: Opened | Session, line: str, busy: bool = False) -> CommandResult:
    """Run one slash command on an `Opened` (or a bare Session). Errors come back as results, never raised:
    a mistyped command must not end the session."""
    ctx = Ctx(target, None) if isinstance(target, Session) else Ctx(target.session, target)
    name, arg = parse(line)
    commands = ctx.commands = all_commands(ctx.workspace)
    cmd = commands.get(name)
    starting = [n for n in commands if name and n.startswith(name)]
    if cmd is None and len(starting) == 1:  # `/cos`: what the completion would have taken, whatever the timing
        name = starting[0]  # (issue 47: typed in a burst with Enter, it was unknown; after a pause it ran)
        cmd = commands[name]
    if cmd is None:
        near = [n for n in commands if n.startswith(name[:2])] if name else []
        hint = f" Did you mean {', '.join('/' + n for n in near[:4])}?" if near else ""
        return CommandResult(f"Unknown command `/{name}`.{hint} `/help` lists them.", error=True)
    if busy and name not in SAFE_WHILE_BUSY and not (name == "agents" and allowed_while_busy(arg)):
        return CommandResult(f"/{name} waits for the running turn: press Esc to interrupt it first.", error=True)
    try:
        if cmd.handler is None:
            return _run_custom(ctx, cmd, arg)
        return cmd.handler(ctx, arg)
    except CoderError as exc:
        return CommandResult(str(exc), error=True)
    except (OSError, ValueError) as exc:
        return CommandResult(f"/{name} failed: {exc}", error=True)
