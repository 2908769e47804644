"""`coder sessions`: list, show and export stored sessions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.base import paths
from coder.base.errors import UsageError
from coder.base.events import call_failure
from coder.base.termsafe import inert_json, visible

if TYPE_CHECKING:
    from coder.vcs.repo import Repo


def register(sub) -> None:
    p = sub.add_parser("sessions", help="list, show or export stored sessions")
    p.add_argument("action", nargs="?", choices=("list", "show", "export"), default="list")
    p.add_argument("id", nargs="?", help="session id (a unique prefix is enough)")
    p.add_argument("--all", action="store_true", help="list sessions of every workspace, not just this one")
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--format", choices=("jsonl", "adp", "md"), default="jsonl",
                   help="export format: our event JSONL (default), the Agent Data Protocol shape, or a Markdown "
                        "transcript")
    p.set_defaults(func=sessions_command)


def sessions_command(args) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.builder import git_repo
    from coder.store.db import SessionStore

    store = SessionStore(paths.sessions_db())

    def say(line: str) -> None:
        """Titles, model text, commands and outputs are the model's and the repository's: shown, not executed."""
        print(visible(line))

    if args.action == "list":
        cwd = Path.cwd()
        repo = git_repo(cwd)
        workspace = None if args.all else str(repo.root if repo is not None else cwd)
        rows = store.sessions(args.limit, workspace, top_level=True)
        if not rows:
            say("no sessions" + ("" if args.all else f" in {workspace} (--all lists every workspace)"))
        checkpoints = _checkpoint_counts(repo)
        for row in rows:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated))
            title = row.title or _first_user_text(store, row.id)
            kept = f"{checkpoints.get(row.id, 0):>3} cp" if checkpoints is not None else ""
            say(f"{row.id}  {when}  {row.status:<11} {kept} {row.model:<32} {title[:60]}")
            for line in _agent_lines(store, row.id):
                say(line)
        if checkpoints is not None:
            print("(cp: checkpoints kept in this repository; /undo and /rewind use them)")
        return 0
    if not args.id:
        raise UsageError(f"`coder sessions {args.action}` needs a session id.")
    row = store.session(args.id)
    events = [e.to_dict() for e in store.events(row.id)]
    if args.action == "export":
        if args.format == "md":
            # start-up time: `coder --help` imports this module, and only this command needs it
            from coder.commands.transcript import transcript_markdown

            print(visible(transcript_markdown(row, events)), end="")
        elif args.format == "adp":
            # start-up time: `coder --help` imports this module, and only this command needs it
            from coder.store.export import to_adp
            from coder.tools.registry import describe

            adp = to_adp(row, events, lambda name, args: describe(name, args).shell)
            print(inert_json(json.dumps(adp, ensure_ascii=False)))
        else:
            for event in events:
                print(inert_json(json.dumps(event, ensure_ascii=False)))
        return 0
    say(f"session {row.id}  model {row.model}  status {row.status}\nworkspace {row.workspace}")
    for event in events:
        say(_describe(event))
    return 0


def _checkpoint_counts(repo: Repo | None) -> dict[str, int] | None:
    """Session id -> checkpoints kept in `repo` (None outside git)."""
    if repo is None:
        return None
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.vcs.checkpoints import list_sessions

    return {s.session_id: s.count for s in list_sessions(repo)}


def _agent_lines(store, session_id: str) -> list[str]:
    """The subagents of a session, one line each under it (issue 36): which agent, in the background or not, how
    it is doing (running while its process lives), what it cost, what became of its patch."""
    children = store.children(session_id)
    if not children:
        return []
    started: dict[str, dict[str, Any]] = {}
    merged: dict[str, str] = {}
    for event in store.events(session_id):
        if event.type == "agent_started":
            started[event.data.get("session_id", "")] = event.data
        elif event.type == "agent_merged":
            merged[event.data["ident"]] = event.data["outcome"]
    lines = []
    for child in children:
        info = started.get(child.id, {})
        ident = info.get("ident", "?")
        cost = next((e.data.get("total_cost_usd", 0.0) for e in reversed(list(store.events(child.id)))
                     if e.type == "usage"), 0.0)
        where = "background" if info.get("background") else "foreground"
        patch = f"  patch {merged[ident]}" if ident in merged else ""
        lines.append(f"  ↳ {ident:<4} {info.get('agent', '?'):<10} {where:<10} {child.status:<11} ${cost:.4f}  "
                     f"{child.id}  {child.title[:50]}{patch}")
    return lines


def _first_user_text(store, session_id: str) -> str:
    for event in store.events(session_id):
        if event.type == "user_message":
            return event.data["text"].splitlines()[0] if event.data["text"] else ""
    return ""


def _describe(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "user_message":
        return f"> {event['text']}"
    if kind == "assistant_message":
        texts = [b["text"] for b in event["message"]["content"] if b["type"] == "text"]
        return "< " + "\n  ".join(" ".join(texts).splitlines()[:20])
    if kind == "tool_call_finished":
        first = (event["output"].splitlines() or [""])[0][:100]
        # an interrupted or failed command is a call that worked and a command that did not: ✗, as in the app
        why = call_failure(bool(event["is_error"]), event.get("data"), str(event["output"]))
        mark = "✓" if why is None else f"✗ {why}" if why != "failed" else "✗"
        return f"  {mark} {event['tool']} {json.dumps(event['input'], ensure_ascii=False)[:100]} -> {first}"
    if kind == "usage":
        cost = f"$ {event['total_cost_usd']:.4f} total" if event.get("cost_known", True) else "cost unknown"
        return f"  {cost}, context {event['context_tokens']} tokens"
    keys = {k: v for k, v in event.items() if k not in ("type", "session_id", "seq", "time")}
    return f"  [{kind}] {json.dumps(keys, ensure_ascii=False, default=str)[:160]}"
