"""The sessions benchmarks/request_audit.py records (issue 46): each a function (recorder, quick) that drives coder
through the fake server, which appends every request it receives to the recorder's file. Written for the audit, not
taken from the tests: other scripts, other models, other cuts (held-out shapes for the rules the tests pin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_session_support import Driven, coder_env, coder_run, killed_while_running, own_sleep

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.models.registry import create_provider
from coder_testkit.fake_server import FakeServer

RESULTS = [{"url": "https://blog.example.test/parsers", "title": "Parsers compared"},
           {"url": "https://docs.example.test/api", "title": "API reference"}]
SUMMARY = {"when": "Your context is about to be compacted", "repeat": True, "text": "## Intent\nthe audit"}


class Recorder:
    """A scenario's fake servers (recording to one file), workspace and isolated home."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True)
        self.file = folder / "requests.jsonl"
        self.repo = _repo(folder / "repo")
        self.errors: list[str] = []  # what the sessions reported (a refused request ends its turn with one)

    def server(self, turns: list[dict[str, Any]]) -> FakeServer:
        return FakeServer({"turns": turns}, record=self.file)

    def bodies(self) -> list[tuple[str, dict[str, Any]]]:
        """(route, body) of every generation request received, in order."""
        if not self.file.exists():
            return []
        rows = [json.loads(line) for line in self.file.read_text().splitlines()]
        return [("chat" if r["path"].endswith("chat/completions") else "messages", r["body"]) for r in rows
                if r["n"] is not None]


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("# audit\n")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=audit", "-c", "user.email=audit@example.test", "commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True, timeout=60)
    return path


def _session(rec: Recorder, model: str, turns: list[dict[str, Any]], messages: list[str],
             between: Callable[[Driven, int], None] | None = None, config: str = "") -> None:
    """An in-process session sending `messages`, `between(driven, i)` before message i."""
    with pytest.MonkeyPatch.context() as mp, rec.server(turns) as server:
        if config:
            xdg = rec.folder / "xdg"
            (xdg / "coder").mkdir(parents=True, exist_ok=True)
            (xdg / "coder" / "config.toml").write_text(config)
            mp.setenv("XDG_CONFIG_HOME", str(xdg))
        driven = Driven(rec.repo, model, mp, server)
        try:
            for i, text in enumerate(messages):
                if between is not None:
                    between(driven, i)
                driven.session.send(text, driven.opened.attach(text))  # the person's words: @path attaches
        finally:
            driven.close()
        rec.errors += [f"{model}: {e.message[:160]}" for e in driven.events if isinstance(e, ev.ErrorEvent)
                       and not e.message.startswith(("cost unknown", "note:"))]  # notes, not refusals


def _search(query: str, pending: bool = False) -> dict[str, Any]:
    return {"query": query, "results": RESULTS, **({"pending": True} if pending else {})}


def paused_turns(rec: Recorder, quick: bool) -> None:
    """Two pauses in one turn (a search each), thinking on (Fable 5.1 binds it), then two more messages."""
    turns = [{"web_search": [_search("parser speed")], "stop_reason": "pause_turn"},
             {"web_search": [_search("parser memory", pending=True)], "stop_reason": "pause_turn"},
             {"thinking": "compare", "text": "The second parser is faster."}, {"text": "Yes."}, {"text": "No."}]
    _session(rec, "anthropic:claude-fable-5-1", turns, ["compare parsers", "sure?", "and memory?"])


def mixed_cut_by_max_turns(rec: Recorder, quick: bool) -> None:
    turns = [{"web_search": [_search("lint rules", pending=True)],
              "tool_calls": [{"name": "bash", "input": {"command": "ls"}}, {"name": "bash", "input": {
                  "command": "cat README.md"}}]}, {"text": "Here."}, {"text": "Again."}]
    with rec.server(turns) as server:
        env = coder_env(server, HOME=str(rec.folder), XDG_STATE_HOME=str(rec.folder / "state"))
        cut = json.loads(coder_run(rec.repo, env, "--model", "anthropic:claude-opus-4-8", "--max-turns", "1",
                                   "lint it").stdout.splitlines()[-1])
        coder_run(rec.repo, env, "--model", "anthropic:claude-opus-4-8", "--resume", cut["session_id"], "go on")
        coder_run(rec.repo, env, "--model", "anthropic:claude-opus-4-8", "--resume", cut["session_id"], "thanks")


def mixed_killed(rec: Recorder, quick: bool) -> None:
    sleep = own_sleep()
    turns = [{"web_search": [_search("cve list", pending=True)],
              "tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 120}}]},
             {"text": "Continued."}, {"text": "Next."}]
    with rec.server(turns) as server:
        env = coder_env(server, HOME=str(rec.folder), XDG_STATE_HOME=str(rec.folder / "state"))
        sid = killed_while_running(rec.repo, env, sleep, "--model", "anthropic:claude-sonnet-5", "check cves")
        coder_run(rec.repo, env, "--model", "anthropic:claude-sonnet-5", "--resume", sid)
        coder_run(rec.repo, env, "--model", "anthropic:claude-sonnet-5", "--resume", sid, "next")


def mixed_interrupted_then_compacted(rec: Recorder, quick: bool) -> None:
    turns = [SUMMARY, {"text": "One."}, {"text": "Two."},
             {"web_search": [_search("x", pending=True)], "tool_calls": [{"name": "bash", "input": {
                 "command": "ls"}}]}, {"text": "After."}, {"text": "End."}]

    def cut(driven: Driven, i: int) -> None:
        if i == 2:  # Ctrl+C as the client tool is approved
            driven.ctrl_c_at_approval()
        if i == 3:  # /compact at once, as the user types it
            driven.ctrl_c_at_approval(False)
            run_slash(driven.opened, "/compact")
    _session(rec, "anthropic:claude-haiku-5-5", turns, ["one", "two", "search and list", "go on"], cut)


def loads_through_compaction(rec: Recorder, quick: bool) -> None:
    models = ["anthropic:claude-mythos-5-2"] if quick else [
        "anthropic:claude-mythos-5-2", "anthropic:claude-mythos-preview", "anthropic:claude-opus-4-6",
        "anthropic:claude-3-7-sonnet", "openai:gpt-5.6-terra"]
    for model in models:
        turns = [SUMMARY, {"tool_calls": [{"name": "tool_search", "input": {"query": "select:web_fetch,task"}}]},
                 {"text": "Loaded."}, {"text": "Two."}, {"text": "Three."},
                 {"tool_calls": [{"name": "web_fetch", "input": {"url": "https://127.0.0.1:9/none"}}]},
                 {"text": "Fetched."}]

        def compact(driven: Driven, i: int) -> None:
            if i == 3:
                driven.session.parts.context.compact_now(driven.session.history, driven.session.parts.pinned)
        _session(rec, model, turns, ["load", "two", "three", "fetch"], compact)


def switch_to_a_model_that_always_thinks(rec: Recorder, quick: bool) -> None:
    turns = [{"tool_calls": [{"name": "tool_search", "input": {"query": "select:bash_output"}}]},
             {"web_search": [_search("jobs")], "text": "Loaded and searched."},
             {"tool_calls": [{"name": "bash_output", "input": {"id": "bg1"}}]}, {"text": "Done."},
             {"text": "On GPT."}]

    def switch(driven: Driven, i: int) -> None:
        config = driven.opened.config
        target = {1: "anthropic:claude-opus-5-5", 2: "openai:gpt-4.1"}.get(i)
        if target:
            driven.session.switch_model(create_provider(target, config.providers, config.pricing))
    _session(rec, "anthropic:claude-opus-4-7", turns, ["load", "use it", "and now?"], switch)


def tool_search_on_older_models(rec: Recorder, quick: bool) -> None:
    older = ["anthropic:claude-opus-4-1", "anthropic:claude-3-5-haiku", "anthropic:claude-sonnet-4"]
    for model in older[:1] if quick else older:
        turns = [{"tool_calls": [{"name": "tool_search", "input": {"query": "select:bash_output,task"}}]},
                 {"tool_calls": [{"name": "bash_output", "input": {"id": "bg2"}}]}, {"text": "ok"}]
        _session(rec, model, turns, ["go"])


def searches_withdrawn(rec: Recorder, quick: bool) -> None:
    turns = [{"web_search": [_search("a"), _search("b")], "text": "Two."}, {"text": "Capped."}, {"text": "More."}]
    config = ('[web]\nsearch_session_cap = 2\nsearch_allowed_domains = ["example.test", '
              '"docs.example.test/api/*"]\n')
    _session(rec, "anthropic:claude-sonnet-4-5", turns, ["search twice", "again", "and again"], config=config)


def images_both_routes(rec: Recorder, quick: bool) -> None:
    for n in range(3):
        (rec.repo / f"shot{n}.png").write_bytes(_png(40 + n, 30))
    turns = [{"tool_calls": [{"name": "str_replace_based_edit_tool", "input": {"command": "view",
                                                                               "path": f"shot{n}.png"}}
                             for n in range(3)]}, {"text": "Three shots."}, {"text": "ok"}]
    _session(rec, "anthropic:claude-sonnet-4-6", turns, ["look at @shot0.png", "fine"])
    turns = [{"tool_calls": [{"name": "tool_search", "input": {"query": "select:str_replace_based_edit_tool"}}]},
             {"tool_calls": [{"name": "str_replace_based_edit_tool", "input": {"command": "view",
                                                                               "path": "shot1.png"}}]},
             {"text": "Seen."}]
    _session(rec, "openai:gpt-5.6-sol", turns, ["look at @shot2.png"])


def _png(width: int, height: int) -> bytes:
    raw = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big"))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


SCENARIOS: dict[str, Callable[[Recorder, bool], None]] = {
    f.__name__: f for f in (paused_turns, mixed_cut_by_max_turns, mixed_killed, mixed_interrupted_then_compacted,
                            loads_through_compaction, switch_to_a_model_that_always_thinks,
                            tool_search_on_older_models, searches_withdrawn, images_both_routes)}


def isolate() -> None:
    """A home of its own for every session the audit runs (nothing touches the real one)."""
    home = Path(tempfile.mkdtemp(prefix="request-audit-home-"))
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state"),
                     ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share")):
        os.environ[var] = str(home / sub)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        os.environ.pop(var, None)
    sys.stdout.flush()

