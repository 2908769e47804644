"""Sessions against the fake server for the issue-46 tests: one opened in-process (`Driven`, the real SDKs, the
strict fake server, which refuses what the API would: a refused request ends the turn with an error event), and
`coder run` as a real process (to stop it with --max-turns or SIGKILL and resume it)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coder.base import events as ev
from coder.engine.builder import SessionOptions, open_session
from coder.engine.session_parts import TurnOutcome
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
RESULTS = [{"url": "https://docs.example.test/widget/2.0", "title": "Widget 2.0 release notes"}]


class Driven:
    """One session opened in-process, its model behind the fake server."""

    def __init__(self, repo: Path, model: str, monkeypatch: pytest.MonkeyPatch, server: FakeServer,
                 resume: str | None = None) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        self.events: list[ev.Event] = []
        self.opened = open_session(SessionOptions(cwd=repo, model=model, permission_mode="auto", resume=resume,
                                                  no_sandbox=True, trust=True), self.events.append, lambda _: None)
        self.session = self.opened.session

    def send(self, text: str | None, reason: str = "done") -> TurnOutcome:
        outcome = self.session.send(text)
        errors = [e for e in self.events if isinstance(e, ev.ErrorEvent)]
        assert outcome.reason == reason and not errors, (outcome, errors)
        return outcome

    def ctrl_c_at_approval(self, on: bool = True) -> None:
        """From now on (`on`), Ctrl+C as soon as a tool call is approved and its command starts; off, not."""
        def record(event: ev.Event) -> None:
            self.events.append(event)
            if isinstance(event, ev.ToolCallApproved):
                self.session.interrupt()

        self.session.parts.record = record if on else self.events.append

    def close(self) -> None:
        self.session.close("done")
        self.opened.store.close()


def resumed_request(repo: Path, model: str, monkeypatch: pytest.MonkeyPatch, session_id: str, text: str
                    ) -> dict[str, Any]:
    """Resume `session_id` in-process, send `text`: the body of the request that sends."""
    with FakeServer({"turns": [{"text": "Resumed."}]}) as server:
        resumed = Driven(repo, model, monkeypatch, server, resume=session_id)
        try:
            resumed.send(text)
        finally:
            resumed.close()
        return server.requests[0]


def coder_env(server: FakeServer, **more: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k",
            "OPENAI_BASE_URL": server.base_url + "/v1", "OPENAI_API_KEY": "k", **more}


def coder_run(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`coder run ARGS` to its end, its JSON result on the last line of stdout."""
    return subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "json", "--permission-mode",
                           "auto", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def own_sleep(seconds: int = 90) -> str:
    """A `sleep` command line no other process on the machine has (other runs of the suite share it)."""
    return f"sleep {seconds}.{secrets.randbelow(90000) * 10 + 100001}"


def killed_while_running(repo: Path, env: dict[str, str], command: str, *args: str) -> str:
    """Start `coder run ARGS` (stream-json), SIGKILL it once `command` runs in its sandbox; its session id."""
    proc = subprocess.Popen([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                             "--permission-mode", "auto", *args], cwd=repo, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        deadline = time.monotonic() + 120
        while subprocess.run(["pgrep", "-f", command], capture_output=True).returncode != 0:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"{command!r} never started"
            time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return str(first["session_id"])


def blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == kind]
