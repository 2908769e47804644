"""OpenTelemetry export end to end: `coder run` on a scripted session, with the standard OTEL_* variables pointing
at an OTLP/HTTP receiver the test starts on loopback (otlp_receiver.py: opentelemetry-proto's protobuf classes;
the Collector binary cannot be installed here). The receiver gets the session, turn, model request and tool spans
with tokens, cost and outcomes, and the metrics; never the prompt unless the user turns that on; nothing at all
when telemetry is off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import OTLPReceiver

from coder.base.errors import ConfigError
from coder.config.layers import load_config

REPO = Path(__file__).resolve().parents[2]
PROMPT = "list the files, my secret word is marmalade"
TURNS = [{"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
         {"tool_calls": [{"name": "bash", "input": {"command": "rm -rf /tmp/x"}}]},
         {"text": "Here they are."}]


def run(git_repo: Path, script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}", "--deny",
                           "bash(rm*)", "--permission-mode", "auto", "--output-format", "json", PROMPT],
                          cwd=git_repo, env=full,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)


def otel_env(endpoint: str, **extra: str) -> dict[str, str]:
    return {"CODER_ENABLE_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "coder-test",
            "OTEL_RESOURCE_ATTRIBUTES": "team=platform", **extra}


def last_sum(points: list[Any]) -> float:
    """A cumulative counter's total: the last export's data points added up."""
    return sum(p.as_double or p.as_int for p in points[-1].sum.data_points)


def test_a_scripted_session_reaches_the_collector(git_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": TURNS}))
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[providers.scripted]\nprice_as = "claude-sonnet-4-5"\n')  # a cost that is not zero
    with OTLPReceiver() as receiver:
        done = run(git_repo, script, otel_env(receiver.endpoint))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    spans = receiver.received.spans
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span["name"].split(" ")[0], []).append(span)
    session, turn = by_name["coder.session"][0], by_name["coder.turn"][0]
    assert len(by_name["coder.session"]) == 1 and len(by_name["coder.turn"]) == 1
    assert session["parent"] == "" and turn["parent"] == session["span_id"]
    assert {s["trace_id"] for s in spans} == {session["trace_id"]}
    assert session["attributes"]["coder.model"].startswith("scripted:")
    assert session["attributes"]["coder.turns"] == 3
    chats = by_name["chat"]
    assert len(chats) == 3 and all(c["parent"] == turn["span_id"] for c in chats)
    assert all(c["attributes"]["gen_ai.usage.input_tokens"] + c["attributes"]["coder.usage.cache_read_tokens"]
               + c["attributes"]["coder.usage.cache_write_tokens"] > 0 for c in chats)
    assert all("gen_ai.usage.output_tokens" in c["attributes"] and "coder.cost_usd" in c["attributes"] for c in chats)
    cost = sum(c["attributes"]["coder.cost_usd"] for c in chats)  # what the run reports is what the spans say
    # each chat's cost and the total are rounded to the micro-dollar (UsageEvent): their sum may differ by 1e-6 each
    assert result["cost_usd"] > 0 and abs(cost - result["cost_usd"]) <= 1e-6 * len(chats) + 1e-12
    assert abs(session["attributes"]["coder.cost_usd"] - result["cost_usd"]) < 1e-6
    output = sum(c["attributes"]["gen_ai.usage.output_tokens"] for c in chats)
    assert output == result["usage"]["output_tokens"]
    tools = sorted(by_name["tool"], key=lambda s: s["start"])
    assert [t["attributes"]["coder.tool.outcome"] for t in tools] == ["ok", "denied"]
    assert tools[1]["attributes"]["coder.tool.denied_by"] == "policy" and tools[1]["status"] == 2  # ERROR
    assert all(t["parent"] == turn["span_id"] and t["end"] >= t["start"] for t in tools)
    assert turn["attributes"]["coder.turn.reason"] == "done" and turn["attributes"]["coder.turn.requests"] == 3
    assert turn["attributes"]["coder.prompt.length"] == len(PROMPT)
    everything = json.dumps(spans)
    assert "marmalade" not in everything and "rm -rf" not in everything  # no prompt, no tool input by default
    resource = receiver.received.resources[0]
    assert resource["service.name"] == "coder-test" and resource["team"] == "platform"
    metrics = receiver.received.metrics
    assert {"coder.session.count", "coder.token.usage", "coder.cost.usage", "coder.tool.calls",
            "coder.tool.duration"} <= set(metrics)
    assert abs(last_sum(metrics["coder.cost.usage"]) - result["cost_usd"]) <= 1e-6 * len(chats) + 1e-12  # rounded


def test_prompts_only_when_the_user_turns_them_on_and_nothing_when_off(git_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": TURNS}))
    with OTLPReceiver() as receiver:
        done = run(git_repo, script, otel_env(receiver.endpoint, OTEL_LOG_USER_PROMPTS="1"))
        assert done.returncode == 0, done.stderr
        turn = next(s for s in receiver.received.spans if s["name"] == "coder.turn")
        assert turn["attributes"]["coder.prompt"] == PROMPT
        off = run(git_repo, script, {**otel_env(receiver.endpoint), "CODER_ENABLE_TELEMETRY": "0"})
        assert off.returncode == 0
    assert len([s for s in receiver.received.spans if s["name"] == "coder.session"]) == 1  # the first run's


def test_settings_come_from_the_user_never_the_repository(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[telemetry]` in the typed config: off by default, on from the user's file or CODER_ENABLE_TELEMETRY (which
    also turns it off), never from a repository's config even when trusted; a wrong value is a ConfigError."""
    assert load_config(git_repo).telemetry.enabled is False
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[telemetry]\nenabled = true\n")
    assert load_config(git_repo).telemetry.enabled is True
    monkeypatch.setenv("CODER_ENABLE_TELEMETRY", "0")
    assert load_config(git_repo).telemetry.enabled is False
    monkeypatch.setenv("CODER_ENABLE_TELEMETRY", "maybe")
    with pytest.raises(ConfigError, match="CODER_ENABLE_TELEMETRY"):
        load_config(git_repo)
    monkeypatch.delenv("CODER_ENABLE_TELEMETRY")
    user.write_text("")
    monkeypatch.setenv("OTEL_LOG_USER_PROMPTS", "1")
    assert load_config(git_repo).telemetry.log_prompts is True
    monkeypatch.delenv("OTEL_LOG_USER_PROMPTS")
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "config.toml").write_text("[telemetry]\nenabled = true\nlog_prompts = true\n")
    config = load_config(git_repo, trusted=True)
    assert config.telemetry.enabled is False and config.telemetry.log_prompts is False
    assert any("telemetry" in line for line in config.ignored), config.ignored
    user.write_text('[telemetry]\nenabled = "yes"\n')
    with pytest.raises(ConfigError, match="enabled"):
        load_config(git_repo)


def test_version_does_not_load_the_sdk() -> None:
    code = ("import sys, runpy; sys.argv = ['coder', '--version']\n"
            "try:\n    runpy.run_module('coder', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO),
                                                             "CODER_ENABLE_TELEMETRY": "1"},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().endswith("[]"), done.stdout + done.stderr
