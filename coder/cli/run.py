"""`coder run`: one task, headless. Prints text, one JSON object, or a JSON line per event; never asks."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CoderError, UsageError
from coder.base.termsafe import inert_json, visible
from coder.engine.options import add_session_flags, options_from_args

EXIT_BY_REASON = {"done": EXIT_OK, "interrupted": EXIT_INTERRUPTED}


def register(sub) -> None:
    p = sub.add_parser("run", help="run one task headless (CI, scripts) and exit",
                       description="Run one task without a UI. Exit codes: 0 done, 1 the agent failed, hit a "
                                   "limit or was stopped as stuck (exit reason `stuck`), 2 usage or "
                                   "configuration error, 130 interrupted.")
    p.add_argument("prompt", nargs="?", help="the task (or use --prompt-file, or pipe it on stdin)")
    p.add_argument("--prompt-file", type=Path, help="read the task from this file")
    p.add_argument("--plan-file", type=Path, metavar="PLAN.md",
                   help="start from this approved plan (e.g. the final_text of a --permission-mode plan run); the "
                        "prompt, if any, adds to it")
    add_session_flags(p, subcommand=True)
    p.add_argument("--max-turns", type=int, help="stop after this many model requests")
    p.add_argument("--max-cost", type=float, help="stop when the session has cost this many USD")
    p.add_argument("--max-wall-time", type=float, help="stop after this many seconds")
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument("--input-format", choices=("text", "stream-json"), default="text",
                   help="stream-json: user messages as JSON lines on stdin, with text and image blocks")
    p.add_argument("--image", type=Path, action="append", default=[], metavar="FILE",
                   help="attach an image (PNG, JPEG, GIF, WebP; others are converted); repeatable")
    p.add_argument("--json-schema", type=Path, metavar="FILE",
                   help="the final answer must be JSON valid against this JSON Schema (one retry with the errors; "
                        "exit 1 if it still fails); it is printed, and is `structured_output` in the JSON result")
    p.add_argument("--no-checkpoints", action="store_true",
                   help="take no undo snapshots (a throwaway clone: batch runs; /undo and /rewind then do nothing)")
    p.add_argument("--commit", action="store_true",
                   help="when the task is done, review the changes (fix rounds on a failing review) and commit them")
    p.add_argument("--branch", metavar="NAME", help="with --commit: commit on this new branch")
    p.add_argument("--override-review", action="store_true",
                   help="with --commit: commit even when the review fails (the findings are still reported)")
    p.set_defaults(func=run_command)


def read_prompt(args) -> str | None:
    if args.prompt_file is not None:
        if args.prompt:
            raise UsageError("give the task either as an argument or with --prompt-file, not both.")
        try:
            text = args.prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--prompt-file {args.prompt_file}: cannot be read ({exc}).") from exc
        if not text.strip():
            raise UsageError(f"--prompt-file {args.prompt_file} is empty.")
        return text
    if args.prompt is not None:
        if not args.prompt.strip():
            raise UsageError("the task is empty.")
        return args.prompt
    if not sys.stdin.isatty():
        text = sys.stdin.read()
        if text.strip():
            return text
    return None


def read_plan_file(args) -> str | None:
    """`--plan-file`: the approved plan a run starts from (not in plan mode: that would only plan again)."""
    path = getattr(args, "plan_file", None)
    if path is None:
        return None
    if getattr(args, "permission_mode", None) == "plan":
        raise UsageError("--plan-file starts the work from an approved plan; --permission-mode plan would only "
                         "plan again. Use ask, auto-edit or auto.")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--plan-file {path}: cannot be read ({exc}).") from exc
    if not text.strip():
        raise UsageError(f"--plan-file {path} is empty.")
    return text.strip()


@dataclass
class Tally:
    """What the JSON result reports, gathered from the events as they pass."""

    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), 0))
    errors: list[str] = field(default_factory=list)
    #: what the session said on the side (an untrusted repository's hooks, agents and commands ignored, a config
    #: key dropped): in the result too, so a script that reads only the JSON still learns it
    notices: list[str] = field(default_factory=list)
    plan: str | None = None  # the last plan the model proposed (exit_plan): a plan-mode run's result
    evidence: dict[str, Any] | None = None  # the last turn's evidence record that changed code (issue 49)

    def add(self, data: dict[str, Any]) -> None:
        if data["type"] == "usage":
            for key in self.usage:
                self.usage[key] += int(data[key])
        elif data["type"] == "error" and data.get("fatal"):
            self.errors.append(data["message"])
        elif data["type"] == "error" and "agent_id" not in data:
            self.notices.append(data["message"])
        elif data["type"] == "plan_proposed":
            self.plan = str(data.get("plan") or "")
        elif data["type"] == "evidence" and "agent_id" not in data:
            self.evidence = data["record"]


def run_command(args) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.builder import open_session

    if (args.branch or args.override_review) and not args.commit:
        raise UsageError("--branch and --override-review go with --commit.")
    if args.commit and args.no_checkpoints:  # the checkpoints tell which files the session changed
        raise UsageError("--commit needs checkpoints; drop --no-checkpoints.")
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.cli.run_input import read_images, read_stream_json

    images = read_images(args.image)
    turns = None
    if args.input_format == "stream-json":
        if args.prompt is not None or args.prompt_file is not None:
            raise UsageError("--input-format stream-json reads the task from stdin; give no prompt argument.")
        turns = read_stream_json(sys.stdin)
        args.prompt = turns[0][0] or "(see the image)"
        images, turns = images + turns[0][1], turns[1:]
    prompt = read_prompt(args)
    # the person's own words, before a plan or a schema's instructions are added: what may attach files (an image
    # path counts as dropped only in the task typed on the command line; a file, stdin or stream-json is a document)
    words, typed = prompt or "", args.prompt is not None and args.input_format != "stream-json"
    if prompt is None and images and not (args.resume or args.continue_last):
        prompt = "(see the attached image)" if len(images) == 1 else "(see the attached images)"
    plan = read_plan_file(args)
    if plan is not None:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.engine.work import plan_message

        prompt = plan_message(plan, prompt)
    if prompt is None and not (args.resume or args.continue_last):
        raise UsageError('no task given: `coder run "what to do"`, --prompt-file FILE, or a task on stdin.')
    schema = None
    if getattr(args, "json_schema", None) is not None:
        from coder.cli import structured  # start-up time: `coder --help` imports this module; jsonschema loads later

        schema = structured.load_schema(args.json_schema)  # a bad schema stops here, before a session is stored
        prompt = (prompt or "Go on with the task.") + structured.instructions(schema)
    fmt = args.output_format
    tally = Tally()
    verbose = sys.stderr.isatty() and fmt == "text"

    def on_event(event) -> None:
        data = event.to_dict()
        tally.add(data)
        if fmt == "stream-json":
            emit_json(data)
            return
        kind = data["type"]
        if "agent_id" in data:  # a subagent's own event: its fatal error is its end, said by agent_ended below
            if kind == "error" and not data.get("fatal"):
                say(f"coder: agent {data['agent_id']}: {data['message']}", sys.stderr)
            return
        if verbose and kind in ("agent_started", "agent_ended"):
            what = "started" + (" in the background" if data.get("background") else "") if kind == "agent_started" \
                else f"ended: {data['state']}, ${data['cost_usd']:.4f}"
            say(f"  · agent {data['ident']} {what}", sys.stderr)
        if verbose and kind == "tool_call_requested":
            say(f"  · {data['tool']} {json.dumps(data['input'], ensure_ascii=False)[:120]}", sys.stderr)
        elif kind == "error" and not data.get("fatal"):  # fatal ones end the run and are reported once, below
            say(f"coder: {data['message']}", sys.stderr)
        elif kind == "tool_call_denied":
            say(f"coder: denied {data['tool']} ({data['by']}): {data['reason']}", sys.stderr)

    options = options_from_args(args)
    started = time.monotonic()
    try:
        opened = open_session(options, on_event)
    except CoderError as exc:
        if fmt != "text":  # scripts reading JSON get the failure as JSON too
            emit_json({"type": "result", "exit_reason": "usage_error", "exit_code": exc.exit_code, "error": str(exc)})
        raise
    session = opened.session
    if args.commit and not opened.is_git:  # say so before the agent works, not after
        opened.store.set_status(session.id, "failed to start")
        raise UsageError(f"--commit: {opened.workspace} is not a git repository.")
    handler = lambda *_: _second_interrupt(session, opened.agents)  # noqa: E731
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, lambda *_: _terminate(session, opened.agents))}
    commit = None
    try:
        if plan is not None:
            # start-up time: `coder --help` imports this module, and only this command needs it
            from coder.engine.work import adopt_plan

            adopt_plan(session, plan)
        outcome = session.send(prompt, opened.attach(words, images, dropped=typed))
        outcome = _settle(session, opened.agents, outcome)  # background agents: their ends, then the model's turn
        for text, pictures in turns or []:  # the further user messages of a stream-json input, in order
            if outcome.reason != "done":
                break
            outcome = session.send(text or "(see the image)", opened.attach(text, pictures, dropped=False))
            outcome = _settle(session, opened.agents, outcome)
        checked = None
        if schema is not None and outcome.reason == "done":
            outcome, checked = _structured(session, outcome, schema)
        if args.commit and outcome.reason == "done":
            commit = _commit(opened, args)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    session.close(outcome.reason)
    opened.store.set_status(session.id, outcome.reason)
    code = outcome.exit_code if outcome.reason == "error" else EXIT_BY_REASON.get(outcome.reason, EXIT_FAILED)
    if commit is not None and not commit.committed and commit.reason != "nothing to commit":
        code = EXIT_FAILED
    schema_error = None
    if schema is not None and (checked is None or not checked.ok):
        code = EXIT_FAILED if code == EXIT_OK else code
        schema_error = ("the final answer is not valid against --json-schema: " + "; ".join(checked.errors)
                        if checked is not None else "no final answer to check against --json-schema")
    final_text = outcome.final_text if tally.plan is None else tally.plan  # a plan-mode run ends with its plan
    if fmt in ("json", "stream-json"):
        result = {
            "type": "result", "session_id": session.id, "final_text": final_text, "plan": tally.plan,
            "turns": session.stats.turns, "usage": tally.usage,
            "cost_usd": round(session.stats.cost_usd, 6) if session.stats.cost_known else None,
            "duration_s": round(time.monotonic() - started, 3), "files_changed": sorted(session.stats.files_changed),
            "exit_reason": outcome.reason, "exit_code": code, "error": outcome.error,
            "model": session.parts.provider.spec, "commit": commit.to_dict() if commit else None,
            "agents": _agents_summary(opened.agents), "notices": tally.notices, "evidence": tally.evidence,
        }
        if schema is not None:
            result["structured_output"] = checked.value if checked is not None and checked.ok else None
            if schema_error and outcome.reason == "done":
                result["exit_reason"], result["error"] = "invalid_output", schema_error
        emit_json(result)
    elif fmt == "text":
        if schema is not None and checked is not None and checked.ok:
            say(json.dumps(checked.value, ensure_ascii=False, indent=2), sys.stdout)
        elif final_text:
            say(final_text, sys.stdout)
        if schema_error and outcome.reason == "done":
            say(f"coder: {schema_error}", sys.stderr)
        if tally.evidence is not None:  # issue 49: what proves the change works, or that nothing does
            say(f"coder: {_evidence_line(tally.evidence)}", sys.stderr)
        if commit is not None:
            detail = f" {commit.sha[:10]} {commit.message.splitlines()[0]}" if commit.committed and commit.sha \
                else f" ({commit.message})"
            say(f"coder: commit: {commit.reason}{detail}", sys.stderr)
        if outcome.reason != "done":
            say(f"coder: stopped: {outcome.reason}" + (f" ({outcome.error})" if outcome.error else "")
                + f". Session {session.id} is saved; `coder run --resume {session.id}` goes on.", sys.stderr)
    opened.store.close()
    return code


_OUT = threading.Lock()  # background agents' events come from their own threads: one whole line at a time


def emit_json(data: dict[str, Any]) -> None:
    """One JSON line; inert on a terminal (no raw control character), exact for a JSON reader."""
    line = inert_json(json.dumps(data, ensure_ascii=False, default=str)) + "\n"
    with _OUT:
        sys.stdout.write(line)
        sys.stdout.flush()


def say(text: str, stream: Any) -> None:
    """Every line the text format prints: model text, tool input, error messages and commit messages carry
    whatever the model or the repository put in them, so control sequences are shown, not executed."""
    print(visible(text), file=stream)


def _structured(session, outcome, schema):
    """Check the final answer against the schema; on failure the model gets the errors and one more turn."""
    from coder.cli import structured  # start-up time: `coder --help` imports this module

    checked = structured.check(outcome.final_text, schema)
    if checked.ok:
        return outcome, checked
    retry = session.send(structured.retry_message(checked))
    if retry.reason != "done":
        return retry, None
    return retry, structured.check(retry.final_text, schema)


def _commit(opened, args):
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.finish import review_and_commit

    return review_and_commit(opened.session, branch=args.branch, override=args.override_review)


def _terminate(session, agents) -> None:
    """SIGTERM: stop the turn as Ctrl+C does, and end every host process now (a linter, a hook or a git that hangs
    would otherwise keep coder past the signal until its own timeout)."""
    from coder.host import stop_all  # lazy: `coder --help` imports this module

    stop_all()
    _second_interrupt(session, agents)


def _settle(session, agents, outcome):
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.agents import settle

    return settle(session, agents, outcome)


def _evidence_line(record: dict[str, Any]) -> str:
    from coder.evidence.record import Evidence  # start-up time: `coder --help` imports this module

    return Evidence.from_dict(record).line()


def _agents_summary(agents) -> list[dict[str, Any]]:
    """Each subagent of the run: what it was, how it ended, what it cost, what became of its patch."""
    if agents is None:
        return []
    return [{"id": r.ident, "agent": r.agent, "description": r.description, "background": r.background,
             "session_id": r.session_id, "state": r.state, "turns": r.turns, "cost_usd": round(r.cost_usd, 6),
             "files": list(r.files), "patch": r.outcome or ("not merged" if r.pending_patch else None)}
            for r in agents.runs.values()]


def _second_interrupt(session, agents) -> None:
    """First Ctrl+C stops the turn cleanly, and every subagent; a second one while stopping raises."""
    if session.cancel.is_set():
        raise KeyboardInterrupt
    if agents is not None:
        agents.stop_all()
    session.interrupt()
