"""Make the stored sessions of tests/store/stored/ with a checkout of coder: real `coder run` sessions of each kind
(tool calls, a resume, compaction, a subagent, images, plan mode and the task list, a hook's context, a turn killed
mid-call), the session store they leave as SQL text, and what that checkout rebuilds from each session (the
expectation a later coder must meet when it resumes them: tests/store/test_store_stored_sessions.py).

    python tests/store/make_stored_sessions.py LABEL [--checkout PATH]

writes `stored/LABEL.sql` and `stored/LABEL.json`. LABEL names the coder that stored them (`main-b034957`). Run it
again with a new checkout when an event's shape changes (coder/base/event_versions.py), keeping the old files: a
session stored by every earlier version must still resume. Everything runs in a temporary HOME, offline, with
scripted models.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

HERE = Path(__file__).resolve().parent


def png() -> bytes:
    """A 2x2 PNG (red, green, blue, white), small enough to keep the fixture small."""
    image = Image.new("RGB", (2, 2))
    image.putdata([(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)])
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()

HANDOFF = "## Intent\nCount to a few thousand.\n## Plan and next\n1. say done"

#: what the checkout under test rebuilds from each stored session (run with that checkout first on the path)
REBUILD = """
import json, sqlite3, sys
from coder.engine.history import rebuild
from coder.store.db import SessionStore
store = SessionStore(__import__("pathlib").Path(sys.argv[1]))
ids = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM sessions ORDER BY created")]
out = {}
for sid in ids:
    events = store.stored(sid) if hasattr(store, "stored") else [e.to_dict() for e in store.events(sid)]
    r = rebuild(events)
    out[sid] = {"history": [m.to_dict() for m in r.history], "turns": r.turns, "cost_usd": r.cost_usd,
                "files_changed": r.files_changed, "task": r.task, "mode": r.mode, "history_at": r.history_at,
                "compactions": [[c.kind, c.tokens_before, c.tokens_after] for c in r.compactions],
                "types": sorted({e.type for e in store.events(sid)})}
print(json.dumps(out, indent=1, sort_keys=True))
"""


class Maker:
    def __init__(self, checkout: Path, root: Path) -> None:
        self.checkout, self.root = checkout, root
        self.home = root / "home"
        self.repo = root / "repo"
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith(("CODER_", "ANTHROPIC_", "OPENAI_"))},
                    "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
                    "XDG_STATE_HOME": str(self.home / ".local" / "state"), "XDG_CACHE_HOME": str(self.home / ".cache"),
                    "XDG_DATA_HOME": str(self.home / ".local" / "share"), "PYTHONPATH": str(checkout),
                    "GIT_CONFIG_GLOBAL": str(self.home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
        self.scripts = 0

    def setup(self) -> None:
        self.home.mkdir(parents=True)
        (self.home / ".gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.com\n"
                                              "[init]\n\tdefaultBranch = main\n")
        (self.repo / "src").mkdir(parents=True)
        (self.repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
        (self.repo / "shot.png").write_bytes(png())
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
            subprocess.run(argv, cwd=self.repo, env=self.env, check=True)

    def script(self, turns: list[dict[str, Any]]) -> Path:
        self.scripts += 1
        path = self.root / f"script-{self.scripts}.json"
        path.write_text(json.dumps({"turns": turns}))
        return path

    def argv(self, turns: list[dict[str, Any]], *args: str, mode: str = "auto") -> list[str]:
        return [sys.executable, "-m", "coder", "run", "--output-format", "stream-json", "--permission-mode", mode,
                "--model", f"scripted:{self.script(turns)}", *args]

    def run(self, turns: list[dict[str, Any]], *args: str, mode: str = "auto") -> str:
        """One session to its end; its id."""
        proc = subprocess.run(self.argv(turns, *args, mode=mode), cwd=self.repo, env=self.env, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        result = next((e for e in events if e["type"] == "result"), None)
        if result is None:
            raise SystemExit(f"no result from {args}: {proc.stderr[-2000:]}")
        return str(result["session_id"])

    def killed(self, turns: list[dict[str, Any]], *args: str) -> None:
        """A session killed (SIGKILL) while its tool call runs: the call is stored as requested, never finished."""
        proc = subprocess.Popen(self.argv(turns, *args), cwd=self.repo, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if '"tool_output"' in line or ('"tool_call_approved"' in line and "sleep" in line):
                break
        time.sleep(1.0)  # the call has been stored as requested and approved; its output is what it waits for
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def make_all(self) -> None:
        config = self.home / ".config" / "coder"
        config.mkdir(parents=True)
        (config / "config.toml").write_text("[stuck]\nenabled = false\n")
        # 1. tool calls: the shell, the editor (view, edit, create), code search, the task list
        first = self.run([
            {"text": "Looking.", "tool_calls": [
                {"name": "bash", "input": {"command": "ls && echo hello"}},
                {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "src/app.py"}},
                {"name": "code_search", "input": {"query_type": "definition", "query": "greet"}}]},
            {"text": "Editing.", "tool_calls": [
                {"name": "str_replace_based_edit_tool", "input": {"command": "str_replace", "path": "src/app.py",
                                                                  "old_str": "'hi '", "new_str": "'hello '"}},
                {"name": "str_replace_based_edit_tool", "input": {"command": "create", "path": "NOTES.md",
                                                                  "file_text": "# Notes\n"}},
                {"name": "todo", "input": {"todos": [{"id": "1", "text": "greet politely", "status": "done"}]}},
                {"name": "bash", "input": {"command": "exit 3"}}]},
            {"text": "Done: greet says hello."}], "make greet polite")
        # 2. the same session resumed, one more turn
        self.run([{"text": "Checked again.", "tool_calls": [{"name": "bash", "input": {"command": "cat NOTES.md"}}]},
                  {"text": "All good."}], "--resume", first, "check it again")
        # 3. compaction: outputs long enough to mask and summarise at 6,000 tokens, the summary scripted
        (config / "config.toml").write_text("[stuck]\nenabled = false\n[context]\ncompact_at = 6000\n"
                                            "recent_turns = 1\n")
        counting = [{"text": f"Counting {n}.",
                     "tool_calls": [{"name": "bash", "input": {"command": f"seq {n} {n + 900}"}}]}
                    for n in range(0, 7200, 900)]
        self.run([*counting, {"text": "done"}, {"when": "about to be compacted", "repeat": True, "text": HANDOFF}],
                 "count to a few thousand")
        (config / "config.toml").write_text("[stuck]\nenabled = false\n")
        # 4. a subagent (foreground), which has its own stored session
        child = self.script([{"text": "Reading.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
                             {"text": "The repository holds src/app.py and shot.png."}])
        agents = config / "agents"
        agents.mkdir()
        (agents / "scout.md").write_text(f"---\nname: scout\ndescription: looks around\ntools: [bash]\n"
                                         f"permission_mode: plan\nmodel: scripted:{child}\n---\nYou look around.\n")
        self.run([{"text": "Loading the subagents.", "tool_calls": [
                      {"name": "tool_search", "input": {"query": "select:task"}}]},
                  {"text": "Asking a scout.", "tool_calls": [
                      {"name": "task", "input": {"agent": "scout", "prompt": "What is in the repository?",
                                                 "description": "look around"}}]},
                  {"text": "The scout says: src/app.py and shot.png."}], "ask a scout what is here")
        # 5. images: one attached to the message, one a tool's result
        self.run([{"text": "Viewing.", "tool_calls": [
                      {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "shot.png"}}]},
                  {"text": "Four coloured pixels."}], "--image", str(self.repo / "shot.png"), "what is in the picture?")
        # 6. plan mode: a plan proposed (headless: recorded, nobody asked)
        self.run([{"text": "Planning.", "tool_calls": [
                      {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "src/app.py"}}]},
                  {"text": "Here is the plan.", "tool_calls": [
                      {"name": "exit_plan", "input": {"plan": "1. Make greet polite.\n2. Add a test."}}]},
                  {"text": "Waiting for approval."}], "plan a polite greet", mode="plan")
        # 7. a hook's context (Claude Code's UserPromptSubmit hook: plain output is context for the model)
        claude = self.home / ".claude"
        claude.mkdir()
        (claude / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo 'Remember: tabs, not spaces.'"}]}]}}))
        self.run([{"text": "Noted: tabs."}], "how do I indent?")
        (claude / "settings.json").unlink()
        # 8. a turn killed while its tool call runs
        self.killed([{"text": "Waiting.",
                       "tool_calls": [{"name": "bash", "input": {"command": "echo started; sleep 600"}}]},
                      {"text": "never reached"}], "wait a long time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("label")
    parser.add_argument("--checkout", type=Path, default=HERE.parents[1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coder-stored-") as tmp:
        maker = Maker(args.checkout.resolve(), Path(tmp))
        maker.setup()
        maker.make_all()
        db = maker.home / ".local" / "state" / "coder" / "sessions.db"
        expected = subprocess.run([sys.executable, "-c", REBUILD, str(db)], env=maker.env, capture_output=True,
                                  text=True, check=True).stdout
        with sqlite3.connect(db) as conn:
            dump = "\n".join(conn.iterdump()) + "\n"
        meta = {"workspace": str(maker.repo), "home": str(maker.home)}
    out = HERE / "stored"
    out.mkdir(exist_ok=True)
    (out / f"{args.label}.sql").write_text(dump)
    (out / f"{args.label}.json").write_text(json.dumps({"made": meta, "sessions": json.loads(expected)}, indent=1,
                                                       sort_keys=True) + "\n")
    print(f"wrote {out / args.label}.sql and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
