"""The LLM review: a checklist drawn from the task, AGENTS.md and the code around the change; a review of the
diff against it; then each finding checked again in a separate call, kept only if that call confirms it.

Why three calls: a single review prompt produces plausible-sounding false alarms; a checklist anchors the review
in what this repository and this task need (rubrics drawn from the repository), and an independent second look
at each finding with the code in front of it removes most of the noise before the agent has to act on it."""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from coder.base.errors import ModelError
from coder.base.resources import prompt, template
from coder.models.types import Message, ModelRequest
from coder.review.context import ReviewContext
from coder.review.types import Finding, Severity, StageResult, status_from

if TYPE_CHECKING:
    from coder.models.types import ModelProvider

MAX_DIFF_CHARS = 30_000
MAX_CONTEXT_CHARS = 12_000


def _fill(name: str, **values: str) -> str:
    """prompts/`name` filled with `values`, which must be exactly the variables it uses (coder/base/resources.py)."""
    return template(name, values).render(**values)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} characters cut]\n"


def _ask(provider: ModelProvider, system: str, user: str, max_tokens: int = 2000) -> tuple[str, int]:
    request = ModelRequest(system=system, messages=[Message.user_text(user)], max_tokens=max_tokens,
                           cache_system=True)
    response = provider.complete(request)
    usage = response.usage
    return response.message.text(), usage.total_input + usage.output_tokens


def parse_json(text: str) -> Any:
    """The JSON object in a model's answer (fenced or bare); None when there is none."""
    fenced = re.search(r"```(?:json)?\s*(.+?)```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    return None


def project_guidance(ctx: ReviewContext) -> str:
    """The repository's guidance for the review: its instruction files as they were *before* the change when the
    change touches them (a change that writes its own AGENTS.md or Copilot instructions must not tell the reviewer
    how to judge it), else as they are after it (a file the change leaves alone is the same in both)."""
    touched = {path for f in ctx.files for path in (f.old_path, f.new_path) if path}
    for name in ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", "CONTRIBUTING.md"):
        text = ctx.read_old(name) if name in touched else ctx.read_new(name)
        if text:
            return f"{name}:\n{_clip(text, 4000)}"
    return "(no AGENTS.md or CLAUDE.md in the repository)"


def surrounding_code(ctx: ReviewContext, radius: int = 20) -> str:
    """The code around each hunk, after the change, with line numbers."""
    parts, total = [], 0
    for f in ctx.files:
        if f.new_path is None or f.binary:
            continue
        text = ctx.read_new(f.new_path)
        if text is None:
            continue
        lines = text.splitlines()
        for hunk in f.hunks:
            lo = max(1, hunk.new_start - radius)
            hi = min(len(lines), hunk.new_start + len(hunk.added) + radius)
            snippet = "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(lo, hi + 1))
            part = f"--- {f.new_path} lines {lo}-{hi}\n{snippet}"
            total += len(part)
            if total > MAX_CONTEXT_CHARS:
                return "\n\n".join(parts) + "\n[more context cut]"
            parts.append(part)
    return "\n\n".join(parts) or "(no text files changed)"


def _context_at(ctx: ReviewContext, path: str, line: int | None, radius: int = 15) -> str:
    text = ctx.read_new(path) if path else None
    if not text:
        return "(file not available after the change)"
    lines = text.splitlines()
    center = line or 1
    lo, hi = max(1, center - radius), min(len(lines), center + radius)
    return "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(lo, hi + 1))


def parse_checklist(text: str) -> list[str]:
    items = []
    for line in text.splitlines():
        m = re.match(r"^\s*(?:[-*]|\d+[.)])\s+(.+)$", line)
        if m:
            items.append(m.group(1).strip())
    return items[:10]


def stage_llm(ctx: ReviewContext, provider: ModelProvider | None) -> StageResult:
    start = time.monotonic()
    if provider is None:
        return StageResult("llm", "skipped", 0.0, "no model configured: LLM review skipped")
    if not ctx.files:
        return StageResult("llm", "skipped", 0.0, "empty diff")

    task = ctx.task.strip() or "(no task given: review the change on its own merits)"
    diff = _clip(ctx.diff, MAX_DIFF_CHARS)
    tokens = 0
    try:
        answer, used = _ask(provider, prompt("review_checklist.md"), _fill(
            "review_checklist_user.md", task=task, guidance=project_guidance(ctx),
            context=surrounding_code(ctx), diff=diff), max_tokens=800)
        tokens += used
        checklist = parse_checklist(answer) or ["The change does what the task asks, and nothing else breaks."]
        answer, used = _ask(provider, prompt("review_review.md"), _fill(
            "review_review_user.md", task=task, checklist="\n".join(f"- {c}" for c in checklist),
            context=surrounding_code(ctx), diff=diff), max_tokens=2500)
        tokens += used
        data = parse_json(answer)
        raw = data.get("findings", []) if isinstance(data, dict) else []
        candidates = [r for r in raw if isinstance(r, dict) and r.get("message")][:ctx.settings.llm_max_findings]
        kept, dropped = [], 0
        for item in candidates:
            finding = _to_finding(item)
            answer, used = _ask(provider, prompt("review_confirm.md"), _fill(
                "review_confirm_user.md", task=task, finding=json.dumps(item, ensure_ascii=False),
                context=_context_at(ctx, finding.file, finding.line), diff=diff), max_tokens=500)
            tokens += used
            verdict = parse_json(answer)
            if isinstance(verdict, dict) and verdict.get("confirmed") is True:
                if verdict.get("severity") in ("error", "warning", "info"):
                    finding.severity = verdict["severity"]
                kept.append(finding)
            else:
                dropped += 1
    except ModelError as exc:
        return StageResult("llm", "error", time.monotonic() - start, f"model failed: {exc}")
    note = (f"{len(checklist)} checklist item(s); {len(candidates)} finding(s) raised, {len(kept)} confirmed, "
            f"{dropped} dropped; {tokens} tokens")
    return StageResult("llm", status_from(kept), time.monotonic() - start, note, kept,
                       "Checklist:\n" + "\n".join(f"- {c}" for c in checklist))


def _to_finding(item: dict[str, Any]) -> Finding:
    raw = item.get("severity")
    severity: Severity = raw if raw in ("error", "warning", "info") else "warning"
    try:
        line = int(item["line"]) if item.get("line") not in (None, "") else None
    except (TypeError, ValueError):
        line = None
    return Finding(str(item.get("file") or ""), line, severity, str(item["message"])[:500], "llm", "llm")
