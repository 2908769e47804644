"""Helpers of the subagent tests (issue 36): agent definitions in the test's config dir, each answering from a
script of its own, and `coder run` as a user runs it (a real process, the real sandbox, stream-json parsed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.paths import config_dir, state_dir

REPO = Path(__file__).resolve().parents[1]


def define_agent(tmp_path: Path, name: str, turns: list[dict[str, Any]], *, mode: str = "auto",
                 tools: tuple[str, ...] = ("bash", "str_replace_based_edit_tool"), prompt: str = "") -> None:
    """`name` in the user's agents folder, with its own scripted model: every agent of that name runs `turns`."""
    script = tmp_path / f"agent-{name}.json"
    script.write_text(json.dumps({"turns": turns}))
    folder = config_dir() / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: a test agent\ntools: [{', '.join(tools)}]\n"
                                       f"permission_mode: {mode}\nmodel: scripted:{script}\n---\n"
                                       f"{prompt or 'You are a test agent ' + name}.\n")


def user_config(text: str) -> None:
    path = config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@dataclass
class Run:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        return next(e for e in self.events if e["type"] == "result")

    def parent(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind and "agent_id" not in e]

    def child(self, ident: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("agent_id") == ident and (kind is None or e["type"] == kind)]

    def outputs(self, ident: str) -> list[str]:
        return [e["output"] for e in self.child(ident, "tool_call_finished")]

    def results(self, tool: str) -> list[dict[str, Any]]:
        return [e for e in self.parent("tool_call_finished") if e["tool"] == tool]


def run_coder(repo: Path, tmp_path: Path, turns: list[dict[str, Any]], *args: str, mode: str = "auto",
              timeout: float = 240) -> Run:
    script = tmp_path / f"parent-{len(list(tmp_path.glob('parent-*')))}.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS, *turns]}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                           "--permission-mode", mode, "--model", f"scripted:{script}", *args, "go"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return Run(proc.returncode, events, proc.stderr)


#: `task` and `subagents` are loaded on demand: a parent model loads them before it calls them, as a real one must
#: (the engine refuses to run a deferred tool the conversation never loaded)
LOAD_AGENT_TOOLS = {"tool_calls": [{"name": "tool_search", "input": {"query": "select:task,subagents"}}]}


def start(agent: str, prompt: str, description: str = "") -> dict[str, Any]:
    return {"name": "task", "input": {"agent": agent, "prompt": prompt, "description": description or prompt,
                                      "background": True}}


def control(action: str, ident: str = "", **more: Any) -> dict[str, Any]:
    return {"name": "subagents", "input": {"action": action, **({"id": ident} if ident else {}), **more}}


def worktrees_left() -> list[Path]:
    """Isolated trees still on disk (the default worktree folder, in the test's own state dir)."""
    root = state_dir() / "worktrees"
    return [p for p in root.glob("*/*") if p.is_dir()] if root.is_dir() else []
