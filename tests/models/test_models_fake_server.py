"""The fake server against the real anthropic SDK: JSON, SSE streaming, tool use, thinking, caching counts,
count_tokens, the request checks, recording, faults and the command line."""
# ruff: noqa: F811  (pytest fixtures imported from models_support are parameters here)

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import pytest
from models_support import fake, script_file  # noqa: F401 (fixtures; see models_support.py)

from coder.base.errors import UsageError
from coder_testkit.fake_server import FakeServer, parse_fault

MODEL = "claude-sonnet-4-6"
SYSTEM = [{"type": "text", "text": "You are a careful coding agent. " * 20, "cache_control": {"type": "ephemeral"}}]


def client(server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_plain_json_message(fake: FakeServer) -> None:
    message = client(fake).messages.create(model=MODEL, max_tokens=256,
                                           messages=[{"role": "user", "content": "list files"}])
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text" and message.content[0].text == "Let me look at the files."
    tool = message.content[1]
    assert tool.type == "tool_use" and tool.name == "bash" and tool.input == {"command": "ls -la"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_streaming_events_follow_the_real_api(fake: FakeServer) -> None:
    kinds: list[str] = []
    texts: list[str] = []
    with client(fake).messages.stream(model=MODEL, max_tokens=256,
                                      messages=[{"role": "user", "content": "go"}]) as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "text":
                texts.append(event.text)
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "input_json" in kinds and "message_delta" in kinds
    assert len(texts) >= 2 and "".join(texts) == "Let me look at the files."
    assert final.content[1].input == {"command": "ls -la"}
    assert final.stop_reason == "tool_use"


def test_tool_use_round_trip_with_thinking(fake: FakeServer) -> None:
    # thinking stays on for the whole tool loop: turning it on half-way is refused, as by the real API
    c = client(fake)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    first = c.messages.create(model=MODEL, max_tokens=4096, thinking=thinking,
                              messages=[{"role": "user", "content": "go"}])
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]  # unscripted thinking still comes
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[2].id,
                                      "content": "README.md\nsrc"}]},
    ]
    with c.messages.stream(model=MODEL, max_tokens=4096, messages=history, thinking=thinking) as stream:
        kinds = [e.type for e in stream]
        second = stream.get_final_message()
    assert "thinking" in kinds and "signature" in kinds
    assert second.content[0].type == "thinking"
    assert second.content[0].thinking == "The listing shows a Python project."
    assert second.content[0].signature.startswith("sig_")
    assert second.content[1].text == "All done: it is a Python project."
    assert second.stop_reason == "end_turn"
    # the recorded second body carries the tool_result the SDK sent
    assert fake.requests[1]["messages"][2]["content"][0]["tool_use_id"] == first.content[2].id


def test_thinking_is_omitted_without_thinking_param(script_file: Path) -> None:
    with FakeServer({"turns": [{"thinking": "secret", "text": "answer"}]}) as server:
        message = client(server).messages.create(model=MODEL, max_tokens=64,
                                                  messages=[{"role": "user", "content": "q"}])
    assert [b.type for b in message.content] == ["text"]


def test_prompt_caching_second_request_reads_the_prefix(fake: FakeServer) -> None:
    c = client(fake)
    messages = [{"role": "user", "content": [{"type": "text", "text": "task " * 50}]}]
    first = c.messages.create(model=MODEL, max_tokens=64, system=SYSTEM, messages=messages)
    assert first.usage.cache_read_input_tokens == 0
    written = first.usage.cache_creation_input_tokens
    assert written > 0
    second = c.messages.create(model=MODEL, max_tokens=64, system=SYSTEM, messages=messages)
    assert second.usage.cache_read_input_tokens == written
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens > 0
    # the three parts add up to the counter's total
    total = c.messages.count_tokens(model=MODEL, system=SYSTEM, messages=messages).input_tokens
    assert total == first.usage.input_tokens + written


def test_cache_lookback_reads_an_earlier_breakpoint_prefix(fake: FakeServer) -> None:
    c = client(fake)
    m1 = [{"role": "user", "content": [{"type": "text", "text": "task " * 40, "cache_control": {"type": "ephemeral"}}]}]
    first = c.messages.create(model=MODEL, max_tokens=64, system=SYSTEM, messages=m1)
    m2 = [{"role": "user", "content": [{"type": "text", "text": "task " * 40}]},
          {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
          {"role": "user", "content": [{"type": "text", "text": "next " * 30, "cache_control": {"type": "ephemeral"}}]}]
    second = c.messages.create(model=MODEL, max_tokens=64, system=SYSTEM, messages=m2)
    prefix = first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == prefix
    assert second.usage.cache_creation_input_tokens > 0


def test_requests_the_real_api_rejects_get_400(fake: FakeServer) -> None:
    c = client(fake)
    with pytest.raises(anthropic.BadRequestError, match="tool_use` ids were found without `tool_result"):
        c.messages.create(model=MODEL, max_tokens=64, messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "bash", "input": {}}]},
            {"role": "user", "content": "no result"}])
    five = [{"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks with cache_control"):
        c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": five}])
    with pytest.raises(anthropic.BadRequestError, match="greater than `thinking.budget_tokens`"):
        c.messages.create(model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "x"}],
                          thinking={"type": "enabled", "budget_tokens": 2048})
    # none of the rejected requests consumed a turn
    ok = c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
    assert ok.content[0].text == "Let me look at the files."


def test_context_window_answers_prompt_is_too_long(script_file: Path) -> None:
    with FakeServer(script_file, context_window=50) as server, \
            pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        client(server).messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x" * 400}])


def test_record_writes_jsonl_without_auth_headers(script_file: Path, tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with FakeServer(script_file, record=record) as server:
        c = client(server)
        c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "one"}])
        c.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "two"}])
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(e["n"], e["path"]) for e in lines] == [(1, "/v1/messages"), (None, "/v1/messages/count_tokens")]
    assert lines[0]["body"]["messages"][0]["content"] == "one"
    assert "x-api-key" not in lines[0]["headers"] and "anthropic-version" in lines[0]["headers"]
    assert "test-key" not in record.read_text()


@pytest.mark.parametrize("spec", ["429@2:retry-after=1", "500@1", "529@3", "cut@4", "delay=1.5@1", "500@*", "503@2-3",
                                  "stall=0.2@2+"])
def test_fault_specs_parse(spec: str) -> None:
    fault = parse_fault(spec)
    assert fault.first >= 1


def test_fault_spec_errors_explain_the_syntax() -> None:
    with pytest.raises(UsageError, match="WHAT@WHEN"):
        parse_fault("429")
    with pytest.raises(UsageError, match="WHAT@WHEN"):
        parse_fault("boom@1")


@pytest.mark.parametrize(("fault", "error", "status"), [
    ("429@1:retry-after=7", anthropic.RateLimitError, 429),
    ("500@1", anthropic.InternalServerError, 500),
    ("529@1", anthropic.OverloadedError, 529),
])
def test_status_faults_have_the_real_error_shape(script_file: Path, fault: str, error: type, status: int) -> None:
    with FakeServer(script_file, faults=[fault]) as server:
        c = client(server)
        with pytest.raises(error) as info:
            c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        assert info.value.status_code == status
        if status == 429:
            assert info.value.response.headers["retry-after"] == "7"
        if status == 529:
            assert info.value.body["error"]["type"] == "overloaded_error"
        # the faulted request did not use up the first turn
        ok = c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        assert ok.content[0].text == "Let me look at the files."


def test_cut_stream_breaks_mid_way_and_delay_waits(script_file: Path) -> None:
    with FakeServer(script_file, faults=["cut@1", "delay=0.3@2"]) as server:
        c = client(server)
        seen: list[str] = []
        with pytest.raises(Exception) as info, \
                c.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}]) as s:
            for event in s:
                seen.append(event.type)
        assert "message_start" in seen and "message_stop" not in seen
        assert "incomplete" in str(info.value) or "closed" in str(info.value)
        started = time.monotonic()
        ok = c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        assert time.monotonic() - started >= 0.3
        assert ok.content[0].text == "Let me look at the files."


def test_cli_prints_url_first_and_records(script_file: Path, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coder_testkit.fake_server", "--script", str(script_file), "--port", "0",
         "--record", str(record), "--fault", "500@1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0
        c = anthropic.Anthropic(base_url=url, api_key="k", max_retries=1)  # the SDK's own retry gets past 500@1
        message = c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        assert message.content[0].text == "Let me look at the files."
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [e["n"] for e in lines] == [1, 2]


def test_cli_reports_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run([sys.executable, "-m", "coder_testkit.fake_server", "--script", str(bad)],
                            capture_output=True, text=True, env=env, timeout=30, check=False)
    assert result.returncode == 2
    assert "bad.json" in result.stderr and "not valid JSON" in result.stderr and result.stdout == ""


def test_overload_fault_sends_an_error_event_mid_stream(script_file: Path) -> None:
    with FakeServer(script_file, faults=["overload@1-2"]) as server:
        c = client(server)
        seen: list[str] = []
        with pytest.raises(anthropic.APIStatusError) as info, \
                c.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}]) as s:
            for event in s:
                seen.append(event.type)
        assert "message_start" in seen and "message_stop" not in seen
        assert info.value.body["error"]["type"] == "overloaded_error"
        with pytest.raises(anthropic.OverloadedError):  # a JSON request gets the 529 instead
            c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        ok = c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}])
        assert ok.content[0].text == "Let me look at the files."


def test_server_tool_names_and_schemas_are_checked(fake: FakeServer) -> None:
    c = client(fake)
    with pytest.raises(anthropic.BadRequestError, match="Input should be 'bash'"):
        c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x"}],
                          tools=[{"type": "bash_20250124", "name": "shell"}])
    with pytest.raises(anthropic.BadRequestError, match="input_schema: Field required"):
        c.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x"}],
                          tools=[{"name": "shell", "description": "d"}])


def test_usage_counts_what_the_api_bills_beyond_the_body(tmp_path: Path) -> None:
    """The tool-use system prompt (346 tokens for a Claude 4 model with tool_choice auto, 313 with any) and a
    server-defined tool's own definition (245 for bash_20250124, 700 for the text editor) are billed although the
    body shows only a few tokens of declaration; a request without tools pays neither (coder.models.hidden_tokens)."""
    script = tmp_path / "texts.json"
    script.write_text(json.dumps({"turns": [{"text": "ok"}] * 6}))
    bash = {"type": "bash_20250124", "name": "bash"}
    editor = {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}
    plain = {"name": "lookup", "description": "Look a word up.",
             "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}}}
    messages = [{"role": "user", "content": "a question " * 30}]
    with FakeServer(script) as server:
        c = client(server)

        def billed(**extra: object) -> int:
            usage = c.messages.create(model=MODEL, max_tokens=64, messages=messages, **extra).usage  # type: ignore[arg-type]
            return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens

        bare = billed()
        assert billed(tools=[bash]) - bare == 346 + 245
        assert billed(tools=[bash, editor]) - bare == 346 + 245 + 700
        assert billed(tools=[bash], tool_choice={"type": "any"}) - bare == 313 + 245
        with_plain = billed(tools=[plain])
        declared = c.messages.count_tokens(model=MODEL, messages=messages, tools=[plain]).input_tokens  # type: ignore[list-item]
        assert with_plain == declared and with_plain - bare > 346, "a schema tool: the prompt plus its own schema"
    assert bare == (len(json.dumps({"block": {"text": "a question " * 30, "type": "text"}, "m": 0, "role": "user"},
                                   separators=(",", ":"), sort_keys=True)) + 3) // 4, "no tools: nothing hidden"
