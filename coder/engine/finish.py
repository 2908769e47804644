"""Review before commit, for a session: the reviewer's gate (coder.review.gate) driven by this session, so a
failing verdict goes back to the agent as its next user message, every review and the commit become events, and
only the files this session changed are reviewed and committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coder.base import events as ev
from coder.engine.session import Session
from coder.review.gate import GateRequest
from coder.review.gate import review_and_commit as gate
from coder.vcs.repo import Repo


@dataclass
class CommitOutcome:
    committed: bool
    reason: str  # see GateResult.reason
    message: str = ""  # the commit message, or why nothing was committed
    sha: str | None = None
    branch: str | None = None
    verdict: str | None = None
    fix_rounds: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def review_and_commit(session: Session, branch: str | None = None, override: bool = False,
                      message: str | None = None) -> CommitOutcome:
    parts = session.parts
    config = parts.tool_ctx.config

    def fix_round(feedback: str) -> bool:
        outcome = session.send(feedback + "\n\nFix these problems; the commit waits for a passing review.")
        return outcome.reason == "done"

    def on_review(result, number: int) -> None:
        session.emit(ev.ReviewEvent(result.verdict, [f.to_dict() for f in result.findings], number))

    result = gate(GateRequest(
        parts.repo or Repo.open(parts.tool_ctx.workspace), parts.pinned.task, fix_round, parts.provider, config,
        max_rounds=config.review.max_fix_rounds,
        override=(lambda _: True) if override else None, message=message,
        model_name=parts.provider.spec, branch=branch, paths=sorted(session.stats.files_changed) or None,
        on_review=on_review, before_commit=getattr(parts.hooks, "before_commit", None),
        on_stage=lambda stage: session.emit(stage_event(stage)), trailers=lambda: evidence_trailers(session)))
    last = result.last
    outcome = CommitOutcome(result.committed, result.reason, result.message, verdict=last.verdict if last else None,
                            fix_rounds=result.rounds,
                            findings=[f.to_dict() for f in last.findings] if last else [])
    if result.commit is not None and result.committed:
        outcome.sha, outcome.branch, outcome.message = result.commit.sha, result.commit.branch, result.commit.message
        session.emit(ev.CommitEvent(result.commit.sha or "", result.commit.message, result.commit.branch))
    return outcome


def evidence_trailers(session: Session) -> list[str]:
    """The commit's evidence trailer (issue 49): `Verified-by: <command>: <counts>`, or `Evidence: failed|unverified
    (why)`; none when the session tracks no evidence or changed no code."""
    watch = session.parts.evidence
    record = watch.current() if watch is not None else None
    return [record.trailer()] if record is not None else []


def stage_event(stage: Any) -> ev.ReviewStage:
    """A review stage that just ended, as the progress event both interactive frontends show."""
    return ev.ReviewStage(stage.name, stage.status, round(stage.duration, 2), stage.note[:200])
