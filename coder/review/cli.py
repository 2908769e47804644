"""`coder review`: run the reviewer on any diff, without an agent session.

    coder review                 the work tree (new files included) against HEAD
    coder review --staged        the index against HEAD
    coder review --base REF      the work tree against REF
    coder review --commit SHA    what commit SHA changed
    --json                       {"verdict", "findings", "stages"} on stdout

Exit 0 for pass or warn, 1 for fail. Without a configured model the LLM stage is skipped with a note and the
other stages decide. Everything heavy is imported inside the handler."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coder.config.sections import Config

from coder.base.errors import ModelConfigError
from coder.base.termsafe import visible


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "review", help="review a diff (work tree, --staged, --base REF, --commit SHA) before committing it",
        description="Run coder's patch reviewer: mechanical checks, guards against gamed tests, the project's "
                    "tests in the sandbox, and an LLM review when a model is configured.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--staged", action="store_true", help="review the index against HEAD")
    which.add_argument("--base", metavar="REF", help="review the work tree against REF (default HEAD)")
    which.add_argument("--commit", metavar="SHA", help="review what commit SHA changed")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--task", default="", help="what the change is meant to do (sharpens the LLM review)")
    parser.add_argument("--no-tests", action="store_true", help="do not run the project's tests")
    parser.add_argument("--no-llm", action="store_true", help="skip the LLM review even when a model is configured")
    parser.add_argument("--model", "-m", default=argparse.SUPPRESS, help="model for the LLM review (PROVIDER:NAME)")
    parser.add_argument("--cwd", default=argparse.SUPPRESS, help="review the repository containing this directory")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.host import register_workspace
    from coder.review.pipeline import review
    from coder.review.types import ReviewResult
    from coder.vcs.repo import EMPTY_TREE, Repo

    register_workspace(Path(getattr(args, "cwd", None) or "."))
    repo = Repo.open(Path(getattr(args, "cwd", None) or "."))
    register_workspace(repo.root)
    if args.commit:
        sha = repo.resolve_commit(args.commit)
        base = repo.resolve(f"{sha}^1") or EMPTY_TREE
        text = repo.diff(commit=sha)
        what = f"commit {sha[:10]}"
    elif args.staged:
        base = "HEAD"
        text = repo.diff(staged=True)
        what = "the index"
    else:
        base = args.base or "HEAD"
        text = repo.diff(base=base)
        what = f"the work tree against {base}"
    config = _config(repo.root, args, base)
    if not text.strip():
        if args.json:
            print(json.dumps(ReviewResult("pass").to_dict()))
        else:
            print(f"nothing to review: {what} has no changes")
        return 0

    provider = None if args.no_llm else _provider(args, config)
    progress: Callable[[Any], None] | None = None
    if not args.json:
        def show(stage: Any) -> None:
            print(visible(f"  {stage.name:<8} {stage.status:<7} {stage.duration:6.2f}s  {stage.note}"), file=sys.stderr)

        progress = show

        print(f"reviewing {what}...", file=sys.stderr)
    result = review(repo, text, args.task, provider, config, on_stage=progress)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(visible(_render_findings(result)))  # the reviewer model's words and the diff's paths: shown, not run
    return 1 if result.verdict == "fail" else 0


def _config(root: Path, args: argparse.Namespace, base: str) -> Config:
    """The configuration, with this command's flags as its top layer."""
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.config.layers import load_config
    from coder.trust.decisions import is_trusted

    flags = {"model": getattr(args, "model", None),
             "sandbox": {"enabled": False if getattr(args, "no_sandbox", False) else None},
             "review": {"base": base, "tests": {"enabled": False if args.no_tests else None}}}
    return load_config(root, flags, trusted=is_trusted(root))


def _provider(args: argparse.Namespace, config: Config):
    """The configured model, or None when there is none (an explicit --model that fails is an error)."""
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.models.registry import create_provider

    explicit = getattr(args, "model", None)
    try:
        return create_provider(explicit or config.model, config.providers, config.pricing)
    except ModelConfigError:
        if explicit:
            raise
        return None


def _render_findings(result) -> str:
    lines = [f"verdict: {result.verdict.upper()}"]
    skipped = [f"{s.name}: {s.note}" for s in result.stages if s.status in ("skipped", "error") and s.note]
    if skipped:
        lines.append("not checked: " + "; ".join(skipped))
    for f in result.findings:
        lines.append(f"{f.severity:<7} {f.location()}  [{f.check}] {f.message}")
    return "\n".join(lines)
