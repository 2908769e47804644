"""One agent of a session as everyone sees it (`AgentRun`), what the parent model reads of it, and what becomes of
an isolated agent's patch: reviewed and merged, or discarded (issue 36). The running is coder/engine/agents.py.

The merge: the session's work tree is saved as a checkpoint first (so `/undo` takes a merge back, and changes
the user made since the last turn are kept in it), the patch is reviewed by the patch reviewer with the stages of
`[agents] review_stages` (the mechanical ones by default: no model, no test run; `llm` and `tests` can be added),
a failing verdict refuses unless the caller insists, and the three-way merge writes all or nothing
(coder/vcs/worktrees.py). Conflicts are shown with their hunks; the agent's tree and patch stay until the caller
discards them.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.base import events as ev
from coder.config.sections import AgentsSettings
from coder.review.pipeline import review
from coder.store.outputs import clip_output, save_output
from coder.tools.base import ToolResult, one_line
from coder.vcs import worktrees
from coder.vcs.worktrees import IsolatedTree

if TYPE_CHECKING:
    from coder.engine.session import Session
    from coder.engine.subagents import Parent

#: states of an agent that has not ended
LIVE = ev.AGENT_LIVE
#: lines of progress kept per agent
PROGRESS_LINES = 200
#: characters of a report the news carries (the rest behind an output handle)
REPORT_CHARS = 6000


@dataclass
class AgentRun:
    """One agent of the session, as the view, the tools and the news see it."""

    ident: str
    agent: str
    description: str
    prompt: str
    background: bool
    by: str = "model"  # model | user
    session_id: str = ""
    mode: str = ""  # its permission mode (never above the parent's)
    state: str = "queued"  # queued | running | done | error | max_turns | max_cost | wall_time | stuck | stopped
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    turns: int = 0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    waiting: str = "a free slot"
    report: str = ""
    error: str = ""
    tree: IsolatedTree | None = None
    result: str = ""  # the commit of its tree's result
    files: list[str] = field(default_factory=list)
    outcome: str = ""  # what became of its patch: merged, conflict, review_failed, nothing, discarded
    told: bool = False  # the parent model has heard of its end
    progress: list[str] = field(default_factory=list)
    read_to: int = 0  # progress lines the parent model has read
    cancel: threading.Event = field(default_factory=threading.Event)
    stopped: bool = False
    thread: threading.Thread | None = None
    session: Session | None = None

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    @property
    def pending_patch(self) -> bool:
        """It left changes in its isolated tree that nobody merged or discarded yet."""
        return (self.tree is not None and not self.live and bool(self.files)
                and self.outcome in ("", "conflict", "review_failed"))

    def title(self) -> str:
        return f"{self.ident} ({self.agent}: {one_line(self.description or self.prompt, 60)})"

    def line(self) -> str:
        head = f"{self.title()} {self.state}, {self.elapsed:.0f}s, {self.turns} turn(s), ${self.cost_usd:.4f}"
        if self.live and self.waiting:
            head += f"; waiting on {self.waiting}"
        if self.pending_patch:
            head += f"; {len(self.files)} file(s) changed, not merged yet"
        elif self.outcome:
            head += f"; its patch: {self.outcome}"
        return head


def ended_text(run: AgentRun, state_dir: Path) -> str:
    """What the parent model reads when `run` ended: how, its report, and what to do with its patch."""
    how = run.state + (f" ({run.error})" if run.error else "")
    lines = [f"[agent {run.title()} ended: {how}, {run.turns} turn(s), ${run.cost_usd:.4f}]"]
    report = clip_output(run.report, state_dir, max_chars=REPORT_CHARS).text if run.report else "(no report)"
    lines.append(f"Its report:\n{report}")
    lines.append(patch_note(run))
    return "\n".join(line for line in lines if line)


def patch_note(run: AgentRun) -> str:
    if run.tree is None or not run.files:
        return "It changed no file in its worktree." if run.tree is not None else ""
    shown = ", ".join(run.files[:10]) + (" ..." if len(run.files) > 10 else "")
    if not run.pending_patch:
        return f"Its patch ({shown}): {run.outcome}."
    return (f"It changed {len(run.files)} file(s) in its own worktree ({shown}); nothing of it is in your tree yet: "
            f"merge it (the patch is reviewed first) or discard it, by its id {run.ident}.")


def read_text(run: AgentRun, state_dir: Path) -> tuple[str, dict[str, Any]]:
    """An agent's state, the progress lines the caller has not read, its report once it ended, and its patch
    behind an output handle."""
    new = run.progress[run.read_to:]
    run.read_to = len(run.progress)
    lines = [run.line()]
    lines += new or ["(nothing new since you last looked)"]
    data: dict[str, Any] = {"agent": run.ident, "state": run.state}
    if not run.live:
        run.told = True
        lines.append(f"Its report:\n{clip_output(run.report, state_dir, max_chars=REPORT_CHARS).text}"
                     if run.report else "(no report)")
        if run.pending_patch and run.tree is not None:
            text = worktrees.patch(run.tree.repo, run.tree.base, run.result)
            handle = save_output(state_dir, text)
            data["patch"] = handle
            lines.append(f"{patch_note(run)}\nIts patch ({len(text.splitlines())} lines): {handle} (read it with "
                         "the output reader, in line ranges).")
    return "\n".join(lines), data


def merge_run(run: AgentRun, parent: Parent, settings: AgentsSettings, checkpointer: Any,
              despite_review: bool) -> ToolResult:
    """Review `run`'s patch and merge it into the session's tree (see the module docstring)."""
    if run.live:
        return ToolResult(f"Agent {run.title()} is still {run.state}: wait for it or stop it first.", True)
    if run.tree is None:
        return ToolResult(f"Agent {run.title()} worked in this tree: there is nothing to merge.", True)
    if not run.pending_patch:
        return ToolResult(f"Agent {run.title()}: {patch_note(run) or 'nothing to merge'}", run.outcome != "merged")
    tree = run.tree
    text = worktrees.patch(tree.repo, tree.base, run.result)
    config = dataclasses.replace(parent.config, review=dataclasses.replace(
        parent.config.review, base=tree.base, stages=list(settings.review_stages)))
    provider = parent.provider if "llm" in settings.review_stages else None
    verdict = review(tree.repo, text, run.prompt, provider, config)
    parent.record(ev.ReviewEvent(verdict.verdict, [f.to_dict() for f in verdict.findings]))
    if verdict.verdict == "fail" and not despite_review:
        run.outcome = "review_failed"
        parent.record(ev.AgentMerged(run.ident, run.outcome, list(run.files), verdict=verdict.verdict))
        return ToolResult(f"Not merged: the review of agent {run.ident}'s patch fails.\n{verdict.feedback()}\n"
                          "Merge it despite the review, fix it here yourself, or discard it.", True)
    ours = _checkpoint(checkpointer, f"before merging agent {run.ident}")
    try:
        outcome = worktrees.merge(tree.repo, tree.base, run.result, ours)
    except worktrees.VcsError as exc:
        return ToolResult(f"Agent {run.ident}'s patch could not be merged: {exc}", True)
    changed = sorted(set(outcome.written) | set(outcome.deleted))
    if outcome.merged:
        run.outcome = "nothing" if outcome.nothing else "merged"
        worktrees.forget(tree)
    else:
        run.outcome = "conflict"
    parent.record(ev.AgentMerged(run.ident, run.outcome, changed or list(run.files),
                                 [c.path for c in outcome.conflicts], verdict.verdict))
    review_line = f"Review: {verdict.verdict}." + (f"\n{verdict.feedback()}" if verdict.verdict != "pass" else "")
    tail = "" if outcome.merged else (f"\nAgent {run.ident}'s worktree is kept ({tree.path}); resolve the conflict "
                                      "here by hand (its patch: read it), then discard it.")
    summary = outcome.summary()  # ended as a sentence: Markdown joins the next line to it
    summary += "" if summary.endswith(".") else "."
    return ToolResult(f"Agent {run.ident}: {summary}\n{review_line}{tail}", not outcome.merged,
                      files_changed=changed, data={"agent": run.ident, "outcome": run.outcome})


def discard_run(run: AgentRun, parent: Parent) -> ToolResult:
    if run.live:
        return ToolResult(f"Agent {run.title()} is still {run.state}: stop it first.", True)
    if run.tree is None or run.outcome in ("merged", "nothing", "discarded"):
        return ToolResult(f"Agent {run.title()} has no patch to discard.")
    worktrees.forget(run.tree)
    run.outcome = "discarded"
    parent.record(ev.AgentMerged(run.ident, "discarded", list(run.files)))
    return ToolResult(f"Discarded agent {run.ident}'s patch and its worktree ({len(run.files)} file(s) it changed).")


def _checkpoint(checkpointer: Any, label: str) -> str | None:
    """The work tree as a checkpoint, before a merge writes it: its tree is what the merge calls "ours"."""
    if checkpointer is None:
        return None
    checkpointer.snapshot(label)
    current = checkpointer.current()
    return current.tree if current is not None else None
