"""Issue 43, item 3: model text never becomes a host file read. Before, every `Session.send` looked for dropped
image paths and `@path` in its text, including a prompt a model wrote for a subagent and the news of a
background agent's report: a model in plan mode, in an untrusted repository, could have any image of the machine
sent to the model.

The real `coder run` (the real anthropic SDK against the strict fake server, the real sandbox), in every
permission mode, with `--no-trust`. The model starts a subagent in the foreground and one in the background, each
with a prompt naming an image outside the workspace (owned by the test) as a dropped path, quoted, escaped and as
`@path`; each child's report names it again, and so does the parent. The control: the same path in the task the
person types is attached, so the plant is live and readable."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
MODES = ("plan", "ask", "auto-edit", "auto")


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap` " \
                                  "(or `bash install.sh` as root)"


def secret_picture(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "private pictures"
    folder.mkdir()
    out = io.BytesIO()
    Image.new("RGB", (37, 23), (250, 10, 90)).save(out, "PNG")
    path = folder / "secret.png"
    path.write_bytes(out.getvalue())
    return path, base64.b64encode(out.getvalue()).decode()


def naming(path: Path, workspace: Path) -> str:
    escaped = str(path).replace(" ", "\\ ")
    return f"look at '{path}' and \"{path}\" and {escaped} and @{os.path.relpath(path, workspace)}"


def run(workspace: Path, server: FakeServer, mode: str, task: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", "anthropic:claude-sonnet-4-6",
                           "--permission-mode", mode, "--no-trust", "--output-format", "stream-json", task],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def images_in(requests: list[dict[str, Any]]) -> list[str]:
    found = []
    for request in requests:
        for message in request["messages"]:
            content = message["content"] if isinstance(message["content"], list) else []
            for block in content:
                inner = block.get("content") if isinstance(block.get("content"), list) else []
                found += [b["source"]["data"] for b in [block, *inner] if b.get("type") == "image"]
    return found


@pytest.mark.parametrize("mode", MODES)
def test_text_a_model_or_an_agent_wrote_never_attaches_a_host_file(git_repo: Path, tmp_path: Path,
                                                                   mode: str) -> None:
    picture, data = secret_picture(tmp_path)
    named = naming(picture, git_repo)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"when": "FOREGROUND-JOB", "text": f"Report: {named}"},
        {"when": "BACKGROUND-JOB", "text": f"Background report: {named}"},
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:task"}}]},  # task is loaded on demand
        {"tool_calls": [
            {"name": "task", "input": {"description": "look", "prompt": f"FOREGROUND-JOB {named}"}},
            {"name": "task", "input": {"description": "look later", "prompt": f"BACKGROUND-JOB {named}",
                                       "background": True}}]},
        {"text": f"The parent says: {named}"},
        {"text": "News read."},
    ]}))
    with FakeServer(script) as server:
        done = run(git_repo, server, mode, "find out what the pictures show")
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr[-2000:]
    prompts = [json.dumps(r["messages"]) for r in requests]
    assert any("FOREGROUND-JOB" in p for p in prompts) and any("BACKGROUND-JOB" in p for p in prompts)
    assert any("Background report" in p for p in prompts[-1:])  # the news of the background agent was sent
    assert images_in(requests) == [] and not any(data[:200] in p for p in prompts)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert all(not e.get("images") and not e.get("attachments") for e in events if e["type"] == "user_message")


def test_the_control_the_persons_own_words_attach_the_same_file(git_repo: Path, tmp_path: Path) -> None:
    picture, data = secret_picture(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "A pink rectangle."}]}))
    with FakeServer(script) as server:
        done = run(git_repo, server, "plan", naming(picture, git_repo))
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr[-2000:]
    assert images_in(requests) == [data]  # read once, sent once
