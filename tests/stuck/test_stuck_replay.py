"""The stuck detector on real trajectories (trimmed copies in data/, cut from the shared data; see data/README.md)
and on the shell commands it has to read. The same guard a headless session uses, mode "stop"."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.check import fields_of
from coder.config.layers import settings
from coder.config.stuck import StuckSettings
from coder.stuck.detector import DEFAULT_THRESHOLDS, load_thresholds
from coder.stuck.guard import StuckGuard
from coder.stuck.replay import Run, load_runs
from coder.stuck.signals import call_from_event, error_signature
from coder.tools.registry import builtin_by_protocol, describe

DATA = Path(__file__).with_name("data")
REPO = Path(__file__).resolve().parents[2]


def replay(run: Run) -> list[tuple[int, str, str]]:
    guard = StuckGuard(load_thresholds(), mode="stop")
    fired = []
    for number, step in enumerate(run.steps, 1):
        for event in step.events:
            guard.observe(event)
        verdict = guard.after_step()
        fired += [(number, e.pattern, e.action) for e in verdict.events]
        if verdict.stop:
            break
    return fired


def runs() -> dict[str, Run]:
    return {r.name.split("/")[-1]: r for r in load_runs(DATA)}


def test_formats_become_steps_with_outcomes() -> None:
    found = runs()
    assert sorted(found) == ["github_issue.traj.json", "interactions_20251201_105508.jsonl#1",
                             "marshmallow-1343.traj.json"]
    mm = found["marshmallow-1343.traj.json"]
    assert mm.resolved is True and len(mm.steps) == 36 and mm.tokens > 1_000_000
    first = mm.steps[0].events[1]
    assert first.tool == "bash" and first.data == {"exit_code": 0} and "pytest" in first.input["command"]
    assert found["github_issue.traj.json"].resolved is None and len(found["github_issue.traj.json"].steps) == 10
    log = found["interactions_20251201_105508.jsonl#1"]
    assert len(log.steps) == 27 and log.steps[12].events[1].input == {"command": "cat reproduce_issue.py"}


def test_resolved_run_that_flails_is_neither_stopped_nor_nudged() -> None:
    """marshmallow-1343 ended resolved after reverting and re-applying the same sed edit four times: that peak
    (4 returns to an earlier state) is what ping_pong's threshold was tuned above."""
    assert replay(runs()["marshmallow-1343.traj.json"]) == []


def test_agent_rereading_one_file_is_nudged_twice_then_stopped() -> None:
    """The SWE-agent log's model printed reproduce_issue.py eleven times without changing anything."""
    fired = replay(runs()["interactions_20251201_105508.jsonl#1"])
    assert fired == [(13, "repeat", "nudge"), (16, "repeat", "nudge"), (20, "repeat", "stop")]


def test_benchmark_reports_on_the_test_data(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import stuck as bench  # benchmarks/stuck.py
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    out = tmp_path / "stuck.md"
    assert bench.main(["--data", str(DATA), "--out", str(out)]) == 0  # 1 would mean a resolved run stopped
    text = out.read_text()
    assert "| all | 3 | **0** | 0 | 0 | 1 | 2 | 7 |" in text
    assert "| interactions_20251201_105508.jsonl#1 |  | unknown | 27 |" in text and "20:repeat" in text


def call(command: str, output: str = "", code: int = 0):
    shell = builtin_by_protocol("bash_")
    args = {"command": command}
    return call_from_event(shell, args, output, False, [], {"exit_code": code}, describe(shell, args))


def test_shell_commands_write_and_wait() -> None:
    edit = call("cd /testbed && sed -i 's/a/b/' src/pkg/mod.py")
    assert edit.wrote and edit.writes == {"src/pkg/mod.py"} and edit.transitions
    assert not call("cat src/pkg/mod.py").wrote and not call("sed -n '10,40p' src/pkg/mod.py").wrote
    assert not call("python run.py > /dev/null 2>&1").wrote
    assert call("cat > t.py <<'EOF'\nprint(1)\nEOF\npython t.py", "boom", 1).wrote  # wrote, then failed
    assert call("sleep 2; curl -s localhost:8000").waits and not call("curl -s localhost:8000").waits
    failed = call("python t.py", "Traceback (most recent call last):\n  File \"t.py\", line 12\nKeyError: 'x'", 1)
    assert failed.failed and failed.error == "KeyError: 'x'"
    assert error_signature("E   assert 3 == 4\nFAILED t.py::test_a - in 0.12s") == \
        error_signature("E   assert 5 == 4\nFAILED t.py::test_a - in 0.31s")


def test_thresholds_are_data_and_config_overrides_are_checked() -> None:
    shipped = load_thresholds()
    assert shipped.of("ping_pong", "nudge_at") == 5 and shipped.nudges_before_stop == 2
    tuned = load_thresholds(stuck({"repeat": {"nudge_at": 6}, "nudges_before_stop": 0,
                                   "same_text": {"enabled": False}}))
    assert tuned.of("repeat", "nudge_at") == 6 and tuned.nudges_before_stop == 0 and not tuned.enabled("same_text")
    assert tuned.of("ping_pong", "nudge_at") == 5  # what is not set stays as shipped
    with pytest.raises(ConfigError, match=r"\[stuck.repeat\] nudge: unknown key \(did you mean nudge_at\?"):
        stuck({"repeat": {"nudge": 2}})
    with pytest.raises(ConfigError, match=r"\[stuck\] loops: unknown key"):
        stuck({"loops": 1})
    with pytest.raises(ConfigError, match=r"\[stuck.same_error\] wait_factor: unknown key"):  # repeat's only
        stuck({"same_error": {"wait_factor": 2}})
    with pytest.raises(ConfigError, match=r"\[stuck\] interactive = \"ask\": expected one of"):
        stuck({"interactive": "ask"})
    assert StuckGuard.from_config(stuck({"enabled": False}), headless=True).mode == "off"
    assert StuckGuard.from_config(stuck({}), headless=True).mode == "stop"
    assert StuckGuard.from_config(stuck({"interactive": "stop"}), headless=False).mode == "stop"


def stuck(table: dict) -> StuckSettings:
    return settings({"stuck": table}).stuck


def test_the_declared_thresholds_are_those_of_thresholds_json() -> None:
    """Each `[stuck.PATTERN]` table declares exactly the keys the shipped pattern has (plus `enabled`)."""
    shipped = json.loads(DEFAULT_THRESHOLDS.read_text())["patterns"]
    declared = {name: type(getattr(StuckSettings(), name)) for name in shipped}
    for name, cls in declared.items():
        assert set(fields_of(cls)) == {k for k in shipped[name] if k != "about"} | {"enabled"}, name
