"""Review before commit: the session's changes go through the reviewer; a failing verdict goes back to the agent
as feedback for a bounded number of fix rounds; the commit happens only after a passing (or warning) review, or
when the user overrides. One commit per task, with a message drawn from the diff and the task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coder.engine import events as ev
from coder.engine.session import Session


@dataclass
class CommitOutcome:
    committed: bool
    reason: str  # committed | nothing to commit | review failed | fix round stopped: X | blocked by hook | error
    sha: str | None = None
    message: str = ""
    branch: str | None = None
    verdict: str | None = None
    rounds: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def session_diff(session: Session) -> tuple[str, list[str] | None]:
    """The diff of the work tree against HEAD, limited to what this session changed when that is known (so the
    user's own uncommitted changes elsewhere stay out of review and commit)."""
    from coder.vcs.repo import diff_trees, resolve_tree, worktree_tree

    root = session.parts.tool_ctx.workspace
    paths = sorted(session.stats.files_changed) or None
    return diff_trees(root, resolve_tree(root, "HEAD"), worktree_tree(root), paths), paths


def review_session(session: Session, round_number: int = 1):
    """Run the reviewer on the session's changes and emit the verdict."""
    from coder.review.pipeline import review

    parts = session.parts
    diff, _ = session_diff(session)
    result = review(parts.tool_ctx.workspace, diff, parts.pinned.task, parts.provider, parts.tool_ctx.config)
    session.emit(ev.ReviewEvent(result.verdict, [f.to_dict() for f in result.findings], round_number))
    return result


def review_and_commit(session: Session, branch: str | None = None, override: bool = False) -> CommitOutcome:
    from coder.vcs.commit import commit_changes
    from coder.vcs.message import commit_message

    parts = session.parts
    root = parts.tool_ctx.workspace
    config = parts.tool_ctx.config
    max_rounds = int(config.get("review", {}).get("max_fix_rounds", 2))
    verdict, findings, round_number = None, [], 0
    for round_number in range(1, max_rounds + 2):
        diff, paths = session_diff(session)
        if not diff.strip():
            return CommitOutcome(False, "nothing to commit", rounds=round_number - 1)
        result = review_session(session, round_number)
        verdict, findings = result.verdict, [f.to_dict() for f in result.findings]
        if result.verdict != "fail" or override:
            break
        if round_number > max_rounds:
            return CommitOutcome(False, "review failed", verdict=verdict, rounds=round_number, findings=findings)
        outcome = session.send(result.feedback() + "\n\nFix these problems; the commit waits for a passing review.")
        if outcome.reason != "done":
            return CommitOutcome(False, f"fix round stopped: {outcome.reason}", verdict=verdict, rounds=round_number,
                                 findings=findings)
    diff, paths = session_diff(session)
    message = commit_message(diff, parts.pinned.task, parts.provider, parts.provider.spec)
    if parts.hooks is not None and hasattr(parts.hooks, "before_commit"):
        blocked = parts.hooks.before_commit(message, diff)
        if blocked is not None:
            return CommitOutcome(False, f"blocked by hook: {blocked}", verdict=verdict, rounds=round_number)
    result = commit_changes(root, message, branch=branch, paths=paths, sandbox_config=config)
    if not result.committed:
        return CommitOutcome(False, f"error: {result.error}", verdict=verdict, rounds=round_number, findings=findings)
    session.emit(ev.CommitEvent(result.sha or "", result.message, result.branch))
    return CommitOutcome(True, "committed", result.sha, result.message, result.branch, verdict, round_number, findings)
