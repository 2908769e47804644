"""The git slash commands: /diff, /review, /commit, /undo, /rewind (shared by the app and the REPL)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from coder.base import events as ev
from coder.commands.base import CommandResult, Ctx
from coder.engine.finish import review_and_commit, stage_event
from coder.engine.turns import user_turns
from coder.review.pipeline import review as run_review
from coder.vcs.repo import Repo

if TYPE_CHECKING:
    from coder.vcs.checkpoints import RestoreResult


def diff(ctx: Ctx, arg: str) -> CommandResult:
    if not ctx.is_git:
        return CommandResult("Not a git repository: there is no diff to show.", error=True)
    text = _repo(ctx).diff()
    return CommandResult("" if text.strip() else "No changes against HEAD.", diff=text)


def _repo(ctx: Ctx) -> Repo:
    """The session's repository (opened when the session was: `SessionParts.repo`)."""
    return ctx.session.parts.repo or Repo.open(ctx.workspace)


def _task(ctx: Ctx) -> str:
    return ctx.session.parts.pinned.task or "(no task given)"


def review(ctx: Ctx, arg: str) -> CommandResult:
    if not ctx.is_git:
        return CommandResult("Not a git repository: nothing to review.", error=True)
    repo = _repo(ctx)
    text = repo.diff()
    if not text.strip():
        return CommandResult("No changes against HEAD: nothing to review.")

    record = ctx.session.parts.record  # each stage is shown as it ends: a review takes seconds
    result = run_review(repo, text, _task(ctx), ctx.session.parts.provider, ctx.config,
                        on_stage=lambda stage: record(stage_event(stage)))
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

    text = arg.strip()
    force = text.startswith("--force")
    text = text[len("--force"):].strip() if force else text
    outcome = review_and_commit(ctx.session, override=force, message=text or None)
    parts = [_findings(outcome.findings)]
    if not outcome.committed:
        said = outcome.message.rstrip()
        said += "" if said.endswith((".", "!", "?", ":")) else "."  # a sentence of its own before the next one
        parts.append(said + ("" if force or outcome.reason != "review failed"
                             else " Fix the findings, or `/commit --force`."))
    return CommandResult("\n\n".join(p for p in parts if p),
                         error=not outcome.committed and outcome.reason != "nothing to commit")


YES = {"yes", "y", "--yes", "-y"}


def undo(ctx: Ctx, arg: str) -> CommandResult:
    """Undo what the user's last message changed, and nothing else (issue 24, bug 13). `/undo` says first what it
    will touch, files committed since included; `/undo yes` does it. A last turn that changed nothing has
    nothing to undo: going further back is `/rewind`'s job, where the person picks the message."""
    cp = ctx.session.parts.checkpointer  # None: not a git repository, or --no-checkpoints
    if cp is None:
        return CommandResult("Checkpoints are off (not a git repository, or not in this build): nothing to undo.",
                             error=True)
    words = arg.split()
    turns = user_turns(ctx.session, cp)
    if not turns:
        return CommandResult("Nothing to undo: you have not sent a message in this session yet.", error=True)
    last = turns[-1]
    said = f"your last message ({last.number}, “{last.short()}”)"
    current = cp.current()
    if last.end is None:
        return CommandResult(f"Nothing to undo: {said} changed no file. `/rewind` lists your messages and what "
                             "changed after each.", error=True)
    if current is None or current.id != last.end.id or last.start_id is None:
        already = current is not None and current.id == last.start_id
        return CommandResult(("Nothing to undo: the changes of " + said + " are already undone.") if already else
                             f"Nothing to undo: the files are no longer where {said} left them (a /rewind since?). "
                             "`/rewind` lists your messages.", error=True)
    plan = cp.plan(last.start_id)
    if not YES & set(words):
        return CommandResult(f"`/undo` would undo the changes of {said}. {plan.describe()}\n\n"
                             "Type `/undo yes` to do it.")
    result = cp.restore(last.start_id, force="--force" in words)
    restored = _task_list_before(ctx, last.number)
    return CommandResult(f"Undone {said}: {result.summary()}." + _changed(result) +
                         ("\n\nThe task list is back to what it was before it." if restored else ""))


def _task_list_before(ctx: Ctx, message: int) -> bool:
    """The task list as it was before user message `message` (issue 32: it stayed as the undone turn left it,
    its items done although their changes were gone): pinned for the model and sent as an event, so every
    frontend and a resume see it. True when the undone turn had changed it."""
    if ctx.store is None:
        return False
    before: list[dict[str, Any]] = []
    seen, changed = 0, False
    for event in ctx.store.stored(ctx.session.id):
        if isinstance(event, ev.UserMessage):
            seen += 1
        elif isinstance(event, ev.TodoUpdated):
            if seen < message:
                before = list(event.items)
            else:
                changed = True
    if changed:
        ctx.session.parts.pinned.todos = [dict(item) for item in before]
        ctx.session.parts.record(ev.TodoUpdated(before))
    return changed


def _changed(result: RestoreResult) -> str:
    changed = list(result.changed)
    return ("\n\nFiles: " + ", ".join(f"`{p}`" for p in changed[:20])) if changed else ""


def _sent_at(ctx: Ctx, texts: list[str]) -> list[float | None]:
    """When each of the user's messages `texts` (in order) was sent, from the stored events (issue 47: the time
    was the checkpoint's, empty for a message that changed nothing). A message cut from the conversation by a
    rewind is still stored, so they are matched in order by their text."""
    times: list[float | None] = [None] * len(texts)
    if ctx.store is None:
        return times
    stored = [(row.time, str(row.data.get("text", ""))) for row in ctx.store.events(ctx.session.id)
              if row.type == "user_message"]
    at = 0
    for n, text in enumerate(texts):
        for k in range(at, len(stored)):
            if stored[k][1].strip() == text.strip():
                times[n], at = stored[k][0], k + 1
                break
    return times


def _listing(ctx: Ctx, cp: Any) -> CommandResult:
    """The user's messages, each with what changed after it: the points /rewind goes back to."""
    turns = user_turns(ctx.session, cp)
    if not turns:
        return CommandResult("No messages yet in this session: nothing to rewind to.")
    rows = ["| # | when | your message | changed after it |", "| ---: | --- | --- | --- |"]
    sent = _sent_at(ctx, [t.text for t in turns])
    for t in turns:
        at = sent[t.number - 1] or (t.end.created if t.end is not None else None)
        when = time.strftime("%H:%M", time.localtime(at)) if at is not None else "?"
        files = ", ".join(f"`{p}`" for p in t.files[:4]) + (f" +{len(t.files) - 4}" if len(t.files) > 4 else "")
        text = t.short(50).replace("|", "\\|")
        rows.append(f"| {t.number} | {when} | {text} | {files or 'nothing'} |")
    return CommandResult("Your messages (`/rewind N` brings the files back to before message N, then asks "
                         "`/rewind N yes`; add `--conversation` to cut the conversation there too):\n\n"
                         + "\n".join(rows))


def rewind(ctx: Ctx, arg: str) -> CommandResult:
    """`/rewind` lists the user's messages; `/rewind N` says what going back to before message N touches,
    `/rewind N yes` does it (`--conversation`: the conversation too, `--force`: over a conflict)."""
    cp = ctx.session.parts.checkpointer  # None: not a git repository, or --no-checkpoints
    if cp is None:
        return CommandResult("Checkpoints are off (not a git repository, or not in this build).", error=True)
    words = arg.split()
    if not words:
        return _listing(ctx, cp)
    turns = user_turns(ctx.session, cp)
    if not words[0].isdigit() or not 1 <= int(words[0]) <= len(turns):
        return CommandResult(f"No message {words[0]!r}: `/rewind` lists your messages, numbered "
                             f"1 to {len(turns)}.", error=True)
    turn = turns[int(words[0]) - 1]
    if turn.start_id is None:
        return CommandResult(f"No checkpoint holds the files as they were before message {turn.number} "
                             "(pruned, or taken by an older coder).", error=True)
    said = f"before your message {turn.number} (“{turn.short()}”)"
    plan = cp.plan(turn.start_id)
    if not YES & set(words):
        rest = " ".join(w for w in words[1:] if w not in YES)
        return CommandResult(f"`/rewind {turn.number}` would bring the files back to {said}. {plan.describe()}"
                             f"\n\nType `/rewind {turn.number} yes{' ' + rest if rest else ''}` to do it.")
    result = cp.restore(turn.start_id, force="--force" in words)
    text = f"Rewound to {said}: {result.summary()}." + _changed(result)
    if "--conversation" in words:
        dropped = ctx.session.rewind_conversation(str(turn.start_id), keep=turn.index)
        text += f"\n\nThe conversation is back there too ({dropped} message(s) dropped)."
    return CommandResult(text)
