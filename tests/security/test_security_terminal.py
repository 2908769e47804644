"""Terminal injection (issue 14, item 7): what the model writes, what a tool call carries and what a viewed file
holds reaches the terminal with its control sequences shown, never executed, in every frontend.

The attack: a model that follows injected instructions (or a repository file it views) puts OSC 52 (write the
clipboard), OSC 0 (set the window title), CSI 2J (clear the screen), an OSC 8 hyperlink, an 8-bit CSI (U+009B),
a bidi override (U+202E) and a lone CR (overwrite what was shown) into its answer, into a shell command, into a
file name and into a file's first line. Each frontend runs for real (the `coder` binary, the real sandbox, real
git; the REPL and the app in a real pseudo-terminal) and the bytes it writes are checked: none of the payload's
sequences arrive raw, and their visible form does (so the user sees that something was there). The controls
show the setup is real: the stored events hold the raw sequences, and a program that prints them does put them
on the same pseudo-terminal.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pexpect
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coder.base.termsafe import inert_json, visible
from coder.tui.fit import SPINNER

REPO = Path(__file__).resolve().parents[2]

OSC52 = "\x1b]52;c;aGk=\x07"  # clipboard := "hi"
OSC0 = "\x1b]0;pwned-title\x07"
CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
CSI8 = "\x9b2J"
BIDI = "\u202e"
PAYLOAD = OSC52 + OSC0 + CLEAR + OSC8 + CSI8 + BIDI + "\rhidden"
#: a file name can carry all but the OSC 8 (its URL has slashes)
NAME = "n" + OSC0 + CSI8 + BIDI + ".txt"
FINAL = "Done " + PAYLOAD + " END-MARK"
CMD = "touch made.txt # " + PAYLOAD  # writes a file: asks in ask mode, denied in plan

#: payload sequences as a terminal would receive them raw (UTF-8); none may be written
RAW = {"osc52": b"\x1b]52;c;aGk=", "osc0": b"\x1b]0;pwned-title", "osc8": b"\x1b]8;;https://evil",
       "csi8": "\x9b".encode(), "bidi": BIDI.encode(), "bel": b"aGk=\x07"}
#: their visible forms; each must be written
SHOWN = ["␛]52;c;aGk=␇", "␛]0;pwned-title␇", "⟨U+009B⟩2J", "⟨U+202E⟩"]
MODES = ("plan", "ask", "auto-edit", "auto")


def raw_hits(data: bytes) -> list[str]:
    return [name for name, seq in RAW.items() if seq in data]


def script_turns() -> list[dict]:
    return [
        {"text": "Looking " + PAYLOAD, "tool_calls": [
            {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "evil.txt"}},
            {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": NAME}},
            {"name": "bash", "input": {"command": CMD}}]},
        {"text": FINAL},
    ]


@pytest.fixture
def hostile(git_repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a file whose first line, and a file whose name, carry the payload; and the script."""
    (git_repo / "evil.txt").write_text("first " + PAYLOAD + "\nsecond\n")
    (git_repo / NAME).write_text("named\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": script_turns()}))
    return git_repo, script


def env() -> dict[str, str]:
    full = {**os.environ, "TERM": "xterm-256color", "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "160"}
    full["PYTHONPATH"] = str(REPO) + os.pathsep + full.get("PYTHONPATH", "")
    return full


def coder_bytes(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The real `coder` binary with pipes; stdout and stderr as bytes."""
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=env(), capture_output=True,
                          timeout=120, input=b"")


def spawn(*args: str, cwd: Path, rows: int = 40, cols: int = 160) -> tuple[pexpect.spawn, io.BytesIO]:
    """`coder` on a real pseudo-terminal; every byte it writes is kept."""
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: apt-get install bubblewrap (or bash install.sh)")
    log = io.BytesIO()
    child = pexpect.spawn(sys.executable, ["-m", "coder", *args], cwd=str(cwd), env=env(), timeout=60,
                          dimensions=(rows, cols))
    child.logfile_read = log
    return child, log


def type_at_prompt(child: pexpect.spawn, text: str) -> None:
    """`text` and Enter at `--plain`'s prompt: keys typed before prompt-toolkit reads the terminal are lost (on a
    loaded machine it starts reading late), so the text is typed again, after Ctrl+U, until it is echoed."""
    echoed = r"(?:\x1b\[[0-9;?]*[A-Za-z])*".join(re.escape(ch) for ch in text).encode()
    for _ in range(10):
        child.send(text)
        try:
            child.expect(echoed, timeout=3)
            break
        except pexpect.TIMEOUT:
            child.send("\x15")
    else:
        raise AssertionError(f"the prompt never took {text!r}")
    child.send("\r")


def stored_events(session_id: str | None = None) -> list[dict]:
    from coder.base import paths
    from coder.store.db import SessionStore

    store = SessionStore(paths.sessions_db())
    sid = session_id or store.sessions(1, None)[0].id
    return [e.to_dict() for e in store.events(sid)]


def assert_control_is_real(events: list[dict]) -> None:
    """The attack reached coder unchanged: the model's text, the command and the viewed line hold it raw."""
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert any(e["input"].get("command") == CMD for e in finished)
    assert any(PAYLOAD in e["output"] for e in finished), "the viewed first line carries the payload"
    texts = [b["text"] for e in events if e["type"] == "assistant_message" for b in e["message"]["content"]
             if b["type"] == "text"]
    assert FINAL in texts


def strings(value: object) -> list[str]:
    """Every string inside decoded JSON."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


# ---- the function itself ----------------------------------------------------------------------------------------
UNSAFE = {*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F),
          *range(0x2066, 0x206A)}


@given(st.text())
def test_visible_leaves_no_control_character_and_is_idempotent(text: str) -> None:
    out = visible(text)
    assert not [c for c in out if ord(c) in UNSAFE]
    assert visible(out) == out
    assert out.count("␛") == text.count("␛") + text.count("\x1b")  # every ESC is shown, one mark each


@given(st.text(alphabet=st.characters(blacklist_characters=[chr(c) for c in UNSAFE])))
def test_visible_changes_nothing_else(text: str) -> None:
    assert visible(text) == text


@given(st.text(), st.text())
def test_visible_works_on_a_stream_cut_anywhere(a: str, b: str) -> None:
    """Deltas are neutralised one by one: a sequence split across two of them is still no escape."""
    if not (a.endswith("\r") and b.startswith("\n")):  # CR LF split across deltas shows as ␍ then a newline
        assert visible(a) + visible(b) == visible(a + b)


def test_visible_marks() -> None:
    assert visible(PAYLOAD) == ("␛]52;c;aGk=␇␛]0;pwned-title␇␛[2J␛]8;;https://evil.example/␛\\click␛]8;;␛\\"
                                "⟨U+009B⟩2J⟨U+202E⟩␍hidden")
    assert visible("a\r\nb\tc\x00\x7f\x85\u2066") == "a\nb\tc␀␡⟨U+0085⟩⟨U+2066⟩"  # CR LF is a line end
    big = "plain line of text\n" * 500_000
    assert visible(big) is big  # clean text is not copied
    started = time.perf_counter()
    assert visible(big + OSC52).endswith("␛]52;c;aGk=␇")
    assert time.perf_counter() - started < 30.0  # linear; a quadratic scan of 9 MB would take hours


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20))
def test_inert_json_is_exact_and_has_no_raw_control(value: object) -> None:
    encoded = inert_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(encoded) == value
    assert not [c for c in encoded if ord(c) in UNSAFE or ord(c) in (0x09, 0x0A, 0x0D)]


# ---- coder run --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_run_text_output_shows_the_payload_on_a_terminal(hostile: tuple[Path, Path], mode: str) -> None:
    """On a pty (stdout and stderr both a terminal, so the tool lines print too) in every mode: the final text,
    the tool lines and the denial lines arrive neutralised."""
    repo, script = hostile
    child, log = spawn("run", "--model", f"scripted:{script}", "--permission-mode", mode, "go " + PAYLOAD, cwd=repo)
    child.expect(pexpect.EOF, timeout=120)
    child.close()
    data = log.getvalue()
    assert child.exitstatus == 0, data.decode(errors="replace")
    assert raw_hits(data) == [] and b"\x1b[2J" not in data and b"\r" + b"hidden" not in data
    text = data.decode()
    assert all(mark in text for mark in SHOWN) and "␍hidden END-MARK" in text
    assert '· bash {"command": "touch made.txt # \\u001b]52' in text  # the tool line, shown (JSON-escaped)
    assert_control_is_real(stored_events())


def test_run_text_output_through_a_pipe_has_no_escape_at_all(hostile: tuple[Path, Path]) -> None:
    repo, script = hostile
    out = coder_bytes("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "go", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert b"\x1b" not in out.stdout + out.stderr and raw_hits(out.stdout + out.stderr) == []
    assert out.stdout.decode().strip() == visible(FINAL)


@pytest.mark.parametrize("fmt", ["stream-json", "json"])
def test_run_json_output_is_inert_and_exact(hostile: tuple[Path, Path], fmt: str) -> None:
    repo, script = hostile
    out = coder_bytes("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "--output-format", fmt,
                      "go", cwd=repo)
    assert out.returncode == 0, out.stderr
    raw = out.stdout
    assert b"\x1b" not in raw and b"\x07" not in raw and b"\r" not in raw and raw_hits(raw) == []
    lines = [json.loads(line) for line in raw.decode().splitlines()]
    result = lines[-1]
    assert result["type"] == "result" and result["final_text"] == FINAL  # exact for a JSON reader
    if fmt == "stream-json":
        finished = [e for e in lines if e["type"] == "tool_call_finished"]
        assert any(PAYLOAD in e["output"] for e in finished) and any(e["input"].get("path") == NAME for e in finished)


def test_a_usage_error_quoting_a_path_is_shown(git_repo: Path) -> None:
    out = coder_bytes("run", "--prompt-file", "missing" + OSC52 + CSI8, cwd=git_repo)
    assert out.returncode == 2
    assert raw_hits(out.stderr) == [] and "missing␛]52;c;aGk=␇⟨U+009B⟩2J" in out.stderr.decode()


# ---- coder sessions ---------------------------------------------------------------------------------------------
def test_sessions_show_list_and_export(hostile: tuple[Path, Path]) -> None:
    repo, script = hostile
    ran = coder_bytes("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "go " + PAYLOAD, cwd=repo)
    assert ran.returncode == 0, ran.stderr
    events = stored_events()
    assert_control_is_real(events)
    sid = events[0]["session_id"] if "session_id" in events[0] else None
    from coder.base import paths
    from coder.store.db import SessionStore

    sid = sid or SessionStore(paths.sessions_db()).sessions(1, None)[0].id
    shown = coder_bytes("sessions", "show", sid, cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert raw_hits(shown.stdout) == [] and b"\x1b" not in shown.stdout
    text = shown.stdout.decode()
    assert "> go ␛]52;c;aGk=␇" in text and "< Done ␛]52;c;aGk=␇" in text and "first ␛]52" in text
    listed = coder_bytes("sessions", "list", cwd=repo)
    assert b"\x1b" not in listed.stdout and raw_hits(listed.stdout) == [] and "go ␛]52" in listed.stdout.decode()
    for fmt in ("jsonl", "adp"):
        exported = coder_bytes("sessions", "export", sid, "--format", fmt, cwd=repo)
        assert exported.returncode == 0, exported.stderr
        raw = exported.stdout
        assert b"\x1b" not in raw and raw_hits(raw) == []
        records = [json.loads(line) for line in raw.decode().splitlines()]
        assert FINAL in strings(records)  # exact after decoding


# ---- the plain REPL on a pseudo-terminal ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["ask", "auto"])
def test_plain_repl_on_a_pty(hostile: tuple[Path, Path], mode: str) -> None:
    """Tool lines (the command, the file name), the viewed line's result, the permission prompt (ask) and the
    streamed answer: shown, not executed."""
    repo, script = hostile
    child, log = spawn("--plain", "--model", f"scripted:{script}", "--permission-mode", mode, cwd=repo)
    try:
        child.expect(f"{mode}>")
        type_at_prompt(child, "go")
        if mode == "ask":
            child.expect("deny and stop")
            time.sleep(1.0)  # a question takes keys once the keyboard was quiet for 0.5 s (issue 24)
            child.send("1")
        child.expect("END-MARK")
        child.expect("ctx ")
        child.expect(f"{mode}>")
        type_at_prompt(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    data = log.getvalue()
    assert raw_hits(data) == [], data.decode(errors="replace")
    text = data.decode(errors="replace")
    assert all(mark in text for mark in SHOWN)
    assert "touch made.txt # ␛]52;c;aGk=␇" in text  # the command's tool line
    assert "view n␛]0;pwned-title␇⟨U+009B⟩2J⟨U+202E⟩.txt" in text  # the file name
    assert "first ␛]52" in text  # the viewed file's first line, in the result line
    if mode == "ask":
        assert "Allow bash: touch made.txt # ␛]52" in text
    assert_control_is_real(stored_events())


def test_the_pty_capture_sees_raw_sequences(tmp_path: Path) -> None:
    """Control: the same capture does see the payload when a program writes it raw."""
    child = pexpect.spawn(sys.executable, ["-c", f"import sys; sys.stdout.write({PAYLOAD!r})"], timeout=20)
    log = io.BytesIO()
    child.logfile_read = log
    child.expect(pexpect.EOF)
    assert set(raw_hits(log.getvalue())) == set(RAW)


# ---- the Textual app --------------------------------------------------------------------------------------------
def wait_idle(child: pexpect.spawn, log: io.BytesIO, timeout: float = 60.0) -> None:
    """Until the status bar's last word is `idle`: the app draws the status and the transcript in one frame, in
    either order, so the `idle` after a turn may come before the answer's last words (expecting it after them
    waited for a redraw that never comes)."""
    spinner = [ch.encode() for ch in SPINNER]
    deadline = time.monotonic() + timeout
    while True:
        data = log.getvalue()
        if data.rfind(b"idle") > max(data.rfind(ch) for ch in spinner):
            return
        assert time.monotonic() < deadline, "the app never went back to idle"
        child.expect([b"idle", pexpect.TIMEOUT], timeout=1)


@pytest.mark.parametrize("mode", ["ask", "auto"])
def test_textual_app_on_a_pty(hostile: tuple[Path, Path], mode: str) -> None:
    repo, script = hostile
    child, log = spawn("--model", f"scripted:{script}", "--permission-mode", mode, cwd=repo, rows=50, cols=200)
    try:
        child.expect("idle")
        child.send("go")
        time.sleep(0.3)
        child.send("\r")
        if mode == "ask":
            child.expect("Allow")
            time.sleep(1.5)  # the prompt takes the focus after a quiet input, and its keys 0.5 s later (issue 24)
            child.send("1")
        child.expect("END-MARK")
        wait_idle(child, log)
        time.sleep(0.5)
        child.send("\x03")
        child.expect("again to quit")
        child.send("\x03")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    data = log.getvalue()
    assert raw_hits(data) == [], [data[max(0, data.find(s) - 80): data.find(s) + 40] for s in RAW.values()
                                  if s in data]
    text = data.decode(errors="replace")
    assert "␛]52;c;aGk=␇" in text and "⟨U+202E⟩" in text
    assert_control_is_real(stored_events())


def app_args(repo: Path, script: Path, mode: str) -> SimpleNamespace:
    return SimpleNamespace(cwd=str(repo), model=f"scripted:{script}", permission_mode=mode, resume=None,
                           continue_last=False, allow=[], deny=[], no_sandbox=False, plain=False, trust=None)


def test_textual_app_widgets_show_the_payload(hostile: tuple[Path, Path]) -> None:
    """Pilot, the real builder (real tools, real sandbox): the permission prompt, the tool titles and bodies, the
    answer and the rendered screen hold the visible marks and no raw control character; and a command whose text
    looks like Textual markup is shown as written (no MarkupError, no action link)."""
    import asyncio

    from textual.widgets import Static

    from coder.tui.app import CoderApp
    from coder.tui.blocks import ToolBlock
    from coder.tui.prompts import PermissionPrompt

    repo, script = hostile
    markup = "echo [/x] [@click=app.quit]q[/]"
    turns = script_turns()
    turns[0]["tool_calls"].append({"name": "bash", "input": {"command": markup}})
    script.write_text(json.dumps({"turns": turns}))

    async def wait(pilot, predicate, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < end, "timed out waiting for the app"
            await pilot.pause(0.05)

    async def body() -> None:
        app = CoderApp(app_args(repo, script, "ask"))
        async with app.run_test(size=(160, 50)) as pilot:
            await wait(pilot, lambda: app.opened is not None)
            app.control.submit("go")
            await wait(pilot, lambda: app.questions.prompt is not None and app.questions.prompt.armed)  # keys answer
            prompt = app.query_one(PermissionPrompt)
            asked = "\n".join(str(w.render()) for w in prompt.query(Static))
            assert "touch made.txt # ␛]52;c;aGk=␇" in asked and "\x1b" not in asked and "\x9b" not in asked
            await pilot.press("1")  # yes, this once
            await wait(pilot, lambda: not app.busy)
            assert (repo / "made.txt").exists()
            blocks = list(app.query(ToolBlock))
            titles = [str(b.title) for b in blocks]
            assert any("view n␛]0;pwned-title␇⟨U+009B⟩2J⟨U+202E⟩.txt" in t for t in titles), titles
            assert any("first ␛]52;c;aGk=␇" in t for t in titles), titles  # the viewed first line
            assert any(markup in t for t in titles), titles  # literally, brackets and all
            for block in blocks:
                block.set_collapsed(False)
            await pilot.pause(0.5)
            bodies = "\n".join(str(w.render()) for b in blocks if b.body for w in b.body.query(Static))
            assert "first ␛]52;c;aGk=␇" in bodies and "\x1b" not in bodies and "\x9b" not in bodies
            screen = app.export_screenshot()  # what the compositor draws, as text
            assert "␛]52;c;aGk=␇" in screen and "⟨U+202E⟩" in screen
            assert not [c for c in screen if ord(c) in UNSAFE - {0x0A}]
            assert app.is_running  # the markup-looking command did not take the app down

    asyncio.run(body())
