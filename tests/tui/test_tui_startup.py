"""Issue 47: the app and `--plain` take keys before the engine loads, and keep every key typed before the session is
open. What stands between the launch and the first screen is the command line, the frontend's module and what it
draws; the engine, the tools, the configuration's declarations (and its check), the commands, the stuck detector
and the model SDKs load after it (the app: in its opening worker once the first frame is drawn; `--plain`: on a
thread once the first prompt is up). Read here twice: what importing each frontend loads, and what the real `coder`
command has loaded at the moment the app starts or the REPL's first prompt would show, in a real terminal.

What is typed before the session is open (before the first screen, even before coder took the terminal) is kept
and delivered in the order typed: in the app messages and commands once the session is open, in `--plain` the
first message once it is open and the next lines in the prompt after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pexpect
import pytest
from terminal_support import Tmux, coder_command  # type: ignore[import-not-found]
from tui_support import (  # type: ignore[import-not-found]
    async_test,
    make_app,  # type: ignore[import-not-found]
    type_and_send,
    wait_for,
)
from tui_support import conversation_text as texts  # type: ignore[import-not-found]

REPO = Path(__file__).resolve().parents[2]
#: packages that must not load before the first screen (each costs tens of milliseconds or more)
LATER = ("coder.engine.builder", "coder.engine.session", "coder.engine.session_parts", "coder.engine.dispatch",
         "coder.tools", "coder.config.sections", "coder.config.programs", "coder.config.stuck", "coder.commands.slash",
         "coder.stuck", "coder.review", "coder.models", "coder.sandbox", "coder.store", "coder.context", "coder.vcs",
         "coder.ext", "coder.lsp", "anthropic", "openai", "httpx", "markdown_it", "pygments", "prompt_toolkit")
THREE = {"turns": [{"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}]}


def too_early(loaded: list[str], later: tuple[str, ...] = LATER, allowed: frozenset[str] = frozenset()) -> list[str]:
    return [name for name in loaded if any(name == p or name.startswith(p + ".") for p in later)
            and name not in allowed]


def loaded_by(module: str, then: str = "pass") -> list[str]:
    code = f"import sys, json; import {module}; {then}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", ["coder.tui.app", "coder.repl.repl"])
def test_a_frontend_loads_nothing_of_the_engine_before_its_first_screen(module: str) -> None:
    loaded = loaded_by(module)
    assert too_early(loaded) == [], f"importing {module} loads {too_early(loaded)}"
    assert "textual" in loaded or module != "coder.tui.app"  # the control: the frontend itself did load


#: the real entry point on a terminal, stopped at one function (module, attribute path): it writes out what is
#: loaded then and exits
_STOP_AT = """
import functools, importlib, json, os, sys
frontend, out, module, attribute = sys.argv[1:5]

def stop(*args, **kwargs):
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
    os._exit(0)

owner, _, name = attribute.rpartition(".")
holder = functools.reduce(getattr, owner.split(".") if owner else [], importlib.import_module(module))
assert hasattr(holder, name), f"no {attribute} in {module} to stop at"
setattr(holder, name, stop)
from coder.cli.main import main
sys.argv = ["coder", "--model", "scripted:none.json", *(["--plain"] if frontend == "plain" else [])]
main()
"""
#: where the first screen comes: the app's `run` (the screen is drawn from there) or the REPL's first read (its
#: prompt)
FIRST_SCREEN = {"app": ("coder.tui.app", "CoderApp.run"), "plain": ("coder.repl.reader", "LineReader.read")}
#: where the trust question is asked
TRUST_QUESTION = {"app": ("coder.tui.questions", "Questions.ask_trust"), "plain": ("coder.repl.questions", "ask_trust")}


def loaded_when_stopped(workspace: Path, tmp_path: Path, frontend: str, at: tuple[str, str]) -> list[str]:
    """What `coder` (the frontend's) had loaded when it reached `at` (the test fails when it never did)."""
    out = tmp_path / "loaded.json"
    child = pexpect.spawn(sys.executable, ["-c", _STOP_AT, frontend, str(out), *at], cwd=str(workspace),
                          env={**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}, timeout=120,
                          encoding="utf-8", dimensions=(40, 120))
    child.expect(pexpect.EOF)
    child.close()
    assert out.exists(), f"{frontend}: `coder` never reached {'.'.join(at)}:\n{child.before}"
    return json.loads(out.read_text())


@pytest.mark.parametrize("frontend", ["app", "plain"])
def test_the_coder_command_loads_nothing_of_the_engine_before_the_first_screen(git_repo: Path, tmp_path: Path,
                                                                               frontend: str) -> None:
    """The model above sees a frontend's module alone; `coder` also parses its flags and (before issue 47's change)
    checked the configuration, which loaded the configuration's declarations, the sandbox's profile and the model
    table, and `--plain` loaded the commands to tell a command from a message: the whole path, in a terminal."""
    loaded = loaded_when_stopped(git_repo, tmp_path, frontend, FIRST_SCREEN[frontend])
    later = tuple(p for p in LATER if frontend == "app" or p != "prompt_toolkit")  # the REPL's prompt is its screen
    # what the command line's parser loads (the subcommands' flags, `--help`'s cost: benchmarks/startup.py)
    parser = frozenset(loaded_by("coder.cli.main", "coder.cli.main.build_parser()"))
    early = too_early(loaded, later, parser)
    assert early == [], f"`coder` has loaded {early} before its first screen"
    assert ("textual" if frontend == "app" else "prompt_toolkit.shortcuts") in loaded  # the control


@pytest.mark.parametrize("frontend", ["app", "plain"])
def test_the_trust_question_comes_before_the_engine_loads(git_repo: Path, tmp_path: Path, frontend: str) -> None:
    """An untrusted repository that defines a hook: the question is asked from what the repository would run and
    its fingerprint, before the engine, the tools and the model's SDK load (the app asked from inside the session's
    opening, after them; `--plain` loaded the engine's builder for the working folder), and before anything of the
    repository ran (its hook writes a marker when it does: the control, trusted, is in
    tests/security/test_security_trust_prompt.py)."""
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "echo ran > hook-ran.txt"}]}]}}))
    loaded = loaded_when_stopped(git_repo, tmp_path, frontend, TRUST_QUESTION[frontend])
    engine = [m for m in ("coder.engine.builder", "coder.engine.session", "coder.tools.registry", "anthropic")
              if m in loaded]
    assert engine == [], f"loaded before the trust question: {engine}"
    assert not (git_repo / "hook-ran.txt").exists()


@async_test
async def test_messages_and_commands_typed_before_the_session_is_open_run_in_order(factory, git_repo: Path,
                                                                                   tmp_path: Path) -> None:
    """A command typed while the session opened was refused ("/help waits for the session to open"): lost. Now
    it is queued with the messages around it, and each goes once the session is open, in the order typed: the
    message's turn, then the command's result, then the next message."""
    app, _ = make_app(factory, git_repo, tmp_path, THREE)
    fast = app.control.opener
    typed = threading.Event()  # the session opens only once everything is typed (no race with a slow machine)
    app.control.opener = lambda on_event, ask, override: (typed.wait(30), fast(on_event, ask, override))[1]
    async with app.run_test(size=(100, 30)) as pilot:
        for line in ("first", "/cost", "second"):
            await type_and_send(pilot, app, line)
        assert app.opened is None
        await wait_for(pilot, lambda: "queued (sent when the session is open): second" in texts(app))
        assert "queued (run when the session is open): /cost" in texts(app)
        typed.set()
        await wait_for(pilot, lambda: "answer two" in texts(app) and not app.busy)
        body = texts(app)
        first, cost, second = (body.index(s) for s in ("answer one", "› /cost", "answer two"))
        assert first < cost < second, body


def launched(tmp_path: Path, git_repo: Path, plain: bool) -> Tmux:
    script = tmp_path / "three.json"
    script.write_text(json.dumps(THREE))
    return Tmux(tmp_path, coder_command(script, *(["--plain"] if plain else [])), git_repo, height=40)


def type_at_once(tmux: Tmux, *lines: str) -> None:
    """Typed the moment the command starts (the interpreter still loading), each line but the last with Enter."""
    for i, line in enumerate(lines):
        tmux.type(line)
        if i < len(lines) - 1:
            tmux.send("Enter")


def test_the_app_keeps_what_is_typed_during_the_launch(git_repo: Path, tmp_path: Path) -> None:
    """Keys typed before the app's first screen went to a screen without a focused input and were dropped (and an
    Enter typed before coder took the terminal arrived as Ctrl+J, a new line): now every one reaches the input in
    order, the lines are sent once the session is open, and the last, unsent, waits in the input."""
    tmux = launched(tmp_path, git_repo, plain=False)
    try:
        type_at_once(tmux, "first", "/cost", "second", "third")
        screen = tmux.wait("answer two", "idle │", timeout=90)
        flat = " ".join(screen.split())
        assert flat.index("answer one") < flat.index("› /cost") < flat.index("answer two"), screen
        assert "answer three" not in screen and "third" in screen.split("answer two")[1], screen
    finally:
        tmux.close()


def test_plain_keeps_what_is_typed_during_the_launch(git_repo: Path, tmp_path: Path) -> None:
    """`--plain`: an Enter typed before coder took the terminal arrived as a line feed, which the prompt takes as
    Ctrl+J (a new line): `first`, Enter, `second` became a two-line draft nobody sent. Now `first` is sent once the
    session is open, and what was typed after it waits in the next prompt, its lines apart."""
    tmux = launched(tmp_path, git_repo, plain=True)
    try:
        type_at_once(tmux, "first", "second", "third")
        screen = tmux.wait("answer one", timeout=90)
        lines = [line.rstrip() for line in tmux.wait("> second").splitlines() if line.strip()]
        assert "answer two" not in screen
        assert lines[-2:] == ["ask> second", "third"], screen
    finally:
        tmux.close()


def test_the_subcommands_known_before_the_parser_are_the_parsers() -> None:
    """`coder` tells a frontend's launch from a subcommand before building its parser (to take the terminal at
    once): by the subcommands' names, which must be the parser's own."""
    import argparse

    from coder.cli.main import SUBCOMMANDS, build_parser, opens_frontend

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(actions[0].choices) == SUBCOMMANDS
    assert opens_frontend(["--model", "x", "--plain"]) and not opens_frontend(["run", "x"])
    assert not opens_frontend(["--help"])


@pytest.mark.parametrize("plain", [False, True], ids=["app", "plain"])
def test_keys_typed_during_the_launch_never_answer_the_trust_question(git_repo: Path, tmp_path: Path,
                                                                      plain: bool) -> None:
    """Red team of the start-up change (issue 47 items 1 and 4): coder now reads the keys typed during the launch
    and hands them to the frontend, so a person who types `2` and Enter (or `y`, `1`, a bracketed paste of `2` and
    Enter) before the first screen of an untrusted repository must not have answered its trust question, let alone
    trusted it. They are typing: the app queues them as messages, `--plain` keeps them for the first prompt. The
    control: the deliberate way (2, Enter, a pause, Down, Enter) trusts it."""
    from coder.trust.decisions import is_trusted

    (git_repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"probe": {"command": "sh",
                                                                              "args": ["-c", "exit 1"]}}}))
    script = tmp_path / "hello.json"
    script.write_text('{"turns": [{"text": "hello", "repeat": true}]}')
    tmux = Tmux(tmp_path, coder_command(script, *(["--plain"] if plain else [])), git_repo, height=50)
    try:
        type_at_once(tmux, "2", "1", "y", "")  # each with Enter, the moment the command starts
        tmux.run("set-buffer", "--", "2\r")
        tmux.run("paste-buffer", "-p", "-t", "t")
        tmux.wait("2. Yes, trust this repository", timeout=90)
        time.sleep(1.5)  # a question the keys could answer would have been answered by now
        screen = tmux.screen()
        assert "this repository is trusted" not in screen and "Yes, save" not in screen, screen
        assert "not trusted: coder ignores" not in screen, screen  # not even "not now": unanswered
        assert not is_trusted(git_repo)
        if not plain:
            tmux.send("C-u")  # the pasted `2`, if it is in the input: the question takes the focus once it is empty
        tmux.wait("or ↑↓ and Enter answer")
        time.sleep(0.8)  # the keyboard quiet a moment (--plain counts from the last key)
        tmux.type("2")
        tmux.send("Enter")
        tmux.wait("Yes, save: trust this repository")
        time.sleep(1.3)  # read it: the confirmation counts keys a second after it was drawn with none typed
        tmux.send("Down")
        tmux.wait("Enter saves it")
        tmux.send("Enter")
        tmux.wait("saved: this repository is trusted")
        end = time.monotonic() + 30
        while not is_trusted(git_repo):  # written as the session opens (polled)
            assert time.monotonic() < end, tmux.screen()
            time.sleep(0.1)
    finally:
        tmux.close()


#: after the command, the terminal's line mode, echo and Enter-as-newline as the shell sees them
_MODES = "stty -a | tr ' ' '\\n' | grep -E '^-?(icanon|echo|icrnl)$' | tr '\\n' ' '; echo M$((6*7))"


#: a module coder imports only after it has taken the terminal (the frontend's), made slow for a test: it says it
#: was reached (a file), and the launch waits there until the test's Ctrl+C, whatever the load
SLOW_IMPORT = ("import pathlib, time\n\npathlib.Path({mark!r}).write_text('reached')\n"
               "time.sleep(120)  # the test presses Ctrl+C while the launch waits here\n")


def _signals_as_a_terminal_has_them() -> None:
    """In the shell's child, before bash starts: Ctrl+C's signal handled by default and not blocked. A test worker
    may have been left ignoring or blocking it by an earlier test, and bash hands an ignored SIGINT on to coder,
    which then never sees the key (the CI run's two failures: 90 s waits, passing alone)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _line_mode_of(pts: str) -> bool:
    out = subprocess.run(["stty", "-a", "-F", pts], capture_output=True, text=True, timeout=30).stdout
    return " -icanon" not in f" {out}"


@pytest.mark.parametrize("args, slow", [("--plain --bogus", ""), ("--model nosuch:x --plain", ""),
                                        ("--plain", "prompt_toolkit"), ("", "textual"), ("CONTROL", "")])
def test_the_terminal_is_back_in_line_mode_whatever_ends_the_launch(git_repo: Path, tmp_path: Path, args: str,
                                                                    slow: str) -> None:
    """`coder` takes the terminal out of line mode first thing (coder/frontend/typeahead.py); it must be put back
    however coder ends: a bad flag (exit 2 from the parser), a bad model (exit 2 as the session opens), Ctrl+C
    during the launch (exit 130). Read from the shell afterwards. For Ctrl+C the launch is held deterministically:
    the frontend's first import (`slow`) is shadowed on PYTHONPATH by one that says it was reached and sleeps; the
    key is sent once it is reached, when coder must already hold the terminal (a Ctrl+C sent as bash starts the line
    raced coder's own exit and lost 7 runs of 12). The control: a command that leaves it out of line mode is seen."""
    path = f"{REPO}"
    if slow:
        (tmp_path / "slow" / slow).mkdir(parents=True)
        mark = tmp_path / "reached"
        (tmp_path / "slow" / slow / "__init__.py").write_text(SLOW_IMPORT.format(mark=str(mark)))
        path = f"{tmp_path / 'slow'}:{REPO}"
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": []}))
        args += f" --model scripted:{script}"
    command = "stty -icanon -echo" if args == "CONTROL" else f"env PYTHONPATH={path} {sys.executable} -m coder {args}"
    shell = pexpect.spawn("bash", ["--norc", "--noprofile"], cwd=str(git_repo), timeout=90, encoding="utf-8",
                          env={**os.environ, "TERM": "xterm", "PS1": "$ "}, dimensions=(40, 120),
                          preexec_fn=_signals_as_a_terminal_has_them)
    try:
        shell.expect(r"\$ ")
        shell.sendline("tty")
        shell.expect(r"(/dev/pts/\d+)")
        pts = shell.match.group(1)
        shell.expect(r"\$ ")
        shell.sendline(command)
        if slow:
            end = time.monotonic() + 90
            while not mark.exists():  # polled: the launch has reached the frontend's import, where it waits
                assert time.monotonic() < end, "coder never reached its frontend's import"
                time.sleep(0.05)
            assert not _line_mode_of(pts), "coder did not take the terminal out of line mode before the frontend"
            shell.sendintr()
        shell.expect(r"\$ ")
        shell.sendline(f"echo RC=$?; {_MODES}")
        shell.expect("M42")
        modes = shell.before.rsplit("RC=", 1)[1].split()
    finally:
        shell.close(force=True)
    if args == "CONTROL":
        assert "-icanon" in modes and "-echo" in modes, modes
        return
    assert modes[0] == ("130" if slow else "2"), modes
    assert {"icanon", "echo", "icrnl"} <= set(modes[1:]), modes
    assert "Traceback" not in shell.before
