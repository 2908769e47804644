"""`coder run --image`, `@shot.png` in the task and stream-json input, through the real CLI and the real anthropic
SDK against the strict fake server (which refuses any image the API would refuse)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from images_support import picture, write_picture

from coder.models.images import fitted_size
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]


def run(workspace: Path, server: FakeServer, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", "anthropic:claude-sonnet-4-6",
                           "--output-format", "stream-json", *args], cwd=workspace, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def images_sent(server: FakeServer) -> list[list[dict]]:
    """The image blocks of each user message of the last request."""
    return [[b for b in m["content"] if isinstance(b, dict) and b.get("type") == "image"]
            for m in server.requests[-1]["messages"] if m["role"] == "user" and isinstance(m["content"], list)]


def script(tmp_path: Path, turns: int = 1) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"text": f"seen {n}"} for n in range(turns)]}))
    return path


def test_image_flag_and_an_at_mention_both_reach_the_model_as_images(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_picture(workspace / "diagram.png", 3000, 1500)
    shot = write_picture(tmp_path / "shot.jpg", 640, 480, "JPEG")
    with FakeServer(script(tmp_path)) as server:
        done = run(workspace, server, "--image", str(shot), "compare with @diagram.png please")
        sent = images_sent(server)
    assert done.returncode == 0, done.stderr
    assert [i["source"]["media_type"] for i in sent[0]] == ["image/jpeg", "image/png"]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    user = next(e for e in events if e["type"] == "user_message")
    assert [(i["name"], i["width"], i["height"]) for i in user["images"]] == [
        (str(shot), 640, 480), ("diagram.png", *fitted_size(3000, 1500))]  # the big one was scaled before sending
    assert fitted_size(3000, 1500) == (1567, 783)  # within 1568 px and 784 x 1568 pixels


def test_a_file_that_is_not_an_image_stops_the_run_before_anything_is_spent(tmp_path: Path) -> None:
    bad = tmp_path / "notes.png"
    bad.write_text("just text")
    with FakeServer(script(tmp_path)) as server:
        done = run(tmp_path, server, "--image", str(bad), "look")
        assert server.requests == []
    assert done.returncode == 2 and "notes.png: not an image" in done.stdout + done.stderr


def test_stream_json_input_sends_each_line_as_a_turn_with_its_images(tmp_path: Path) -> None:
    encoded = base64.b64encode(picture(120, 80, "WEBP")).decode()
    lines = [{"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": encoded}}]}},
             {"type": "user", "message": {"role": "user", "content": "and now?"}}]
    with FakeServer(script(tmp_path, 2)) as server:
        done = run(tmp_path, server, "--input-format", "stream-json",
                   stdin="\n".join(json.dumps(line) for line in lines))
        sent = images_sent(server)
    assert done.returncode == 0, done.stderr
    assert len(sent[0]) == 1 and sent[0][0]["source"]["media_type"] == "image/webp"
    assert server.requests[-1]["messages"][-1]["content"][0]["text"] == "and now?"
    broken = run(tmp_path, server, "--input-format", "stream-json", stdin='{"type": "user"}')
    assert broken.returncode == 2 and "line 1" in broken.stdout + broken.stderr
