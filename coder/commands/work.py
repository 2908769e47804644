"""`/todo` and `/skills` (issue 19): the task list the model keeps, and the skills this session offers."""

from __future__ import annotations

from coder.commands.base import CommandResult, Ctx
from coder.ext.skills import describe_catalog


def todo(ctx: Ctx, arg: str) -> CommandResult:
    pinned = ctx.session.parts.pinned
    plan = f"\n\n**Approved plan** (pinned):\n\n{pinned.plan}" if pinned.plan and arg.strip() == "--plan" else ""
    if not pinned.todos:
        return CommandResult("No task list yet: the model writes one with the `todo` tool for work of several "
                             "steps." + plan)
    done = sum(1 for item in pinned.todos if item.get("status") == "done")
    return CommandResult(f"**Task list** ({done}/{len(pinned.todos)} done):\n\n{pinned.todo_text()}" + plan)


def skills(ctx: Ctx, arg: str) -> CommandResult:
    catalog = ctx.session.parts.tool_ctx.services.get("skills")
    if catalog is None:
        return CommandResult("Skills are not set up in this session.", error=True)
    rows = describe_catalog(catalog)
    lines = [f"- **{r['name']}** ({r['source']}): {r['description']}" for r in rows]
    if not rows:
        lines.append("No skills installed: folders with a `SKILL.md` in `~/.config/coder/skills/`, "
                     "`~/.claude/skills/`, or `.coder/skills/` / `.claude/skills/` of a trusted repository.")
    if catalog.untrusted:
        lines.append(f"{catalog.untrusted} skill folder(s) of this repository are ignored: it is not trusted "
                     "(`coder trust`).")
    lines.extend(f"- ! {p}" for p in catalog.problems)
    return CommandResult("\n".join(lines))
