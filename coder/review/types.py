"""What a review produces: findings, the stages that ran, and the verdict they add up to.

Severity decides the verdict: one "error" fails the patch, a "warning" makes it "warn", "info" is only shown.
Stages record how they went (a stage that could not run says why in `note`, so a pass is never silent about
what was not checked)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Verdict = Literal["pass", "warn", "fail"]
StageStatus = Literal["pass", "warn", "fail", "skipped", "error"]


@dataclass
class Finding:
    file: str  # repository-relative path, "" for the patch as a whole
    line: int | None
    severity: Severity
    message: str
    check: str  # e.g. "conflict-marker", "test-deleted", "tests-failed", "llm"
    stage: str = ""

    def location(self) -> str:
        if not self.file:
            return "(patch)"
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StageResult:
    name: str
    status: StageStatus
    duration: float = 0.0
    note: str = ""
    findings: list[Finding] = field(default_factory=list)
    #: extra text for a fix round (test output tail), not shown in --json findings
    details: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "duration": round(self.duration, 3), "note": self.note,
                "findings": len(self.findings)}


def gaming_finding(path: str, line: int | None, severity: Severity, message: str, check: str) -> Finding:
    """A finding of the gaming stage, its arguments in `Finding`'s own order (where, how bad, what, which check):
    the stage's checks live in three modules, and one helper keeps them from drifting apart."""
    return Finding(path, line, severity, message, check, "gaming")


def status_from(findings: list[Finding]) -> StageStatus:
    if any(f.severity == "error" for f in findings):
        return "fail"
    if any(f.severity == "warning" for f in findings):
        return "warn"
    return "pass"


@dataclass
class ReviewResult:
    verdict: Verdict
    findings: list[Finding] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)
    duration: float = 0.0

    @classmethod
    def from_stages(cls, stages: list[StageResult], duration: float = 0.0) -> ReviewResult:
        findings = [f for s in stages for f in s.findings]
        if any(f.severity == "error" for f in findings) or any(s.status == "fail" for s in stages):
            verdict: Verdict = "fail"
        elif any(f.severity == "warning" for f in findings) or any(s.status in ("warn", "error") for s in stages):
            verdict = "warn"
        else:
            verdict = "pass"
        return cls(verdict, findings, stages, duration)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "stages": [s.to_dict() for s in self.stages],
        }

    def feedback(self, limit: int = 8000) -> str:
        """The text the agent reads in a fix round: what failed, where, and the test output that shows it."""
        lines = [f"Review verdict: {self.verdict.upper()}."]
        if self.verdict == "pass":
            lines.append("No problems found.")
            return "\n".join(lines)
        errors = self.errors
        warnings = [f for f in self.findings if f.severity == "warning"]
        if errors:
            lines.append("Fix these before the change can be committed:")
            lines += [f"- {f.location()} [{f.check}] {f.message}" for f in errors]
        if warnings:
            lines.append("Worth a look (warnings):")
            lines += [f"- {f.location()} [{f.check}] {f.message}" for f in warnings]
        gaming = [f for f in errors if f.stage == "gaming"]
        if gaming:
            lines.append(
                "Do not change, skip or weaken tests to make them pass: fix the code under test instead "
                "(unless the task explicitly asks to change the tests)."
            )
        for stage in self.stages:
            if stage.details and stage.status == "fail":
                lines.append(f"\nOutput of the {stage.name} stage (tail):\n{stage.details.strip()[-3000:]}")
        not_run = [f"{s.name} ({s.note})" for s in self.stages if s.status in ("skipped", "error") and s.note]
        if not_run:
            lines.append("Not checked: " + "; ".join(not_run))
        text = "\n".join(lines)
        return text if len(text) <= limit else text[: limit - 20] + "\n[feedback truncated]"

    def render(self) -> str:
        """A human summary for the terminal."""
        out = [f"verdict: {self.verdict}"]
        for s in self.stages:
            note = f"  ({s.note})" if s.note else ""
            out.append(f"  {s.name:<8} {s.status:<7} {s.duration:6.2f}s{note}")
        if self.findings:
            out.append("findings:")
            for f in self.findings:
                out.append(f"  {f.severity:<7} {f.location()} [{f.check}] {f.message}")
        return "\n".join(out)
