"""The review gate before a commit: review, hand the findings back for a bounded number of fix rounds, commit
only on a verdict that is not "fail" (or when the user overrides).

The engine supplies `fix_round(feedback) -> None` (one agent turn with the feedback as the user message) and,
when it wants to ask, `override(result) -> bool`; everything else (what is reviewed, how many rounds, the commit
and its message) lives here so every frontend gets the same behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from coder.review.types import ReviewResult

if TYPE_CHECKING:
    from coder.models.types import ModelProvider
    from coder.vcs.commit import CommitResult


@dataclass
class GateResult:
    committed: bool
    rounds: int  # fix rounds used
    reviews: list[ReviewResult] = field(default_factory=list)
    commit: "CommitResult | None" = None
    overridden: bool = False
    message: str = ""

    @property
    def last(self) -> ReviewResult | None:
        return self.reviews[-1] if self.reviews else None


def review_and_commit(
    repo_root: Path,
    task: str,
    fix_round: Callable[[str], None],
    provider: "ModelProvider | None" = None,
    config: dict[str, Any] | None = None,
    max_rounds: int = 2,
    override: Callable[[ReviewResult], bool] | None = None,
    message: str | None = None,
    model_name: str = "",
    branch: str | None = None,
) -> GateResult:
    """Review the work tree against HEAD; while it fails and rounds are left, send the feedback to the agent
    and review again; then commit (a failing verdict only with `override`'s consent)."""
    from coder.review.pipeline import review
    from coder.vcs.commit import commit_changes, commit_message
    from coder.vcs.repo import diff, has_changes

    config = config or {}
    gate = GateResult(False, 0)
    while True:
        text = diff(repo_root)
        if not text.strip():
            gate.message = "nothing to commit: no changes against HEAD"
            return gate
        result = review(repo_root, text, task, provider, config)
        gate.reviews.append(result)
        if result.verdict != "fail":
            break
        if gate.rounds >= max_rounds:
            if override is not None and override(result):
                gate.overridden = True
                break
            gate.message = f"not committed: the review still fails after {gate.rounds} fix round(s)"
            return gate
        gate.rounds += 1
        fix_round(result.feedback())
    if not has_changes(repo_root):
        gate.message = "nothing to commit after the fix rounds"
        return gate
    msg = message or commit_message(diff(repo_root), task, provider, model_name or getattr(provider, "spec", ""))
    hooks = str((config.get("vcs", {}) or {}).get("hooks", "sandbox"))
    gate.commit = commit_changes(repo_root, msg, branch=branch, run_hooks_in=hooks,  # type: ignore[arg-type]
                                 sandbox_config=config)
    gate.committed = gate.commit.committed
    gate.message = gate.commit.summary()
    return gate
