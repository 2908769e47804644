"""`/agents` (issue 36): the session's subagents for the user. Without arguments, each agent with its state, time,
turns, cost and what it waits on; `show ID` its progress, report and patch; `run [AGENT] TASK` starts one in the
background (the user's, so it does not wake the model when it ends: its news waits for the model's next step);
`stop ID|all`; `merge ID [--force]` reviews its patch and merges it (`--force`: despite a failing review);
`discard ID`. The work is the engine's (`Opened.agents`); this module only reads the line and words the answer."""

from __future__ import annotations

from coder.commands.base import CommandResult, Ctx
from coder.tools.base import one_line

#: what `/agents` may do while a turn runs: only what neither writes the work tree nor waits on it
WHILE_BUSY = ("", "list", "show", "stop")
USAGE = "`/agents` · `/agents show ID` · `/agents run [AGENT] TASK` · `/agents stop ID|all` · " \
        "`/agents merge ID [--force]` · `/agents discard ID`"


def allowed_while_busy(arg: str) -> bool:
    return (arg.split() or [""])[0] in WHILE_BUSY


def agents(ctx: Ctx, arg: str) -> CommandResult:
    control = ctx.opened.agents if ctx.opened is not None else None
    if control is None:
        return CommandResult("This session runs no subagents.", error=True)
    action, _, rest = arg.strip().partition(" ")
    rest = rest.strip()
    if action in ("", "list"):
        if not control.runs:
            return CommandResult("No agents in this session yet. The model starts them with its `task` tool; "
                                 f"you with `/agents run [AGENT] TASK`. Agents: {', '.join(control.parent.agents)}.")
        lines = [f"- {run.line()}" for run in control.runs.values()]
        return CommandResult("**Agents**\n\n" + "\n".join(lines) + f"\n\n{USAGE}")
    if action == "run":
        first, _, task = rest.partition(" ")
        name, task = (first, task.strip()) if first in control.parent.agents else ("explore", rest)
        if not task:
            return CommandResult(f"What should the agent do? `/agents run [AGENT] TASK` (agents: "
                                 f"{', '.join(control.parent.agents)}).", error=True)
        result = control.start(name, task, task[:60], background=True, by="user")
        ident = str(result.data.get("agent", "")) if not result.is_error else ""
        if not ident:
            return CommandResult(result.output, error=result.is_error)
        run = control.runs[ident]
        tree = (f" It works in its own worktree (`{run.tree.path}`); what it changes comes back as a patch for "
                f"`/agents merge {ident}` or `/agents discard {ident}`.") if run.tree else ""
        # the engine's words are the model's ("you will read of its end after a later tool call"): these are yours
        task_line = one_line(run.description or run.prompt, 60)
        return CommandResult(f"Started agent **{ident}** ({name}) in the background: {task_line}.{tree} Ctrl+G "
                             f"follows its work, `/agents stop {ident}` stops it; when it ends a note says so and "
                             f"`/agents show {ident}` has its report.")
    if not rest:
        return CommandResult(f"`/agents {action}` needs an agent's id. {USAGE}", error=True)
    ident, _, flags = rest.partition(" ")
    if action == "stop":
        if ident == "all":
            control.stop_all()
            return CommandResult("Stopping every running agent.")
        result = control.stop(ident)
    elif action == "show":
        result = control.read(ident)
        patch = result.data.get("patch")
        diff = control.patch_text(ident) if patch else ""
        return CommandResult(result.output, diff=diff, error=result.is_error)
    elif action == "merge":
        result = control.merge(ident, despite_review=flags.strip() == "--force")
    elif action == "discard":
        result = control.discard(ident)
    else:
        return CommandResult(f"Unknown action `{action}`. {USAGE}", error=True)
    return CommandResult(result.output, error=result.is_error)
