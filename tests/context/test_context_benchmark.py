"""Trajectory loading (SWE-agent and mini-swe-agent formats), the replay through a real session
(benchmarks/context.py), its gate, and the in-process baselines' JSON contract (benchmarks/context_baselines.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coder.base.errors import UsageError
from coder.context.history import observations, pairing_problems, user_texts
from coder.context.replay import EDITOR, find_trajectories, load_trajectory
from coder.context.summary import HandoffFacts, render
from coder.models.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock

ROOT = Path(__file__).resolve().parents[2]
TASK = "Fix the crash in calc.py when dividing by zero. Do not change the tests."


def _obs(i: int, text: str) -> str:
    return f"<returncode>{1 if 'Error' in text else 0}</returncode>\n<output>\n{text}\n" + "pad\n" * (i * 20) + \
        "</output>"


def mini_tool_format(n: int) -> dict:
    messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": TASK}]
    for i in range(n):
        cmd = "sed -i 's/a/b/' calc.py" if i == 2 else ("python calc.py" if i % 2 else f"cat calc.py # {i}")
        messages.append({"role": "assistant", "content": f"step {i}", "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "bash",
                                                               "arguments": json.dumps({"command": cmd})}}]})
        out = "ZeroDivisionError: division by zero" if i == n - 1 else f"out {i}"
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": _obs(i, out)})
    messages.append({"role": "exit", "content": "diff --git a/calc.py b/calc.py"})
    return {"trajectory_format": "mini-swe-agent-1.1", "messages": messages, "info": {}}


def mini_text_format(n: int) -> list:
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Please solve this issue: " + TASK}]
    for i in range(n):
        messages.append({"role": "assistant", "content": f"THOUGHT {i}\n\n```mswea_bash_command\ncat calc.py\n```"})
        messages.append({"role": "user", "content": _obs(i, f"content {i}")})
    return messages


def sweagent(n: int) -> dict:
    history = [{"role": "system", "content": "SETTING: you are an autonomous programmer."},
               {"role": "user", "content": "ISSUE:\n" + TASK}]
    actions = ["open calc.py", "goto 20", "edit 3:3\n    return a / b if b else 0\nend_of_edit", "python calc.py"]
    for i in range(n):
        action = actions[i % len(actions)]
        history.append({"role": "assistant", "content": f"thinking {i}\n```\n{action}\n```", "thought": f"thinking {i}",
                        "action": action})
        history.append({"role": "user", "content": f"[File: calc.py]\n{i}: code\n" + "x = 1\n" * (i * 10)})
    return {"history": history, "trajectory": [], "info": {}}


@pytest.fixture
def traj_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "trajs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.traj.json").write_text(json.dumps(mini_tool_format(30)))
    (folder / "sub" / "b.traj.json").write_text(json.dumps(mini_text_format(12)))
    (folder / "c.traj").write_text(json.dumps(sweagent(24)))
    (folder / "notes.txt").write_text("not a trajectory")
    return folder


def test_all_formats_load_as_valid_histories(traj_dir: Path) -> None:
    files = find_trajectories([traj_dir])
    assert [p.name for p in files] == ["a.traj.json", "c.traj", "b.traj.json"]
    for path in files:
        replay = load_trajectory(path)
        assert replay.system and replay.messages[0].role == "user"
        assert pairing_problems(replay.messages) == []
        assert TASK in user_texts(replay.messages)[0]
    swe = load_trajectory(traj_dir / "c.traj")
    calls = observations(swe.messages)
    assert calls[0].name == EDITOR and calls[0].input == {"command": "view", "path": "calc.py"}
    assert calls[2].input["command"] == "str_replace" and calls[2].input["path"] == "calc.py"
    mini = load_trajectory(traj_dir / "a.traj.json")
    assert observations(mini.messages)[2].input == {"command": "sed -i 's/a/b/' calc.py"}


def test_unknown_files_are_usage_errors(tmp_path: Path) -> None:
    bad = tmp_path / "x.traj"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(UsageError, match="not a SWE-agent"):
        load_trajectory(bad)
    with pytest.raises(UsageError, match="no such"):
        find_trajectories([tmp_path / "missing"])


def test_replay_through_a_session_prices_every_request_and_gates(tmp_path: Path) -> None:
    """One trajectory through a real coder session against the fake server, compacting often: every request is
    recorded and priced, the task is in every one, every turn ends, and the gate holds the recorded figure."""
    traj = tmp_path / "one.traj.json"
    traj.write_text(json.dumps(mini_tool_format(44)))
    gate_file = tmp_path / "gate.json"
    bench = [sys.executable, str(ROOT / "benchmarks" / "context.py"), "--context", "compact_at=2500",
             "--gate-file", str(gate_file), str(traj)]
    first = subprocess.run([*bench, "--quick", "--record", "--json"], capture_output=True, text=True, timeout=600,
                           check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads(first.stdout)["this checkout"]
    total, run = report["total"], report["trajectories"][0]
    assert run["requests"] == 45 == run["ours"]["requests"], "one request per model turn, and the final answer"
    assert run["ours"]["summary_requests"] >= 1 and total["summaries"] == run["ours"]["summary_requests"]
    assert total["task_in_every_request"] and total["all_turns_done"] and total["mismatched_calls"] == 0
    assert run["ours"]["peak_tokens"] < run["raw"]["peak_tokens"], "compaction kept the context smaller"
    parts = run["ours"]["parts"]
    assert abs(sum(p["usd"] for p in parts.values()) + run["ours"]["summary_cost_usd"]
               - run["ours"]["cost_usd"]) < 1e-4, "the parts add up to the cost"
    recorded = json.loads(gate_file.read_text())
    assert recorded["ours_cost_usd"] == total["ours_cost_usd"] and "PASS" in first.stderr
    recorded["ours_cost_usd"] = round(total["ours_cost_usd"] / 1.05, 5)  # the cost now 5% over the record
    gate_file.write_text(json.dumps(recorded))
    second = subprocess.run([*bench, "--quick"], capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 1 and "FAIL" in second.stdout, second.stdout[-2000:]


def _benchmark_module(name: str):  # noqa: ANN202 - a module of benchmarks/, imported by path
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_stand_in_handoff_summarises_what_the_model_is_asked_to() -> None:
    """The narrative rule counts the turns (a tool call by its input, which the model wrote) and a previous
    handoff's narrative, not the task, the user's messages, a handoff's verbatim sections or the instruction: the
    compaction prompt tells the model the system copies those. The rounds 1-3 rule counts every text and result,
    40 characters for a call."""
    session = _benchmark_module("context_session")
    handoff = render(HandoffFacts(task="", files_touched=["a.py"], last_error="`x` (exit 1):\n" + "E" * 500),
                     "N" * 300, 4)
    call = {"command": "cat > a.py <<'EOF'\n" + "y = 1\n" * 50 + "EOF"}
    messages = [Message("user", [TextBlock(TASK)]), Message("assistant", [TextBlock("[compacted]")]),
                Message("user", [TextBlock(handoff)]),
                Message("assistant", [TextBlock("write it"), ToolUseBlock("c1", "bash", call)]),
                Message("user", [ToolResultBlock("c1", "R" * 200), TextBlock("the instruction " * 40)])]
    request = ModelRequest("system", messages, [])
    narrative = session.summarised_chars(request, {TASK}, "narrative")
    assert narrative == len("[compacted]") + 300 + len("write it") + len(json.dumps(call)) + 200
    old = session.summarised_chars(request, {TASK}, "all")
    assert old == len(TASK) + len("[compacted]") + len(handoff) + len("write it") + 40 + 200 + 16 * 40


def test_the_gate_compares_figures_of_one_stand_in_rule_and_holds_recall(tmp_path: Path) -> None:
    bench = _benchmark_module("context")
    gate_file = tmp_path / "gate.json"
    knows = {"recall": {"nothing": 0.9}, "recall_read": {"nothing": 0.97}, "lost_step_share": {"nothing": 0.02}}
    total = {"ours_cost_usd": 1.0, "cost_ratio": 0.7, "task_in_every_request": True, "all_turns_done": True,
             "recall": knows}
    recorded = {"ours_cost_usd": 1.0, "cost_ratio": 0.7, "recall": 0.9, "recall_read": 0.97, "lost_step_share": 0.02}
    gate_file.write_text(json.dumps(recorded))  # no stand_in: recorded before round 4, by rule "all"
    assert bench.gate(total, gate_file, "all")[0]
    ok, line = bench.gate(total, gate_file, "narrative")
    assert not ok and "--stand-in all" in line
    for key, better in (("recall", 0.92), ("recall_read", 0.99), ("lost_step_share", 0.0)):  # this run 0.02 worse
        gate_file.write_text(json.dumps({**recorded, key: better}))
        ok, line = bench.gate(total, gate_file, "all")
        assert not ok and "FAIL" in line, key
    gate_file.write_text(json.dumps({"ours_cost_usd": 1.0, "cost_ratio": 0.7}))
    ok, line = bench.gate(total, gate_file, "all")
    assert not ok and "no recorded recall" in line


def test_benchmark_json_total_holds_the_ratios(traj_dir: Path) -> None:
    bench = str(ROOT / "benchmarks" / "context_baselines.py")
    proc = subprocess.run(check=False, args=[sys.executable, bench, "--json", "--compact-at",
                           "1500", "--recent-turns", "2", str(traj_dir)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    total = data["total"]
    for key in ("cost_ratio_vs_raw", "cost_ratio_vs_masking", "peak_ratio_vs_raw", "retention"):
        assert 0 < total[key] <= 1.5, key
    assert total["retention"] == 1.0
    assert total["ours"]["peak_tokens_sum"] < total["raw"]["peak_tokens_sum"], "compaction lowered the peak"
    assert len(data["trajectories"]) == 3
    first = data["trajectories"][0]
    assert first["ours"]["retention"]["checks"] >= 3 and first["ours"]["compactions"]
    table = subprocess.run(check=False, args=[sys.executable, bench, "--quick", str(traj_dir)],
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0 and "| **total** |" in table.stdout and "cost vs raw" in table.stdout
    missing = subprocess.run(check=False, args=[sys.executable, bench, str(traj_dir / "nope")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no such trajectory" in missing.stderr
