"""Where Claude Code's hooks meet the rest of coder: trust that follows the scripts a hook names, the sandbox a
repository's hooks run in, the stuck detector and the limits under a Stop hook that never lets go, PreCompact on
both kinds of compaction, and `coder run --output-format stream-json` with hooks at work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from claude_support import hook, open_on, texts_sent, write_json, write_script

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.engine.builder import SessionOptions, open_session
from coder.trust import decisions
from coder.trust.reader import inspect

REPO = Path(__file__).resolve().parents[2]
LOG_STDIN = 'cat >> "$CLAUDE_PROJECT_DIR"/{}.log; echo >> "$CLAUDE_PROJECT_DIR"/{}.log'


def logged(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_a_changed_hook_script_asks_for_trust_again(git_repo: Path, tmp_path: Path) -> None:
    """The trust fingerprint covers the script a hook's command names: after `coder trust`, the hook runs; once
    the script changes (as the sandboxed model could change it), the stored trust no longer holds and nothing of
    the repository runs until the user looks again."""
    script = git_repo / ".claude" / "hooks" / "start.sh"
    script.parent.mkdir(parents=True)
    script.write_text('touch "$CLAUDE_PROJECT_DIR"/started\n')
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [hook('sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/start.sh')]}})
    decisions.grant(inspect(git_repo))
    turns = [{"text": "ok"}]
    opened, _ = open_on(git_repo, write_script(tmp_path / "s.json", turns), trust=None)
    opened.finish("done")
    assert (git_repo / "started").exists()  # the control: trusted as it is, the hook runs
    (git_repo / "started").unlink()
    script.write_text('touch "$CLAUDE_PROJECT_DIR"/started; touch "$CLAUDE_PROJECT_DIR"/planted\n')
    opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", turns), trust=None)
    opened.finish("done")
    assert not (git_repo / "started").exists() and not (git_repo / "planted").exists()
    assert any("changed since you trusted it" in e.message for e in seen if isinstance(e, ev.ErrorEvent))


def test_a_trusted_repository_hook_runs_in_the_sandbox(git_repo: Path, tmp_path: Path) -> None:
    """A trusted repository's hook writes in the workspace but not outside it nor in the home folder; the same
    command as the user's own hook (the control) runs on the host and does."""
    outside = tmp_path / "outside"
    outside.mkdir()
    plant = (f'touch "$CLAUDE_PROJECT_DIR"/inside-{{0}}; touch {outside}/escaped-{{0}}; '
             f'touch "$HOME"/escaped-{{0}}; true')
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {"SessionStart": [hook(plant.format("repo"))]}})
    write_json(Path.home() / ".claude" / "settings.json", {"hooks": {"SessionStart": [hook(plant.format("user"))]}})
    opened, _ = open_on(git_repo, write_script(tmp_path / "s.json", [{"text": "ok"}]))
    opened.finish("done")
    assert (git_repo / "inside-repo").exists() and (git_repo / "inside-user").exists()
    assert not (outside / "escaped-repo").exists() and not (Path.home() / "escaped-repo").exists()
    assert (outside / "escaped-user").exists() and (Path.home() / "escaped-user").exists()


def test_a_user_hook_that_runs_a_workspace_script_runs_in_the_sandbox(git_repo: Path, tmp_path: Path) -> None:
    """Issue 29's rule for every host hook: the user's hook that runs a script of the workspace (which the
    sandboxed model can rewrite) runs in the sandbox, and says so; the same script named outside the workspace
    (the control) runs on the host."""
    outside = tmp_path / "outside"
    outside.mkdir()
    body = f'touch {outside}/escaped-$1\n'
    (git_repo / "check.sh").write_text(body)
    (tmp_path / "check.sh").write_text(body)
    write_json(Path.home() / ".claude" / "settings.json", {"hooks": {"SessionStart": [
        hook('sh "$CLAUDE_PROJECT_DIR"/check.sh workspace'), hook(f"sh {tmp_path}/check.sh home")]}})
    opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", [{"text": "ok"}]))
    opened.finish("done")
    assert (outside / "escaped-home").exists() and not (outside / "escaped-workspace").exists()
    assert any("check.sh" in e.message and "runs in the sandbox" in e.message
               for e in seen if isinstance(e, ev.ErrorEvent))


NEVER_LET_GO = """import json, sys
call = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(call["stop_hook_active"]) + "\\n")
print(json.dumps({"decision": "block", "reason": "Not yet: check the release notes once more."}))
"""


def test_a_stop_hook_that_never_lets_go_meets_the_stuck_detector_and_the_limits(git_repo: Path,
                                                                                 tmp_path: Path) -> None:
    """A Stop hook that ignores `stop_hook_active` and blocks every stop, while the model says the same thing:
    each blocked stop is a step the stuck detector counts, so the headless run is nudged, then stopped as stuck
    (not looped until the budget runs out); with a lower turn limit, the limit ends it first."""
    hook_log = tmp_path / "stop.log"
    script = tmp_path / "never.py"
    script.write_text(NEVER_LET_GO)
    write_json(Path.home() / ".claude" / "settings.json", {"hooks": {"Stop": [hook(f"python3 {script} {hook_log}")]}})
    same = {"text": "I checked everything and the work is complete."}
    opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", [same] * 20))
    outcome = opened.session.send("finish the release")
    opened.finish(outcome.reason)
    assert outcome.reason == "stuck", outcome
    stuck = [e for e in seen if isinstance(e, ev.StuckEvent)]
    assert [e.action for e in stuck][-1] == "stop" and {e.pattern for e in stuck} == {"same_text"}
    assert any(e.action == "nudge" for e in stuck)
    nudged = [t for t in texts_sent(opened) if t.startswith("[Stop hook]") and "you may be stuck" in t]
    assert nudged and "Not yet: check the release notes once more." in nudged[0]
    active = [json.loads(line) for line in hook_log.read_text().splitlines()]
    assert active[0] is False and all(active[1:]) and len(active) < 20
    # the turn limit holds under the same hook
    hook_log.unlink()
    seen2: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=git_repo, model=write_script(tmp_path / "s.json", [same] * 20),
                                         permission_mode="auto", trust=True, max_turns=2), seen2.append)
    outcome = opened.session.send("finish the release")
    opened.finish(outcome.reason)
    assert outcome.reason == "max_turns" and len(hook_log.read_text().splitlines()) == 2


def test_pre_compact_runs_on_slash_compact_with_its_instructions(git_repo: Path, tmp_path: Path) -> None:
    """`/compact keep the API` fires PreCompact with trigger `manual` and the instructions, before the summary;
    a matcher `auto` hook does not run for it."""
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {"PreCompact": [
        hook(LOG_STDIN.format("manual", "manual"), matcher="manual"),
        hook(LOG_STDIN.format("auto", "auto"), matcher="auto")]}})
    turns = [{"text": f"answer {n} " + "words " * 200} for n in range(3)] + [{"text": "## Summary\nall of it"}]
    opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", turns))
    for text in ("first", "second", "third"):
        opened.session.send(text)
    result = run_slash(opened, "/compact keep the API")
    opened.finish("done")
    assert not result.error and "Nothing needed" not in result.text, result.text
    calls = logged(git_repo / "manual.log")
    assert len(calls) == 1 and calls[0]["hook_event_name"] == "PreCompact"
    assert calls[0]["trigger"] == "manual" and calls[0]["custom_instructions"] == "keep the API"
    assert not (git_repo / "auto.log").exists()
    assert any(isinstance(e, ev.CompactionEvent) and e.kind == "summary" for e in seen)


def test_stream_json_shows_the_hooks_at_work(git_repo: Path, tmp_path: Path) -> None:
    """`coder run --output-format stream-json`: a hook's denial, its added context and a prompt a hook refused are
    events a script reading the stream sees, and a refused prompt ends the run with exit reason `hook`."""
    deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                              "permissionDecisionReason": "no network tools here"}})
    refuse = json.dumps({"decision": "block", "reason": "no deploys from an agent"})
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {
        "PreToolUse": [hook(f"grep -q curl && echo '{deny}' || true", matcher="Bash")],
        "UserPromptSubmit": [hook(f"grep -q deploy && echo '{refuse}' || echo 'CI runs on every push.'")]}})
    script = write_script(tmp_path / "s.json", [{"tool_calls": [{"name": "bash", "input": {"command": "curl x"}}]},
                                                {"text": "done"}])

    def stream(prompt: str) -> tuple[int, list[dict]]:
        done = subprocess.run([sys.executable, "-m", "coder", "run", "--model", script, "--trust", "--output-format",
                               "stream-json", prompt], cwd=git_repo, capture_output=True, text=True, timeout=240,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL)
        return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]

    code, lines = stream("fetch the page")
    assert code == 0 and lines[-1]["exit_reason"] == "done"
    context = [e for e in lines if e["type"] == "hook_context"]
    assert context == [{"type": "hook_context", "event": "UserPromptSubmit", "text": "CI runs on every push.",
                        **{k: v for k, v in context[0].items() if k not in ("type", "event", "text")}}]
    denied = [e for e in lines if e["type"] == "tool_call_denied"]
    assert len(denied) == 1 and denied[0]["by"] == "hook" and denied[0]["reason"] == "no network tools here"
    code, lines = stream("deploy to production")
    assert code == 1 and lines[-1]["exit_reason"] == "hook" and lines[-1]["error"] == "no deploys from an agent"
    assert not [e for e in lines if e["type"] in ("usage", "tool_call_requested")]


def test_a_hook_that_writes_a_log_keeps_the_trust(git_repo: Path, tmp_path: Path) -> None:
    """Issue 47: a hook `echo hook-ran >> hook.log` made coder fingerprint `hook.log`, which the hook itself then
    changed, so every session asked for trust again (and `coder run` dropped the hooks). What a hook writes or reads
    is data; what it runs is fingerprinted: the script of the second hook (the control) still is."""
    script = git_repo / "scripts" / "check.sh"
    script.parent.mkdir()
    script.write_text('echo checked >> "$CLAUDE_PROJECT_DIR"/check.log\n')
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [hook("echo hook-ran >> hook.log"), hook('sh "$CLAUDE_PROJECT_DIR"/scripts/check.sh 2>&1')],
        "PostToolUse": [hook('echo "$(date) used a tool" >> "$CLAUDE_PROJECT_DIR"/hook.log; cat hook.log > /dev/null',
                             matcher="*")]}})
    (git_repo / "hook.log").write_text("an old line\n")  # the log exists before the trust, too
    request = inspect(git_repo)
    hooks = [w for w in request.wanted if w.kind == "hook"]
    assert [w.runs for w in hooks] == [(), ("scripts/check.sh",), ()], hooks
    decisions.grant(request)
    turns = [{"text": "looking", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]}, {"text": "ok"}]
    for _ in range(2):  # two sessions: the second finds the repository trusted as the first left it
        opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", turns), trust=None)
        opened.session.send("look")
        opened.finish("done")
        assert opened.config.trusted and not any("not trusted" in getattr(e, "message", "") for e in seen)
    assert (git_repo / "hook.log").read_text().count("hook-ran") == 2
    assert (git_repo / "hook.log").read_text().count("used a tool") == 2
    assert (git_repo / "check.log").read_text().count("checked") == 2
    assert decisions.is_trusted(git_repo)
    script.write_text('echo checked; touch "$CLAUDE_PROJECT_DIR"/planted\n')  # what runs changed: ask again
    assert not decisions.is_trusted(git_repo)


def test_a_server_is_fingerprinted_by_its_script_not_its_data(git_repo: Path) -> None:
    """The same for an MCP server: `python3 server.py --db data.sqlite` runs server.py; the database it writes
    is data, and a change to it keeps the trust."""
    (git_repo / "server.py").write_text("print('a server')\n")
    (git_repo / "data.sqlite").write_bytes(b"SQLite format 3\0")
    write_json(git_repo / ".mcp.json", {"mcpServers": {"db": {"command": "python3", "args": [
        "server.py", "--db", "data.sqlite"]}}})
    request = inspect(git_repo)
    assert [w.runs for w in request.wanted if w.kind == "mcp server"] == [("server.py",)]
    decisions.grant(request)
    (git_repo / "data.sqlite").write_bytes(b"SQLite format 3\0 and a row")
    assert decisions.is_trusted(git_repo)
    (git_repo / "server.py").write_text("print('another server')\n")
    assert not decisions.is_trusted(git_repo)


def test_headless_says_in_its_result_what_an_untrusted_repository_loses(git_repo: Path, tmp_path: Path) -> None:
    """`coder run` never asks: an untrusted repository's hooks and agents are dropped, and the run says so on
    stderr and in the JSON result's `notices` (a script reading only the JSON learned nothing)."""
    write_json(git_repo / ".claude" / "settings.json", {"hooks": {"SessionStart": [hook("echo ran >> hook.log")]}})
    agent = git_repo / ".claude" / "agents" / "rev.md"
    agent.parent.mkdir()
    agent.write_text("---\nname: rev\ndescription: reviews\n---\nYou review.\n")
    script = tmp_path / "hello.json"
    script.write_text(json.dumps({"turns": [{"text": "hi"}]}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}", "--output-format",
                           "json", "say hi"], cwd=git_repo, env=env, capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout.splitlines()[-1])
    said = " ".join(result["notices"])
    assert "not trusted" in said and "hook SessionStart: echo ran >> hook.log" in said and "agent rev" in said
    assert "coder trust" in said and "not trusted" in done.stderr
    assert not (git_repo / "hook.log").exists()
