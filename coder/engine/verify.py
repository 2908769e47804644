"""The engine's side of the evidence (issue 49): the session's events go to the tracker (coder/evidence); when a
turn that changed code would end without a passing verification after its last change, the model hears so once
(`[verify] on_unverified`: "nudge" tells it, "run" runs the reviewer's selected tests in the sandbox and hands it
the result, "off" says nothing); every turn that changed code ends with its record (a `TurnEvidence` event).

Only where the model could act on it: not in plan mode, not when no shell command could run (no shell tool, or
the policy denies one, or asks and nobody can answer: a headless run in ask mode). Once per turn, never a loop:
the nudge is one more step the stuck detector counts (coder/engine/session.py `_turn_ends`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coder.base import events as ev
from coder.base.errors import SandboxUnavailable
from coder.base.resources import template
from coder.config.sections import Config
from coder.engine.session_parts import SessionParts, no_questions
from coder.evidence.commands import Verifying, classify, quoted
from coder.evidence.record import VERIFIED, Evidence
from coder.evidence.runners import Counts, any_counts
from coder.evidence.tracker import EvidenceTracker
from coder.review.context import ReviewContext
from coder.review.testing import run_selected
from coder.tools.params import ToolInputError
from coder.vcs.repo import Repo, VcsError

#: what prompts/verify_nudge.md and prompts/verify_ran.md are filled with
NUDGE_VARIABLES, RAN_VARIABLES = ("changed", "situation"), ("command", "result", "output")
NUDGE = template("verify_nudge.md", NUDGE_VARIABLES)
RAN = template("verify_ran.md", RAN_VARIABLES)
#: how much of a test run's output the model is handed (its end: where the failures and the summary are)
OUTPUT_TAIL = 4000


class Verification:
    """One session's evidence: the tracker, and what to do when a turn would end without proof."""

    def __init__(self, tracker: EvidenceTracker, config: Config, workspace: Path, repo: Repo | None) -> None:
        self.tracker = tracker
        self.config = config
        self.workspace = workspace
        self.repo = repo  # None outside a repository

    def observe(self, event: ev.Event) -> None:
        self.tracker.observe(event)

    def before_end(self, parts: SessionParts) -> ev.VerifyNudge | None:
        """The note for the model when the turn is about to end without proof (once per turn), else None."""
        action = self.config.verify.on_unverified
        tracker = self.tracker
        if action == "off" or tracker.nudged or not tracker.turn_changed:
            return None
        record = tracker.record()
        if record is None or record.state == VERIFIED or not could_run_commands(parts, tracker):
            return None
        tracker.nudged = action
        if action == "run":
            ran = self._run_selected(record)
            if ran is not None and ran.state == VERIFIED:
                return None  # the reviewer's tests passed: the turn ends verified, the model need not act
            if ran is not None:
                return ev.VerifyNudge("run", ran.text)
            tracker.nudged = "nudge"
        situation = record.reason if record.state != "failed" else \
            "the last run that covers it failed: " + "; ".join(r.line() for r in record.runs if r.covers)
        if action == "run":
            situation += " (and coder found no test command it could run for it)"
        return ev.VerifyNudge("nudge", NUDGE.render(changed=_files(record.changed), situation=situation))

    def end_turn(self, final_text: str) -> Evidence | None:
        """The record the turn ends with, when it changed code or ran a verifying command (else None)."""
        if not (self.tracker.turn_changed or self.tracker.turn_ran):
            return None
        return self.tracker.record(final_text)

    def current(self) -> Evidence | None:
        """The evidence for the session's changes now (what `/commit` puts in its trailer)."""
        return self.tracker.record()

    def _run_selected(self, record: Evidence) -> _Ran | None:
        if self.repo is None:
            return None
        try:
            ctx = ReviewContext(self.repo, self.repo.diff(paths=record.changed), config=self.config)
        except (VcsError, OSError):
            return None
        try:
            selected = run_selected(ctx)
        except (SandboxUnavailable, OSError):
            return None
        finally:
            ctx.cleanup()
        if selected is None:
            return None
        check = classify(selected.command, [], lambda _path, _cd: False) or \
            Verifying("tests", "tests", selected.command, any_counts)
        run = self.tracker.add_run(selected.command, check, selected.output,
                                   {"exit_code": selected.exit_code, "timed_out": selected.timed_out}, "coder")
        after = self.tracker.record()
        counts = Counts(**run.counts).line() if run.counts is not None else f"exit {run.exit_code}"
        result = {"passed": f"passed ({counts})", "failed": f"failed ({counts})",
                  "empty": "ran no test"}.get(run.outcome, f"ended with a result coder could not read ({counts})")
        if selected.timed_out:
            result = "timed out"
        text = RAN.render(command=quoted(selected.command), result=result,
                          output=selected.output[-OUTPUT_TAIL:].strip() or "(no output)")
        return _Ran(after.state if after is not None else VERIFIED, text)


@dataclass
class _Ran:
    state: str  # the evidence once coder's run is counted
    text: str  # what the model is handed


def could_run_commands(parts: SessionParts, tracker: EvidenceTracker) -> bool:
    """Whether the model could run a test now: not in plan mode, a shell tool is there, and the policy allows a
    command that is not read-only (the project's test command, else `make test`) or asks someone who can answer."""
    if str(parts.policy.mode) == "plan":
        return False
    line = " ".join(tracker.project[0]) if tracker.project else "make test"
    for name, tool in parts.tools.items():
        args = {"command": line}
        try:
            params = tool.parse(args)
        except ToolInputError:
            continue  # not a tool a command line is the input of
        facts = tool.facts(params)
        if facts.shell is None:
            continue
        decision = parts.policy.decide(name, tool.permission_for(params, parts.tool_ctx), args, facts)
        if decision.action == "allow" or (decision.action == "ask" and parts.ask is not no_questions):
            return True
    return False


def _files(paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:6])
    return shown + (f" and {len(paths) - 6} more file(s)" if len(paths) > 6 else "")
