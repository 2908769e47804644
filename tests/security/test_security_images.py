"""Issue 43, item 2: untrusted image bytes are decoded where they can do no harm (coder/models/images.py).

A repository ships `pic.png` holding PostScript. Pillow opens whatever its bytes say, and for PostScript its EPS
plugin starts Ghostscript (`gs --version`, then `gs ... -f FILE`) by a raw PATH lookup: the host's, or a `gs`
the sandbox wrote into the project's activated `.venv/bin`. Here both are stand-ins that write a marker into a
folder the test owns (a real Ghostscript is not needed to prove the start); the control has Pillow open the same
file in a child process and finds the marker. Every way an image comes in is tried: the editor's `view` (in every
permission mode, untrusted), `@pic.png` and the dropped path in the task, `--image`, web_fetch and an MCP image
result; and `prepare` alone in a process without the run-time door, so the fix does not lean on the door.

Also: a 23 KB PNG claiming 190 million pixels is refused from its header, before anything is decoded; and the
decoder's sandbox has no workspace, home, network or process start, and is held to its memory and CPU limits.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "images"))
from web_support import Site, serve  # noqa: E402

from coder.config.layers import settings  # noqa: E402
from coder.ext.mcp_client import MCPManager, ServerConfig  # noqa: E402
from coder.models import images  # noqa: E402
from coder.models.images import MAX_SOURCE_PIXELS, ImageRefused, prepare  # noqa: E402
from coder.sandbox.filter import FilterFailed, FilterLimits, run_filter  # noqa: E402
from coder.sandbox.network import HOSTS_VAR  # noqa: E402
from coder.tools.base import ToolContext  # noqa: E402
from coder.tools.registry import builtin_tools  # noqa: E402
from coder_testkit.fake_server import FakeServer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MODES = ("plan", "ask", "auto-edit", "auto")
EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n%%EndComments\n"
       b"newpath 0 0 moveto 10 10 lineto stroke showpage\n%%EOF\n")


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap` " \
                                  "(or `bash install.sh` as root)"


@dataclass
class Plant:
    repo: Path
    marker: Path
    path: str  # PATH with the project's .venv/bin and a host folder holding stand-in `gs` programs first

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "PATH": self.path, "PYTHONPATH": str(REPO), **extra}

    def started(self) -> str:
        return self.marker.read_text() if self.marker.exists() else ""


def stand_in_gs(folder: Path, marker: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    gs = folder / "gs"
    gs.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\necho 10.02.1\n")
    gs.chmod(0o755)


@pytest.fixture
def plant(git_repo: Path, tmp_path: Path) -> Plant:
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    stand_in_gs(git_repo / ".venv" / "bin", marker)  # what the sandbox could write, then found on an activated PATH
    stand_in_gs(tmp_path / "host-bin", marker)  # the host's Ghostscript
    (git_repo / "pic.png").write_bytes(EPS)
    return Plant(git_repo, marker, os.pathsep.join([str(git_repo / ".venv" / "bin"), str(tmp_path / "host-bin"),
                                                    os.environ["PATH"]]))


def test_the_control_pillow_starts_ghostscript_for_the_picture(plant: Plant) -> None:
    code = ("import sys\nfrom PIL import Image\n"
            "try:\n    Image.open(sys.argv[1]).load()\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n")
    subprocess.run([sys.executable, "-c", code, str(plant.repo / "pic.png")], env=plant.env(), cwd=plant.repo,
                   capture_output=True, text=True, timeout=120)
    assert "/.venv/bin/gs --version" in plant.started()  # the plant is live: Pillow starts the project's gs


def test_prepare_never_gives_postscript_to_pillow_even_without_the_door(plant: Plant) -> None:
    code = ("import sys\nfrom coder.models.images import ImageRefused, prepare\n"
            "try:\n    prepare(open(sys.argv[1], 'rb').read(), 'pic.png')\nexcept ImageRefused as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(plant.repo / "pic.png")], env=plant.env(),
                          cwd=plant.repo, capture_output=True, text=True, timeout=120)
    assert "pic.png: not an image coder can read" in done.stdout, done.stderr
    assert plant.started() == ""


def coder_run(plant: Plant, server: FakeServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = plant.env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", "anthropic:claude-sonnet-4-6",
                           "--no-trust", "--output-format", "stream-json", *args], cwd=plant.repo, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("mode", MODES)
def test_a_picture_holding_postscript_starts_nothing_in_any_mode(plant: Plant, tmp_path: Path, mode: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "pic.png"}}]},
        {"text": "It is no picture."}]}))
    with FakeServer(script) as server:
        done = coder_run(plant, server, "--permission-mode", mode, f"look at @pic.png and {plant.repo}/pic.png")
        last = server.requests[-1]["messages"]
    assert done.returncode == 0, done.stderr[-2000:]
    assert plant.started() == ""
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    refusals = [e["message"] for e in events if e["type"] == "error"]
    assert any("pic.png: not an image coder can read" in m for m in refusals)  # the dropped path
    user = next(e for e in events if e["type"] == "user_message")
    assert "not an image coder can read" in json.dumps(user["attachments"])  # @pic.png
    result = next(b for b in last[-1]["content"] if b["type"] == "tool_result")  # the editor's view
    assert result.get("is_error") and "not an image coder can read" in json.dumps(result["content"])


def test_image_flag_refuses_it_before_anything_starts(plant: Plant, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "never asked"}]}))
    with FakeServer(script) as server:
        done = coder_run(plant, server, "--image", str(plant.repo / "pic.png"), "what is this?")
        assert server.requests == []
    assert done.returncode == 2 and "not an image coder can read" in done.stderr
    assert plant.started() == ""


def test_a_web_page_serving_postscript_as_png_is_refused(plant: Plant, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", plant.path)
    with serve(Site({"/pic.png": (200, {"Content-Type": "image/png"}, EPS)})) as site:
        monkeypatch.setenv(HOSTS_VAR, json.dumps({"pics.example.test": "127.0.0.1"}))
        tool = builtin_tools(["web_fetch"])["web_fetch"]
        (tmp_path / "state").mkdir()
        ctx = ToolContext(tmp_path, tmp_path, "s1", threading.Event(), tmp_path / "state",
                          settings({"sandbox": {"allowed_domains": ["pics.example.test"]}}))
        try:
            result = tool.run(tool.parse({"url": f"http://pics.example.test:{site.port}/pic.png"}), ctx)
        finally:
            tool.close()
    assert site.seen and result.is_error and "not an image coder can read" in result.output
    assert plant.started() == ""


MCP_SERVER = textwrap.dedent('''
    import base64, sys
    from mcp.server.mcpserver import Image, MCPServer
    server = MCPServer("pics")

    @server.tool()
    def picture() -> list:
        """A picture."""
        return ["here it is", Image(data=base64.b64decode(sys.argv[1]), format="png")]

    server.run()
''')


def test_an_mcp_image_result_holding_postscript_is_refused(plant: Plant, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", plant.path)
    server = tmp_path / "pics_server.py"
    server.write_text(MCP_SERVER)
    manager = MCPManager([ServerConfig("pics", sys.executable, [str(server), base64.b64encode(EPS).decode()], {})],
                         tmp_path)
    try:
        manager.start_all()
        text, is_error, pictures = manager.call_tool("pics", "picture", {})
    finally:
        manager.close()
    assert pictures == [] and "here it is" in text and "not an image coder can read" in text
    assert plant.started() == ""


def bomb_png() -> bytes:
    """13,784 x 13,784 pixels (190 million) of one bit each: about 23 KB as a PNG."""
    out = io.BytesIO()
    Image.new("1", (13_784, 13_784)).save(out, "PNG")
    return out.getvalue()


def test_a_png_of_190_megapixels_is_refused_from_its_header(monkeypatch: pytest.MonkeyPatch) -> None:
    data = bomb_png()
    assert len(data) < 64 * 1024
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100_000_000)  # the control: what the old code set, and
    with pytest.warns(Image.DecompressionBombWarning), Image.open(io.BytesIO(data)) as opened:
        assert opened.size[0] * opened.size[1] > MAX_SOURCE_PIXELS  # Pillow only warns: the old code decoded it
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 89_478_485)  # Pillow's own default: no longer coder's business
    started: list[object] = []
    monkeypatch.setattr(images, "run_filter", lambda *a, **k: started.append(a))
    with pytest.raises(ImageRefused, match="13784x13784 pixels is more than coder decodes.*nothing was decoded"):
        prepare(data, "bomb.png")
    assert started == []  # no decoder was started, let alone given the pixels


PROBE = textwrap.dedent("""
    import os, socket, sys
    def tried(what, fn):
        try:
            fn()
            print(what, "allowed")
        except BaseException as exc:
            print(what, "refused", type(exc).__name__)
    tried("workspace", lambda: open(sys.argv[1]).read())
    tried("home", lambda: os.listdir(sys.argv[2]))
    tried("network", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=5))
    print("env", sorted(os.environ))
""")


def test_the_decoder_sees_no_workspace_home_or_network(git_repo: Path, isolated_home: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        out = run_filter([sys.executable, "-I", "-S", "-c", PROBE, str(git_repo / "README.md"), str(isolated_home),
                          str(listener.getsockname()[1])], b"", purpose="a test", readable=[sys.base_prefix,
                                                                                          sys.prefix]).decode()
    finally:
        listener.close()
    assert "workspace refused" in out and "home refused" in out and "network refused" in out, out
    assert "ANTHROPIC" not in out and "HOME" not in out
    assert (git_repo / "README.md").read_text()  # the control: the file is there, and readable outside


def test_the_decoder_is_held_to_its_memory_and_cpu_limits() -> None:
    hog = "x = bytearray(3 * 1024 ** 3)\nprint('allocated')"
    with pytest.raises(FilterFailed, match="MemoryError|over its CPU or memory limit"):
        run_filter([sys.executable, "-I", "-S", "-c", hog], b"", purpose="a test", readable=[sys.base_prefix],
                   limits=FilterLimits(memory_mb=512))
    spin = "while True:\n    pass"
    with pytest.raises(FilterFailed, match="over its CPU or memory limit"):
        run_filter([sys.executable, "-I", "-S", "-c", spin], b"", purpose="a test", readable=[sys.base_prefix],
                   limits=FilterLimits(cpu_s=1, wall_s=120))
