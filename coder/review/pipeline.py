"""The review pipeline: mechanical checks, gaming guards, the project's tests, then the LLM review.

Order is cost order. A diff that does not apply or no longer parses is not worth running tests on; a patch that
already failed the cheap stages is not worth model tokens (unless `review.llm_on_fail = true`). Each stage says
what it did not check and why, so a "pass" is never silent about what was skipped.

Config (`[review]` of the merged config): `base` (default "HEAD"), `stages` (names to run; default all),
`lint`, `max_binary_kb`, `max_text_kb`, `llm_on_fail`, `llm_max_findings`, and `[review.tests]` (see testing.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from coder.config.sections import STAGES, Config, ReviewSettings
from coder.review.context import ReviewContext
from coder.review.gaming import stage_gaming
from coder.review.hygiene import stage_hygiene
from coder.review.llm import stage_llm
from coder.review.mechanical import stage_apply, stage_lint, stage_parse
from coder.review.testing import stage_tests
from coder.review.types import ReviewResult, StageResult
from coder.vcs.repo import Repo

if TYPE_CHECKING:
    from coder.models.types import ModelProvider

ALL_STAGES = STAGES  # declared with `[review] stages`
#: the stages that run without a model (what `coder review` decides on when no model is configured)
MECHANICAL_STAGES = ("apply", "parse", "lint", "hygiene", "gaming")


def _stage_functions() -> dict[str, Callable[[ReviewContext], StageResult]]:
    return {"apply": stage_apply, "parse": stage_parse, "lint": stage_lint, "hygiene": stage_hygiene,
            "gaming": stage_gaming, "tests": stage_tests}


def review(
    repo: Repo,
    diff: str,
    task: str = "",
    provider: ModelProvider | None = None,
    config: Config | None = None,
    on_stage: Callable[[StageResult], None] | None = None,
) -> ReviewResult:
    """Review `diff` (against `review.base`, default HEAD) in `repo`.

    `on_stage` is called after each stage (frontends show progress with it)."""
    start = time.monotonic()
    config = config or Config()
    rcfg = config.review
    ctx = ReviewContext(repo, diff, task, config, rcfg.base or "HEAD")
    wanted = rcfg.stages
    functions = _stage_functions()
    stages: list[StageResult] = []
    try:
        for name in ALL_STAGES:
            if name not in wanted:
                continue
            blocked = _blocked(name, stages, rcfg)
            if blocked:
                result = StageResult(name, "skipped", 0.0, blocked)
            elif name == "llm":
                result = stage_llm(ctx, provider)
            else:
                result = _guarded(functions[name], ctx, name)
            stages.append(result)
            if on_stage is not None:
                on_stage(result)
    finally:
        ctx.cleanup()
    return ReviewResult.from_stages(stages, time.monotonic() - start)


def _blocked(name: str, done: list[StageResult], rcfg: ReviewSettings) -> str:
    failed = {s.name for s in done if s.status == "fail"}
    if name == "tests" and failed & {"apply", "parse"}:
        return "not run: the patch does not apply or does not parse"
    if name == "llm" and failed and not rcfg.llm_on_fail:
        return f"not run: earlier stages failed ({', '.join(sorted(failed))})"
    return ""


def _guarded(fn: Callable[[ReviewContext], StageResult], ctx: ReviewContext, name: str) -> StageResult:
    """A stage that crashes is reported as an error stage, never as a crash of the review."""
    start = time.monotonic()
    try:
        return fn(ctx)
    except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others' findings
        return StageResult(name, "error", time.monotonic() - start, f"{type(exc).__name__}: {exc}")

