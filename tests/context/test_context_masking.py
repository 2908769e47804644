"""Tier 2: superseded observations older than the last K turns become a one-line stub."""

from __future__ import annotations

from pathlib import Path

from context_helpers import EDITOR, HistoryBuilder, lines, result_of

from coder.context.history import observations, replace_results
from coder.context.masking import MaskTier, exit_status, keys_of, shell_keys, superseded
from coder.store.outputs import load_output


def _filler(h: HistoryBuilder, n: int) -> None:
    for i in range(n):
        h.bash(f"echo step {i}", f"step {i}")


def test_superseded_views_edits_and_reruns_are_masked_with_command_and_status(tmp_path: Path) -> None:
    h = HistoryBuilder()
    view1 = h.view("src/app.py", lines(40, "app"))
    test1 = h.bash("python -m pytest -q tests/test_app.py", lines(30, "FAILED") + "\nexit code: 1", exit_code=1)
    unique = h.bash("grep -rn greet src", lines(20, "match"))
    h.edit("src/app.py", "hello", "hi")
    test2 = h.bash("python -m pytest tests/test_app.py", lines(10, "passed"))
    h.bash("python other.py", "NameError: name 'x' is not defined", exit_code=1)  # the last failure
    _filler(h, 5)
    new = MaskTier(tmp_path, recent_turns=5, min_chars=100).run(h.messages, {})
    assert view1 in new, "a view of a file edited since is stale"
    assert test1 in new, "a test run repeated since is stale (flags like -q do not matter)"
    assert unique not in new and test2 not in new
    stub = new[test1]
    assert "python -m pytest -q tests/test_app.py" in stub and "exit 1" in stub
    assert len(stub.splitlines()) == 1
    handle = stub.split(" at ")[-1].rstrip("]")
    assert load_output(tmp_path, handle) == result_of(h.messages, test1)
    masked = replace_results(h.messages, new)
    assert [m.role for m in masked] == [m.role for m in h.messages], "pairs and roles unchanged"


def test_recent_turns_and_the_last_failure_are_never_masked(tmp_path: Path) -> None:
    h = HistoryBuilder()
    old_fail = h.bash("python repro.py", "Traceback (most recent call last):\n" + lines(20) +
                      "\nValueError: boom", exit_code=1)
    h.bash("python repro.py", "Traceback (most recent call last):\n" + lines(20) + "\nKeyError: 'x'",
           exit_code=1)
    recent_view = h.view("a.py", lines(30))
    h.view("a.py", lines(30))
    tier = MaskTier(tmp_path, recent_turns=3, min_chars=100)
    new = tier.run(h.messages, {})
    assert old_fail in new, "the earlier failing run was superseded by the rerun"
    assert recent_view not in new, "inside the last K turns"
    last_fail = observations(h.messages)[1].tool_use_id
    assert last_fail not in new
    assert MaskTier(tmp_path, recent_turns=10).run(h.messages, {}) == {}, "fewer turns than K: nothing"


def test_short_outputs_are_left_alone(tmp_path: Path) -> None:
    h = HistoryBuilder()
    h.bash("git status", "clean")
    h.bash("git status", "clean")
    _filler(h, 5)
    assert MaskTier(tmp_path, recent_turns=5, min_chars=300).run(h.messages, {}) == {}


def test_keys_of_shell_and_editor_calls() -> None:
    assert "file:src/a.py" in shell_keys("cat ./src/a.py").reads
    assert "file:a.py" in shell_keys("sed -n '10,20p' a.py").reads
    assert "file:a.py" in shell_keys("sed -i 's/x/y/' a.py").writes
    assert "file:out.txt" in shell_keys("python gen.py > out.txt 2>&1").writes
    assert not any("dev/null" in k for k in shell_keys("make 2>/dev/null").writes)
    assert shell_keys("pytest -x -q t.py").reads & shell_keys("pytest t.py -v").reads
    h = HistoryBuilder()
    h.edit("b.py", "x", "y")
    obs = observations(h.messages)[0]
    assert keys_of(obs).writes == {"file:b.py"} and obs.name == EDITOR
    h.turn(("apply_patch", {"patch": "*** Begin Patch\n*** Update File: ./src/x.py\n@@\n-a\n+b\n*** End Patch\n"},
            "Done."))
    patch = keys_of(observations(h.messages)[1])
    assert patch.writes == {"file:src/x.py"} and patch.reads == {"file:src/x.py"}


def test_superseded_and_exit_status() -> None:
    h = HistoryBuilder()
    a = h.bash("make test", "ok")
    h.bash("make test", "ok")
    assert superseded(observations(h.messages)) == {a}
    obs = observations(h.messages)[0]
    assert exit_status(obs) == "exit 0"
    obs.content = "<returncode>2</returncode>\n<output>x</output>"
    assert exit_status(obs) == "exit 2"


def test_heredoc_bodies_and_arrows_are_not_redirections() -> None:
    cmd = "cat <<'EOF' > patch.py\ndef f(x) -> Any:\n    return x >= 2 and y > z\nEOF\npython patch.py > out.log"
    assert shell_keys(cmd).writes == {"file:patch.py", "file:out.log"}
    assert shell_keys("echo hi >> notes.txt && ls 2> err.txt").writes == {"file:notes.txt", "file:err.txt"}


def test_a_script_that_exits_0_while_printing_errors_is_not_a_failure() -> None:
    from coder.context.masking import is_failure

    h = HistoryBuilder()
    h.bash("python show_errors.py", "Error: TypeError: 'OL' VR requires bytes", exit_code=0)
    h.turn(("bash", {"command": "python crash.py"}, "Traceback (most recent call last):\nValueError: x"))
    shown, crashed = observations(h.messages)
    assert not is_failure(shown) and is_failure(crashed), "no exit status stated: the traceback decides"
