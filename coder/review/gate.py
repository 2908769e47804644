"""The review gate before a commit: review, hand the findings back for a bounded number of fix rounds, commit
only on a verdict that is not "fail" (or when the user overrides).

The engine supplies `fix_round(feedback) -> bool | None` (one agent turn with the feedback as the user message;
False when that turn did not finish) and, when it wants to ask, `override(result) -> bool`; everything else (what
is reviewed, how many rounds, the commit and its message) lives here so every frontend gets the same behaviour.
`paths` limits review and commit to the files the session changed, so the user's own uncommitted work elsewhere
stays out of both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coder.config.sections import Config
from coder.review.llm import _ask
from coder.review.pipeline import review
from coder.review.types import ReviewResult
from coder.vcs.commit import commit_changes, commit_message
from coder.vcs.message import add_trailers
from coder.vcs.repo import Repo

if TYPE_CHECKING:
    from coder.models.types import ModelProvider
    from coder.vcs.commit import CommitResult


@dataclass
class GateResult:
    committed: bool
    rounds: int  # fix rounds used
    reviews: list[ReviewResult] = field(default_factory=list)
    commit: CommitResult | None = None
    overridden: bool = False
    message: str = ""
    #: committed | nothing to commit | review failed | fix round stopped | blocked by hook | commit failed
    reason: str = ""

    @property
    def last(self) -> ReviewResult | None:
        return self.reviews[-1] if self.reviews else None


@dataclass
class GateRequest:
    """What a gate run needs: the repository and the task, the engine's callbacks, and the commit's details.
    A parameter object because the gate takes a dozen of them, most optional, and several callbacks of similar
    shape that a positional call could swap without a type error.

    `fix_round(feedback)` runs one agent turn (False when it did not finish); `override(result)` may let a failing
    verdict through; `on_review(result, n)` sees every review; `before_commit(message, diff)` may block with a
    reason. `paths` limits review and commit to those files."""

    repo: Repo
    task: str
    fix_round: Callable[[str], bool | None]
    provider: ModelProvider | None = None
    config: Config = field(default_factory=Config)
    max_rounds: int = 2
    override: Callable[[ReviewResult], bool] | None = None
    message: str | None = None  # the commit message; None asks the model (or falls back to a summary)
    model_name: str = ""
    branch: str | None = None
    paths: list[str] | None = None
    on_review: Callable[[ReviewResult, int], None] | None = None
    before_commit: Callable[[str, str], str | None] | None = None
    on_stage: Callable[[Any], None] | None = None  # each review stage as it ends (progress)
    #: trailers for the message, asked once the review passed (the evidence for the change then: issue 49)
    trailers: Callable[[], list[str]] | None = None


def review_and_commit(request: GateRequest) -> GateResult:
    """Review the work tree against HEAD (only `request.paths` when given); while it fails and rounds are left,
    send the feedback to the agent and review again; then commit (a failing verdict only with `override`'s
    consent)."""
    repo, provider, paths, config = request.repo, request.provider, request.paths, request.config
    gate = GateResult(False, 0)
    while True:
        text = repo.diff(paths=paths)
        if not text.strip():
            gate.message, gate.reason = "nothing to commit: no changes against HEAD", "nothing to commit"
            return gate
        result = review(repo, text, request.task, provider, config, on_stage=request.on_stage)
        gate.reviews.append(result)
        if request.on_review is not None:
            request.on_review(result, len(gate.reviews))
        if result.verdict != "fail":
            break
        if gate.rounds >= request.max_rounds:
            if request.override is not None and request.override(result):
                gate.overridden = True
                break
            gate.message = f"not committed: the review still fails after {gate.rounds} fix round(s)"
            gate.reason = "review failed"
            return gate
        gate.rounds += 1
        if request.fix_round(result.feedback()) is False:
            gate.message = "not committed: the fix round did not finish"
            gate.reason = "fix round stopped"
            return gate
    text = repo.diff(paths=paths)
    if not text.strip():
        gate.message, gate.reason = "nothing to commit after the fix rounds", "nothing to commit"
        return gate
    msg = request.message or commit_message(text, request.task, model_asker(provider),
                                            request.model_name or getattr(provider, "spec", ""))
    msg = add_trailers(msg, request.trailers() if request.trailers is not None else [])
    if request.before_commit is not None:
        blocked = request.before_commit(msg, text)
        if blocked is not None:
            gate.message, gate.reason = f"not committed: a before_commit hook blocked it: {blocked}", "blocked by hook"
            return gate
    gate.commit = commit_changes(repo, msg, branch=request.branch, run_hooks_in=config.vcs.hooks,
                                 paths=paths, sandbox_config=config.sandbox)
    gate.committed = gate.commit.committed
    gate.message = gate.commit.summary()
    gate.reason = "committed" if gate.committed else "commit failed"
    return gate


def model_asker(provider: ModelProvider | None) -> Callable[[str, str], str] | None:
    """`provider` as the one-question function the commit message asks (coder/vcs never imports the models)."""
    if provider is None:
        return None

    return lambda system, user: _ask(provider, system, user, max_tokens=600)[0]
