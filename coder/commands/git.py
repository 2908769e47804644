"""The git slash commands: /diff, /review, /commit, /undo, /rewind (shared by the app and the REPL)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from coder import events as ev
from coder.commands.base import CommandResult, Ctx

if TYPE_CHECKING:
    from coder.vcs.checkpoints import RestoreResult


def diff(ctx: Ctx, arg: str) -> CommandResult:
    if not ctx.is_git:
        return CommandResult("Not a git repository: there is no diff to show.", error=True)
    from coder.vcs.repo import diff

    text = diff(ctx.workspace)
    return CommandResult("" if text.strip() else "No changes against HEAD.", diff=text)


def _task(ctx: Ctx) -> str:
    return ctx.session.parts.pinned.task or "(no task given)"


def review(ctx: Ctx, arg: str) -> CommandResult:
    if not ctx.is_git:
        return CommandResult("Not a git repository: nothing to review.", error=True)
    from coder.review.pipeline import review as run_review
    from coder.vcs.repo import diff

    text = diff(ctx.workspace)
    if not text.strip():
        return CommandResult("No changes against HEAD: nothing to review.")
    result = run_review(ctx.workspace, text, _task(ctx), ctx.session.parts.provider, ctx.config)
    findings = [f.to_dict() for f in result.findings]
    ctx.session.parts.record(ev.ReviewEvent(result.verdict, findings))  # both frontends show the verdict line from it
    # the findings are the command's output, rendered as Markdown; a failing verdict is not a failed command
    # (an error result is printed as plain text: the findings showed as raw `**high**` and backticks)
    return CommandResult(_findings(findings) or "No findings.")


def _findings(findings: list[dict[str, Any]]) -> str:
    """The findings as a Markdown list (one item a finding, so they never run together); the verdict and the
    commit are shown from their events (ReviewEvent, CommitEvent), not repeated here."""
    lines = []
    for f in findings[:30]:
        where = (f.get("file") or "(patch)") + (f":{f['line']}" if f.get("line") else "")
        lines.append(f"- **{f.get('severity', '')}** `{where}` {f.get('message', '')}")
    return "\n".join(lines)


def commit(ctx: Ctx, arg: str) -> CommandResult:
    """Review the session's changes, let the agent fix a failing review (bounded rounds), then commit; the same
    path as `coder run --commit`. `--force` commits despite a failing review; the rest is the message."""
    if not ctx.is_git:
        return CommandResult("Not a git repository: nothing to commit.", error=True)
    from coder.engine.finish import review_and_commit

    text = arg.strip()
    force = text.startswith("--force")
    text = text[len("--force"):].strip() if force else text
    outcome = review_and_commit(ctx.session, override=force, message=text or None)
    parts = [_findings(outcome.findings)]
    if not outcome.committed:
        parts.append(outcome.message + ("" if force or outcome.reason != "review failed"
                                        else " Fix the findings, or `/commit --force`."))
    return CommandResult("\n\n".join(p for p in parts if p),
                         error=not outcome.committed and outcome.reason != "nothing to commit")


def undo(ctx: Ctx, arg: str) -> CommandResult:
    cp = ctx.session.parts.checkpointer  # None: not a git repository, or --no-checkpoints
    if cp is None:
        return CommandResult("Checkpoints are off (not a git repository, or not in this build): nothing to undo.",
                             error=True)
    result = cp.undo(force=arg.strip() == "--force")
    return CommandResult(f"Undone: {result.summary()}." + _changed(result))


def _changed(result: RestoreResult) -> str:
    changed = list(result.changed)
    return ("\n\nFiles: " + ", ".join(f"`{p}`" for p in changed[:20])) if changed else ""


def rewind(ctx: Ctx, arg: str) -> CommandResult:
    cp = ctx.session.parts.checkpointer  # None: not a git repository, or --no-checkpoints
    if cp is None:
        return CommandResult("Checkpoints are off (not a git repository, or not in this build).", error=True)
    words = arg.split()
    if not words:
        rows = ["| id | when | label | files |", "| ---: | --- | --- | --- |"]
        for c in cp.list():
            when = time.strftime("%H:%M:%S", time.localtime(c.created))
            rows.append(f"| {c.id} | {when} | {c.label} | {', '.join(c.files_changed[:4])} |")
        return CommandResult("Checkpoints of this session (`/rewind ID` restores the files, `--conversation` "
                             "the conversation too, `--force` overrides a conflict):\n\n" + "\n".join(rows))
    target = words[0]
    checkpoint = cp.get(int(target) if target.isdigit() else target)
    result = cp.restore(checkpoint.id, force="--force" in words)
    text = f"Rewound: {result.summary()}." + _changed(result)
    if "--conversation" in words:
        try:
            dropped = ctx.session.rewind_conversation(str(checkpoint.id))
            text += f"\n\nThe conversation is back there too ({dropped} message(s) dropped)."
        except KeyError:
            text += "\n\nThe conversation was kept: this checkpoint is older than what this session remembers."
    return CommandResult(text)
