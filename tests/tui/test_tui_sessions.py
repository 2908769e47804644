"""Issue 24, bug 12: a session whose process was killed read as "running" for ever; an app opened and closed
without a word left a session behind. Real processes (killed with SIGKILL), the real store, the app with Pilot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tui_support import async_test, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import paths
from coder.commands.slash import run_slash
from coder.store.db import SessionStore

REPO = Path(__file__).resolve().parents[2]
HELLO = {"turns": [{"text": "Hello."}]}


def test_a_killed_session_reads_as_interrupted_and_a_live_one_as_running(git_repo: Path) -> None:
    child = textwrap.dedent(f"""
        import os, signal, sys
        from coder.base import paths
        from coder.base.events import UserMessage
        from coder.store.db import SessionStore
        store = SessionStore(paths.sessions_db())
        store.create_session("killed-1", {str(git_repo)!r}, {str(git_repo)!r}, "scripted")
        store.append("killed-1", UserMessage("hello"))
        print("ready", flush=True)
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.stdin.readline()
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", child, "kill"], env=env, capture_output=True, timeout=60)
    store = SessionStore(paths.sessions_db())
    assert store.session("killed-1").status == "interrupted"
    assert [r.status for r in store.sessions(10, str(git_repo))] == ["interrupted"]

    live = subprocess.Popen([sys.executable, "-c", child.replace("killed-1", "alive-1"), "wait"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "ready"
        assert store.session("alive-1").status == "running"  # its process is still there
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait(timeout=10)
    assert store.session("alive-1").status == "interrupted"


@async_test
async def test_an_app_closed_without_a_word_leaves_no_session(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        listing = run_slash(app.opened, "/sessions").text
        unused = app.opened.session.id
        assert unused in listing and "this one" in listing  # listed while it is open
        await pilot.press("ctrl+c", "ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.control.last_session_id is None  # no "is saved; coder --resume" for it
    store = SessionStore(paths.sessions_db())
    assert [r.id for r in store.sessions(10)] == []
    assert not any(True for _ in store.events(unused))

    app, f = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "hi")
        await wait_for(pilot, lambda: not app.busy and app.session.stats.turns == 1)
        used = app.opened.session.id
        await pilot.press("ctrl+c", "ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.control.last_session_id == used
    assert [(r.id, r.status) for r in SessionStore(paths.sessions_db()).sessions(10)] == [(used, "done")]
