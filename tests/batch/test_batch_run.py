"""`coder swebench run` end to end with the real headless CLI: scripted model -> prediction -> local evaluation,
resume after a kill, the whole-run cost limit (real SDK against the fake server), workers > 1, crashes isolated,
and `coder batch` on a plain issue list."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from batch_fixtures import git

from coder_testkit.fake_server import FakeServer


def coder(*args: str, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def run_args(swe, run_dir: Path, model: str, *extra: str) -> list[str]:
    return ["swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--output",
            str(run_dir), "--model", model, *extra]


def test_scripted_run_then_eval_is_resolved(swe, env_cache, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts")
    run_dir = tmp_path / "run"
    proc = coder(*run_args(swe, run_dir, f"scripted:{scripts}", "--instances", "acme__calc-1"))
    assert proc.returncode == 0, proc.stderr
    # the status line: the edit, the answer, and the answer to coder's note that no test ran (issue 49)
    assert "acme__calc-1  exit=done submitted=yes turns=4" in proc.stdout and "evidence=unverified" in proc.stdout
    preds = json.loads((run_dir / "preds.json").read_text())
    assert list(preds) == ["acme__calc-1"]
    assert preds["acme__calc-1"]["model_name_or_path"] == f"scripted:{scripts}"
    assert "+    return a + b" in preds["acme__calc-1"]["model_patch"]
    assert json.loads((run_dir / "preds.jsonl").read_text()) == preds["acme__calc-1"]
    inst = run_dir / "instances" / "acme__calc-1"
    traj = json.loads((inst / "acme__calc-1.traj.json").read_text())
    assert traj["trajectory_format"] == "mini-swe-agent-1.1" and traj["info"]["exit_status"] == "Submitted"
    assert traj["info"]["submission"] == preds["acme__calc-1"]["model_patch"]
    calls = [c["function"]["name"] for m in traj["messages"] if m["role"] == "assistant"
             for c in m.get("tool_calls", [])]
    assert calls == ["str_replace_based_edit_tool", "str_replace_based_edit_tool"]
    assert any(m["role"] == "tool" and "Edited calc.py" in m["content"] for m in traj["messages"])
    real_file = Path(__file__).with_name("data") / "mini_swe_agent_sample.traj.json"  # cut from ../shared's
    real = json.loads(real_file.read_text())  # a real mini-swe-agent trajectory: ours must have its shape
    assert set(real) <= set(traj) and set(real["info"]) - {"config"} <= set(traj["info"])
    assert set(real["info"]["model_stats"]) == set(traj["info"]["model_stats"])
    real_call = next(m for m in real["messages"] if m.get("tool_calls"))["tool_calls"][0]
    our_call = next(m for m in traj["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert {"id", "type", "function"} <= set(real_call) and {"id", "type", "function"} <= set(our_call)
    assert set(real_call["function"]) == set(our_call["function"]) == {"name", "arguments"}
    events = [json.loads(line) for line in (inst / "events.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "session_start" and events[-1]["type"] == "session_end"
    status = json.loads((inst / "status.json").read_text())
    assert status["exit_reason"] == "done" and status["turns"] == 4 and status["patch_files"] == ["calc.py"]
    assert not (run_dir / "workspaces" / "acme__calc-1").exists()  # cleaned after the patch was taken
    assert git(swe.mirror, "status", "--porcelain") == ""

    ev = coder("swebench", "eval", str(run_dir / "preds.json"), "--dataset", str(swe.dataset), "--repos-dir",
               str(swe.repos_dir), "--specs", str(swe.specs), "--cache-dir", str(env_cache))
    assert ev.returncode == 0, ev.stderr
    report = json.loads((run_dir / "eval" / "report.json").read_text())
    assert report["resolved_ids"] == ["acme__calc-1"]
    rep = coder("swebench", "report", str(run_dir))
    assert rep.returncode == 0 and "Resolve rate: 100.0%" in (run_dir / "report.md").read_text()


def test_workers_run_in_parallel_and_a_crash_loses_nothing(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts", ids=["acme__calc-1", "acme__calc-2"], extra_turns=3)
    # acme__calc-3 has no script: that instance crashes, the others must still finish with predictions
    run_dir = tmp_path / "run"
    proc = coder(*run_args(swe, run_dir, f"scripted:{scripts}", "--workers", "2"))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one crashed
    preds = json.loads((run_dir / "preds.json").read_text())
    assert sorted(preds) == ["acme__calc-1", "acme__calc-2"]
    crashed = json.loads((run_dir / "instances" / "acme__calc-3" / "status.json").read_text())
    assert crashed["state"] == "crashed" and "no script for acme__calc-3" in crashed["error"]
    spans = []
    for iid in ("acme__calc-1", "acme__calc-2"):
        st = json.loads((run_dir / "instances" / iid / "status.json").read_text())
        spans.append((st["finished_at"] - st["duration_s"], st["finished_at"]))
    (a0, a1), (b0, b1) = spans
    assert a0 < b1 and b0 < a1, f"the two instances did not overlap: {spans}"
    # resuming retries only the crashed instance
    swe.write_scripts(scripts, ids=["acme__calc-3"])
    again = coder(*run_args(swe, run_dir, f"scripted:{scripts}", "--workers", "2"))
    assert again.returncode == 0, again.stderr
    assert "acme__calc-3  exit=done" in again.stdout and "acme__calc-1  exit" not in again.stdout
    assert sorted(json.loads((run_dir / "preds.json").read_text())) == swe.ids


def test_resume_after_killing_the_run(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts", sleep={"acme__calc-2": 30})
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "coder", *run_args(swe, run_dir, f"scripted:{scripts}")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    first = run_dir / "instances" / "acme__calc-1" / "status.json"
    preds_file = run_dir / "preds.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if preds_file.exists() and "acme__calc-1" in preds_file.read_text():
            break
        time.sleep(0.02)
    busy = coder(*run_args(swe, run_dir, f"scripted:{scripts}"))
    assert busy.returncode == 2 and "in use by another" in busy.stderr  # one invocation per run directory
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run, agents included, dies at once
    proc.wait(30)
    assert first.exists()
    preds = json.loads((run_dir / "preds.json").read_text())
    assert list(preds) == ["acme__calc-1"]  # what was done before the kill is kept; calc-2 was running
    assert not (run_dir / "instances" / "acme__calc-2" / "status.json").exists()
    stamp = first.stat().st_mtime_ns

    swe.write_scripts(scripts)  # no more sleeping
    again = coder(*run_args(swe, run_dir, f"scripted:{scripts}"))
    assert again.returncode == 0, again.stderr
    assert "skipped as done" in again.stderr
    assert "acme__calc-1  exit" not in again.stdout  # not run a second time
    assert first.stat().st_mtime_ns == stamp
    preds = json.loads((run_dir / "preds.json").read_text())
    assert sorted(preds) == swe.ids and all("a + b" in p["model_patch"] for p in preds.values())

    redo = coder(*run_args(swe, run_dir, f"scripted:{scripts}", "--redo", "--instances", "acme__calc-1"))
    assert redo.returncode == 0 and "acme__calc-1  exit=done" in redo.stdout
    assert first.stat().st_mtime_ns != stamp


def test_sigterm_stops_agents_cleanly(swe, tmp_path):
    # this test's own sleep (other runs share the machine): six decimals, the last not 0, so no other's is a prefix
    seconds = float(f"600.{secrets.randbelow(90000) * 10 + 100001}")
    scripts = swe.write_scripts(tmp_path / "scripts", ids=["acme__calc-1"], sleep={"acme__calc-1": seconds})
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "coder", *run_args(swe, run_dir, f"scripted:{scripts}",
                                                                    "--instances", "acme__calc-1")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # the agent reaches its sleep: the signal comes mid-tool, every time
    while subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True).returncode != 0:
        assert proc.poll() is None and time.monotonic() < deadline, "the agent never reached its sleep"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=40)
    assert proc.returncode == 130, err
    assert "batch interrupted" in err and "Traceback" not in err
    st = json.loads((run_dir / "instances" / "acme__calc-1" / "status.json").read_text())
    assert st["state"] == "interrupted" and st["exit_reason"] == "interrupted"
    assert json.loads((run_dir / "preds.json").read_text()) == {}  # retried on resume, not a prediction


def test_total_cost_limit_stops_new_instances_and_keeps_predictions(swe, tmp_path):
    script = {"turns": [{"when": ".", "repeat": True, "text": "I looked; nothing to change."}]}
    run_dir = tmp_path / "run"
    with FakeServer(script) as srv:
        env = {"ANTHROPIC_BASE_URL": srv.base_url, "ANTHROPIC_API_KEY": "test-key"}
        proc = coder(*run_args(swe, run_dir, "anthropic:claude-sonnet-4-6", "--total-cost", "0.000001"), env=env)
    assert proc.returncode == 1, proc.stderr
    assert "--total-cost limit was reached" in proc.stderr
    preds = json.loads((run_dir / "preds.json").read_text())
    assert list(preds) == ["acme__calc-1"] and preds["acme__calc-1"]["model_patch"] == ""
    st = json.loads((run_dir / "instances" / "acme__calc-1" / "status.json").read_text())
    assert st["cost_usd"] > 0 and st["input_tokens"] + st["cache_write_tokens"] > 0
    assert not (run_dir / "instances" / "acme__calc-2").exists()
    assert list((run_dir / "workspaces").iterdir()) == []  # also the one made ahead for acme__calc-2
    # resuming with the same limit starts nothing new: the budget counts what was already spent
    again = coder(*run_args(swe, run_dir, "anthropic:claude-sonnet-4-6", "--total-cost", "0.000001"),
                  env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "x"})
    assert again.returncode == 1 and "already reached" in again.stderr


def test_issue_list_batch_in_own_repo_with_branches(tmp_path, git_repo):
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'helo ' + name\n")
    git(git_repo, "commit", "-qam", "typo")
    head = git(git_repo, "rev-parse", "HEAD").strip()
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"id": "typo-1", "title": "Greeting is misspelled", "body": "It says helo."}) + "\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "typo-1.json").write_text(json.dumps({"turns": [
        {"text": "Fixing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
            "command": "str_replace", "path": "src/app.py", "old_str": "'helo '", "new_str": "'hello '"}}]},
        {"text": "Done."}]}))
    run_dir = tmp_path / "run"
    proc = coder("batch", str(issues), "--repo", str(git_repo), "--model", f"scripted:{scripts}", "--branches",
                 "--output", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    patch = (run_dir / "patches" / "typo-1.patch").read_text()
    assert "+    return 'hello ' + name" in patch
    # the user's tree, index and branch are untouched; the fix is a new branch
    assert git(git_repo, "status", "--porcelain") == ""
    assert git(git_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(git_repo, "rev-parse", "HEAD").strip() == head
    assert "'helo '" in (git_repo / "src" / "app.py").read_text()
    assert "'hello '" in git(git_repo, "show", "coder/typo-1:src/app.py")
    assert git(git_repo, "rev-parse", "coder/typo-1~1").strip() == head


def test_turn_limit_ends_an_instance_and_keeps_its_prediction(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts", ids=["acme__calc-1"], extra_turns=3)
    run_dir = tmp_path / "run"
    proc = coder(*run_args(swe, run_dir, f"scripted:{scripts}", "--instances", "acme__calc-1", "--max-turns", "2"))
    assert proc.returncode == 0, proc.stderr
    st = json.loads((run_dir / "instances" / "acme__calc-1" / "status.json").read_text())
    assert st["exit_reason"] == "max_turns" and st["state"] == "done" and st["turns"] == 2 and not st["submitted"]
    assert json.loads((run_dir / "preds.json").read_text())["acme__calc-1"]["model_patch"] == ""
    traj = json.loads((run_dir / "instances" / "acme__calc-1" / "acme__calc-1.traj.json").read_text())
    assert traj["info"]["exit_status"] == "LimitsExceeded"


def test_agent_that_cannot_start_stops_the_run_early(swe, tmp_path):
    proc = coder(*run_args(swe, tmp_path / "run", "nosuchprovider:model"))
    assert proc.returncode == 2, proc.stderr
    assert "the agent cannot start" in proc.stderr and "Traceback" not in proc.stderr
    started = [d.name for d in (tmp_path / "run" / "instances").iterdir()]
    assert started == ["acme__calc-1"]  # not three identical failures
    assert list((tmp_path / "run" / "workspaces").iterdir()) == []  # none left, made ahead or not


def test_usage_errors_are_one_line(swe, tmp_path):
    proc = coder("swebench", "run", "--dataset", str(tmp_path / "none.jsonl"), "--model", "scripted:x",
                 "--output", str(tmp_path / "r"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    proc = coder(*run_args(swe, tmp_path / "r", "scripted:x", "--instances", "zzz"))
    assert proc.returncode == 2 and "not in the dataset: zzz" in proc.stderr
