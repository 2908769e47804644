"""Issue 47's smaller findings, each in a real terminal (tmux) or through Pilot, as a new user would meet them."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from PIL import Image
from terminal_support import Tmux, coder_command, quit_plain  # type: ignore[import-not-found]
from tui_support import app_args, async_test, screen_text, wait_for  # type: ignore[import-not-found]

from coder.base import paths
from coder.store.db import SessionStore

HELLO = {"turns": [{"text": "Seen."}, {"text": "Again."}]}


def script(tmp_path: Path, turns: dict) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(turns))
    return path


def test_a_pasted_image_shows_its_chip_before_the_message_is_sent(git_repo: Path, tmp_path: Path) -> None:
    """A screenshot dropped (pasted as its path) into the input showed nothing until Enter; now a chip says what
    the message will attach, and goes with the message."""
    shot = tmp_path / "shots" / "screen shot.png"
    shot.parent.mkdir()
    Image.new("RGB", (40, 30), "red").save(shot)
    (git_repo / "notes.txt").write_text("a note\n")
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, HELLO)), git_repo, width=110, height=30)
    try:
        tmux.wait("idle │")
        tmux.type("what is wrong here? ")
        tmux.run("set-buffer", "--", f"'{shot}'")
        tmux.run("paste-buffer", "-p", "-t", "t")  # as a terminal pastes a dropped file: quoted, bracketed
        tmux.wait("attaching: [image screen shot.png]")
        tmux.type(" and @notes.txt ")  # the space ends the path (Enter on it would complete it)
        tmux.wait("attaching: [file notes.txt]  [image screen shot.png]")
        tmux.send("Enter")
        screen = tmux.wait("Seen.")
        assert "attaching:" not in screen  # the input is empty again
        assert "[image screen shot.png 40x30" in screen  # the message carried it
    finally:
        tmux.close()


def test_doctor_in_the_app_renders_every_check_bold(git_repo: Path, tmp_path: Path) -> None:
    """`/doctor` showed `** basedpyright**` raw: the language servers' checks are indented under theirs, and the
    spaces went inside the bold."""
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, HELLO)), git_repo, width=150, height=50)
    try:
        tmux.wait("idle │")
        tmux.type("/doctor ")
        tmux.send("Enter")
        screen = tmux.wait("language servers", "clangd")
        assert "**" not in screen
    finally:
        tmux.close()


@async_test
async def test_the_status_bar_shows_the_branch_before_the_session_opens(factory, git_repo: Path,
                                                                       tmp_path: Path) -> None:
    """The status bar said `no git` in a git repository until the session had opened (and for good when it
    failed to): the branch is read from the first paint on; before that it says `…`."""
    import threading

    release = threading.Event()
    f = factory(HELLO)

    def slow(on_event, ask, override):  # the engine loading: a while
        release.wait(60)
        return f(on_event, ask, override)

    from coder.frontend.history import InputHistory
    from coder.tui.app import CoderApp

    app = CoderApp(app_args(git_repo), opener=slow, history=InputHistory(tmp_path / "hist.jsonl"))
    async with app.run_test(size=(120, 30)) as pilot:
        try:
            assert "no git" not in screen_text(app)
            await wait_for(pilot, lambda: "⎇ main" in screen_text(app))
            assert app.opened is None and "starting" in screen_text(app)
        finally:
            release.set()
        await wait_for(pilot, lambda: app.opened is not None)


def test_rewind_lists_when_each_message_was_sent(git_repo: Path, tmp_path: Path) -> None:
    """`/rewind`'s table had an empty time cell for a message that changed nothing (the time was its
    checkpoint's); each row now has the time the message was sent."""
    turns = {"turns": [{"text": "Nothing to change."},
                       {"text": "Writing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
                           "command": "create", "path": "new.txt", "file_text": "x\n"}}]},
                       {"text": "Written."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--permission-mode", "auto"), git_repo,
                width=120, height=40)
    try:
        tmux.wait("idle │")
        for message in ("look only", "write new.txt"):
            tmux.type(message)
            tmux.send("Enter")
            tmux.wait("idle │")
            time.sleep(0.3)
        tmux.wait("Written.", "idle │")  # the turn's last text is drawn before its checkpoint and its end
        tmux.type("/rewind ")
        tmux.send("Enter")
        screen = tmux.wait("look only", "new.txt", "your message")
        rows = [line for line in screen.splitlines() if "look only" in line or "write new.txt" in line]
        assert len(rows) >= 2 and all(re.search(r"\b\d\d:\d\d\b", row) for row in rows[-2:]), rows
    finally:
        tmux.close()



def test_rewind_lists_only_the_persons_messages(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: when a turn that changed code ended without a test, coder's note to the model ("[coder:
    your turn is ending without proof ...") was listed by `/rewind` as message 2, "your message", with the turn's
    changes, and the person's own message as having changed nothing."""
    from coder.engine.turns import CODERS_NOTE

    prompts = Path(__file__).resolve().parents[2] / "prompts"
    assert all(CODERS_NOTE.match((prompts / name).read_text()) for name in ("verify_nudge.md", "verify_ran.md"))
    turns = {"turns": [{"text": "Writing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
                           "command": "create", "path": "calc.py", "file_text": "def one():\n    return 1\n"}}]},
                       {"text": "Written."},
                       {"text": "I did not run any test."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--permission-mode", "auto"), git_repo,
                width=120, height=40)
    try:
        tmux.wait("idle │")
        tmux.type("write calc.py")
        tmux.send("Enter")
        tmux.wait("I did not run any test.", "idle │")
        tmux.type("/rewind ")
        tmux.send("Enter")
        screen = tmux.wait("your message", "write calc.py")
        rows = [line for line in screen.splitlines() if re.search(r"\b\d\d:\d\d\b", line)]
        assert len(rows) == 1 and "write calc.py" in rows[0] and "calc.py" in rows[0].split("write calc.py")[1], rows
        assert "[coder" not in screen.split("your message")[1]
    finally:
        tmux.close()


def test_a_stuck_warning_quoting_the_models_words_says_where_it_is_cut(git_repo: Path, tmp_path: Path) -> None:
    """The stuck warning quoted the model's repeated message cut at 80 characters mid-word, as if it had ended
    there (`'... try the tests agai') 3 times`); the quote is cut at a word with `…`, and the warning reads on."""
    said = ("Let me look at the configuration once more and then run the whole test suite again to see whether "
            "the failure is still there.")
    turns = {"turns": [*({"text": said, "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]}
                         for _ in range(8)), {"text": "Giving up."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--permission-mode", "auto"), git_repo,
                width=160, height=60)
    try:
        tmux.wait("idle │")
        tmux.type("go")
        tmux.send("Enter")
        tmux.wait("Giving up.")
        flat = " ".join(tmux.screen().split())
        warning = flat[flat.index("the agent looks stuck"):]
        quoted = warning[warning.index("the same message (") + len("the same message ("):]
        assert quoted.index("…") < quoted.index(") ")  # the cut is marked where the quote ends
        assert "to stop the turn." in warning
    finally:
        tmux.close()


def test_context_parts_add_up_to_the_context(git_repo: Path, tmp_path: Path) -> None:
    """`/context`'s parts did not add up to the figure above them (raw estimates, deferred tools' definitions
    counted as sent); they are the measured request shared out now, and an `all` row says their sum."""
    import re

    turns = {"turns": [{"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
                       {"text": "Done looking."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--permission-mode", "auto", "--plain"), git_repo,
                width=120, height=50)
    try:
        tmux.wait("auto>")
        tmux.type_at_prompt("look")
        tmux.send("Enter")
        tmux.wait("Done looking.", "ctx ")
        tmux.type_at_prompt("/context")
        tmux.send("Enter")
        screen = tmux.wait("all", "share")
        measured = int(re.search(r"Context: ([\d,]+) of", screen).group(1).replace(",", ""))  # type: ignore[union-attr]
        rows = re.findall(r"^\s*([a-z][a-z ()]+?)\s+([\d,]+)\s+\d+%\s*$", screen, re.MULTILINE)
        parts = {label.strip(): int(n.replace(",", "")) for label, n in rows}
        assert parts.pop("all") == measured == sum(parts.values()) > 0, (parts, measured)
        assert "tool definitions" in parts and "load on demand" in " ".join(screen.split())
    finally:
        tmux.close()


def test_a_command_typed_in_a_burst_is_the_one_its_start_names(git_repo: Path, tmp_path: Path) -> None:
    """`/cos` typed with Enter in one burst was an unknown command, and after a pause (the completion up) ran
    `/cost`: a start that names one command runs it, whatever the timing; one that names several asks."""
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, HELLO)), git_repo, width=110, height=30)
    try:
        tmux.wait("idle │")
        tmux.type("/cos\r")  # one burst, Enter with it
        screen = tmux.wait("Session cost")
        assert "Unknown command" not in screen
        tmux.type("/co\r")  # /commit, /compact, /context, /cost: which one was meant is not known
        tmux.wait("Unknown command /co. Did you mean")  # rendered: the backticks are code
    finally:
        tmux.close()


def test_plain_keeps_keys_typed_during_live_output_off_it_and_fits_its_lines(git_repo: Path,
                                                                              tmp_path: Path) -> None:
    """`--plain` drew the keys typed while a command printed inside its output (`step 2hello`), and told the
    command a terminal as wide as its own, so a full line printed after `  3s │ ` wrapped. The typed keys stay on a
    line below the output (and start the next prompt); the command's terminal is narrower by that prefix, so a line
    as wide as `tput cols` says fits."""
    import re

    command = ("tput cols; printf '%*s\\n' \"$(tput cols)\" '' | tr ' ' x; "  # a line as wide as it is told
               "for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done")
    turns = {"turns": [{"text": "Running.", "tool_calls": [{"name": "bash", "input": {"command": command}}]},
                       {"text": "All steps ran."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--permission-mode", "auto", "--plain"), git_repo,
                width=100, height=40)
    try:
        tmux.wait("auto>")
        tmux.type_at_prompt("go")
        tmux.send("Enter")
        tmux.wait("step 1")
        for ch in "hello world":
            tmux.type(ch)
            time.sleep(0.25)
        screen = tmux.wait("All steps ran.", "ctx ")
        steps = [line for line in screen.splitlines() if "│ step" in line]
        assert len(steps) == 6 and all(re.fullmatch(rf"\s+\d+s │ step {n}", line.rstrip())
                                       for n, line in enumerate(steps, 1)), steps  # no typed key inside them
        told = next(line for line in screen.splitlines() if re.fullmatch(r"\s+\d+s │ \d+", line.rstrip()))
        columns = int(told.split("│")[1])
        assert columns <= 100 - 9, told  # 9 columns for `  3s │ ` (from a new pane coder once read 80 columns)
        assert re.search(rf"\d+s │ x{{{columns}}}\n", screen), screen  # the full line fits on one line of the screen
        tmux.wait("auto> hello world")
    finally:
        tmux.close()


def test_plain_keeps_keys_typed_before_a_question_off_its_lines(git_repo: Path, tmp_path: Path) -> None:
    """The keys typed during a turn are drawn below the output; a permission question that comes then is printed
    without them (its `>` line read `hello1-5 or ↑↓ and Enter answer`), and they come back under the answer and
    start the next prompt, once."""
    turns = {"turns": [{"text": "Waiting.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 3"}}]},
                       {"text": "Now the file.", "tool_calls": [{"name": "bash", "input": {"command": "touch x.txt"}}]},
                       {"text": "All done."}]}
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--plain"), git_repo, width=100, height=40)
    try:
        tmux.wait("ask>")
        tmux.type_at_prompt("go")
        tmux.send("Enter")
        tmux.wait("sleep 3")
        tmux.type("hello")
        tmux.wait("hello")
        screen = tmux.wait("Allow bash: touch x.txt?", "Enter answer")
        hint = next(line for line in screen.splitlines() if "Enter answer" in line)
        assert hint.startswith("1-"), screen  # the question's own line, no typed keys before it
        assert "hello" not in screen.split("Allow bash: touch x.txt?")[1], screen
        time.sleep(1.5)  # the question armed, the keyboard quiet
        tmux.send("1")
        screen = tmux.wait("All done.", "ask> hello")
        assert screen.count("hello") == 1, screen  # at the prompt only: the typed line went when it came
        assert (git_repo / "x.txt").exists()
    finally:
        tmux.close()


def plain_asked(git_repo: Path, tmp_path: Path, turns: dict, message: str, question: str) -> tuple[Tmux, str]:
    """`--plain` in tmux, `message` sent, and the screen once `question` is up and takes keys."""
    tmux = Tmux(tmp_path, coder_command(script(tmp_path, turns), "--plain"), git_repo, width=120, height=40)
    try:
        tmux.wait("ask>")
        tmux.type_at_prompt(message)
        tmux.send("Enter")
        screen = tmux.wait(question, "Enter answer")
    except BaseException:
        tmux.close()
        raise
    time.sleep(0.6)  # a question takes keys once the keyboard has been quiet a moment (ARM_DELAY)
    return tmux, screen


def test_plain_asks_about_a_host_web_fetch_wants(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: in `--plain` a web_fetch of a host no list names was refused without a question ("you
    refused it when asked"): the proxy asks from its own thread, and the REPL denied every question that did not
    come from the turn's thread. It is asked now, as in the app; a Ctrl+C while it is up stops the turn and takes
    the question away, and the prompt is back."""
    load = {"tool_calls": [{"name": "tool_search", "input": {"query": "select:web_fetch"}}]}
    turns = {"turns": [load, {"text": "Fetching.", "tool_calls": [
                           {"name": "web_fetch", "input": {"url": "https://example.com/"}}]},
                       {"text": "FETCHED."},
                       {"text": "Again.", "tool_calls": [
                           {"name": "web_fetch", "input": {"url": "https://example.org/"}}]},
                       {"text": "AGAIN."}]}
    tmux, asked = plain_asked(git_repo, tmp_path, turns, "fetch it", "Allow network: example.com?")
    try:
        # the question names who may be asking (the shell and web_fetch share the proxy), not only the shell
        assert "by a command in the sandbox or by web_fetch" in " ".join(asked.split()), asked
        tmux.send("4")  # No
        screen = tmux.wait("FETCHED.", "ask>")
        assert "Esc: deny and stop the turn > No" in screen and "coder refused example.com" in screen, screen
        tmux.type_at_prompt("again")
        tmux.send("Enter")
        tmux.wait("Allow network: example.org?", "Enter answer")
        tmux.send("C-c")
        tmux.wait("no longer asked", "turn stopped: interrupted")
        quit_plain(tmux)
    finally:
        tmux.close()


def test_plain_says_the_answer_a_digit_gave(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: in `--plain`, `4` on a permission question denied the call but the question's line
    read `> Yes, this once` (the highlighted choice, not the one the digit picked)."""
    turns = {"turns": [{"text": "Touching.", "tool_calls": [{"name": "bash", "input": {"command": "touch x"}}]},
                       {"text": "LISTED."}]}
    tmux, _ = plain_asked(git_repo, tmp_path, turns, "list", "Allow bash: touch x?")
    try:
        tmux.send("4")  # No
        screen = tmux.wait("LISTED.", "ask>")
        assert "Esc: deny and stop the turn > No\n" in screen and "Yes, this once" not in screen.split("5. No")[1]
        quit_plain(tmux)
    finally:
        tmux.close()


def test_a_question_names_each_part_of_a_command_once(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: `tput cols; printf ... $(tput cols)` was asked about as "`tput cols`, `printf ...`,
    `tput cols` needs approval": a part named twice, and "needs" for several."""
    command = "tput cols; printf '%s' $(tput cols) > w.txt"
    turns = {"turns": [{"text": "Measuring.", "tool_calls": [{"name": "bash", "input": {"command": command}}]},
                       {"text": "MEASURED."}]}
    tmux, screen = plain_asked(git_repo, tmp_path, turns, "measure", "approval in ask mode")
    try:
        reason = next(line for line in screen.splitlines() if "approval in ask mode" in line)
        assert reason.count("`tput cols`") == 1 and "need approval" in reason and "needs" not in reason, reason
        tmux.send("4")
        tmux.wait("MEASURED.", "ask>")
        quit_plain(tmux)
    finally:
        tmux.close()


def test_plain_passes_on_why_a_host_was_refused(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: "No, and tell the model why" on a network question asked for the reason and dropped it
    (the model read only "you refused it when asked"), in both frontends."""
    load = {"tool_calls": [{"name": "tool_search", "input": {"query": "select:web_fetch"}}]}
    turns = {"turns": [load, {"text": "Fetching.", "tool_calls": [
                           {"name": "web_fetch", "input": {"url": "https://example.com/"}}]},
                       {"text": "FETCHED."}]}
    tmux, asked = plain_asked(git_repo, tmp_path, turns, "fetch it", "Allow network: example.com?")
    try:
        # the question names who may be asking (the shell and web_fetch share the proxy), not only the shell
        assert "by a command in the sandbox or by web_fetch" in " ".join(asked.split()), asked
        tmux.send("5")
        tmux.wait("Why? (the model hears it) >")
        tmux.type("use the local copy")
        tmux.send("Enter")
        tmux.wait("FETCHED.", "ctx ")
        quit_plain(tmux)
    finally:
        tmux.close()
    store = SessionStore(paths.sessions_db())
    try:
        row = store.latest(str(git_repo))
        assert row is not None
        fetched = [str(e.data["output"]) for e in store.events(row.id) if e.type == "tool_call_finished"
                   and e.data.get("tool") == "web_fetch"]
    finally:
        store.close()
    assert len(fetched) == 1 and "you refused it when asked, saying: use the local copy" in fetched[0], fetched
