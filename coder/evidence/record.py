"""The evidence record a turn that changed code ends with: `verified`, `failed` or `unverified`, the commands and
their counts, and the claim of the final message it does or does not support.

- `verified`: a run that covers the change ran after the last change, and the latest result of every covering
  command run after it passed (at least one test passed, none failed; a script exited 0).
- `failed`: the latest result of a covering command run after the last change failed (tests failed or errored, a
  non-zero exit, a timeout).
- `unverified`: nothing covering ran after the last change, or only runs whose result is unknown (the output cut
  before the runner's summary, with an exit status not its own) or that ran no test.

"Covers" (commands.py gives the selection, tracker.py decides): the project's own test command; a runner with no
selection (its whole default suite); a runner whose selected test files or folders relate to a changed file (the
changed test file itself, a folder holding it, a test named after a changed module or importing it); a script
the model wrote that imports a changed module or its package. docs/verification.md says it for users.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from coder.evidence.runners import Counts

VERIFIED, FAILED, UNVERIFIED = "verified", "failed", "unverified"
STATES = (VERIFIED, FAILED, UNVERIFIED)
#: the order best-of-N ranks them in (higher is stronger)
STRENGTH = {VERIFIED: 2, FAILED: 1, UNVERIFIED: 0}


@dataclass
class RunRecord:
    """One verifying command and how it ended."""

    command: str
    kind: str  # tests | project | script
    runner: str
    outcome: str  # passed | failed | empty (no test ran) | unknown
    exit_code: int | None = None
    counts: dict[str, int] | None = None  # passed, failed, errors, skipped, when the runner's summary was read
    covers: bool = False
    after_change: bool = False  # ran after the last change to every changed file
    by: str = "model"  # model | coder (`[verify] on_unverified = "run"`)
    why: str = ""  # what it covers, or why its result is unknown

    def line(self) -> str:
        counts = Counts(**self.counts).line() if self.counts is not None else \
            f"exit {self.exit_code}" if self.exit_code is not None else "result unknown"
        return f"`{self.command}`: {counts}"


@dataclass
class Evidence:
    state: str
    changed: list[str] = field(default_factory=list)  # the code files the session changed (net)
    runs: list[RunRecord] = field(default_factory=list)  # verifying runs after the last change
    earlier: int = 0  # verifying runs before the last change (no longer evidence)
    reason: str = ""  # one sentence: why this state
    claim: str = ""  # the final message's claim of success, if any
    unsupported_claim: bool = False  # it claims success and the state is not `verified`
    nudged: str = ""  # what coder did before the turn ended: "" | nudge | run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        runs = [RunRecord(**{k: v for k, v in r.items() if k in RunRecord.__dataclass_fields__})
                for r in data.get("runs") or []]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "runs"}
        return cls(**known, runs=runs)

    def line(self) -> str:
        """What a person reads at the end of the turn (one line; the app and `coder run` show it)."""
        shown = [r for r in self.runs if r.covers][-2:] or self.runs[-1:]
        detail = "; ".join(r.line() for r in shown)
        text = f"evidence: {self.state}" + (f" — {detail}" if detail and self.state != UNVERIFIED else "")
        if self.state == UNVERIFIED or not detail:
            text += f" — {self.reason}"
        if self.unsupported_claim:
            text += f". Unsupported claim: “{self.claim}”"
        return text

    @property
    def tone(self) -> str:
        """How a frontend colours the line: "ok" (verified, no unsupported claim), "error" (failed, or a claim the
        evidence does not support), "warn" (unverified)."""
        if self.state == FAILED or self.unsupported_claim:
            return "error"
        return "ok" if self.state == VERIFIED else "warn"

    def trailer(self) -> str:
        """The commit trailer (`/commit`, `coder run --commit`)."""
        covering = [r for r in self.runs if r.covers]
        if self.state == VERIFIED and covering:
            return f"Verified-by: {covering[-1].line().replace('`', '')}"
        what = covering[-1].line().replace("`", "") if covering else self.reason
        return f"Evidence: {self.state} ({what})"


def nudge_line(action: str) -> str:
    """What a person reads when coder told the model, before its turn ended, that the change had no proof (the app,
    `--plain`, ACP; the model's note itself is longer and goes to the model only)."""
    if action == "run":
        return "verify: coder ran the selected tests, which did not pass; the model has the result"
    return "verify: no proof yet; the model was asked once to test its change"
