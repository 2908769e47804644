"""Issue 46: server tools as first-class turns, through the real anthropic SDK and the strict fake server, which
answers as the API does (a paused turn, a search left waiting when the model also calls a client tool, results with
encrypted content) and refuses what it refuses ([server-tools]: text after the results of a turn whose search waits).

- A paused turn is continued by sending the paused answer back; the answer goes on in the same assistant message.
- A turn whose search waits for a client tool goes on with the results alone, and the next answer opens with the
  search's result.
- The same turn cut by --max-turns, Ctrl+C or SIGKILL, then resumed (with a new message, or without one to go on),
  and summarised by a compaction, or brought back to the end by `/rewind`: no request leaves a search waiting
  where the API would refuse it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_session_support import (
    RESULTS,
    Driven,
    blocks,
    coder_env,
    coder_run,
    killed_while_running,
    own_sleep,
    result,
    resumed_request,
)

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.engine.history import rebuild
from coder.models.registry import create_provider
from coder.models.types import ServerToolBlock, TextBlock
from coder_testkit.fake_server import FakeServer

SONNET, OPUS55 = "anthropic:claude-sonnet-4-6", "anthropic:claude-opus-5-5"
PAUSED = {"web_search": [{"query": "widget 2.0 changelog", "results": RESULTS, "pending": True}],
          "stop_reason": "pause_turn"}
#: the search and a client tool in one answer: the search waits for the client's results
MIXED = {"text": "Searching while I look.", "web_search": [
    {"query": "widget 2.0 changelog", "results": RESULTS, "pending": True}],
         "tool_calls": [{"name": "bash", "input": {"command": "echo local"}}]}


def _kinds(message: dict[str, Any]) -> list[str]:
    return [b["type"] for b in message["content"]] if isinstance(message["content"], list) else ["text"]


def _no_search_left_waiting(body: dict[str, Any]) -> None:
    """Every search call of the request has its result, or the request continues the turn that made it."""
    answered = {b["tool_use_id"] for b in blocks(body, "web_search_tool_result")}
    for index, message in enumerate(body["messages"]):
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "server_tool_use" and block["id"] not in answered:
                tail = body["messages"][index + 1:]
                assert not tail or (len(tail) == 1 and all(b["type"] == "tool_result" for b in tail[0]["content"])), \
                    f"{block['id']} waits in a turn that has ended: {[_kinds(m) for m in tail]}"


def test_a_paused_turn_is_sent_back_and_goes_on_in_the_same_message(git_repo: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Opus 5.5 always thinks, takes no prefill and binds thinking to the conversation: the continuation is the
    paused answer sent back as it came (not a prefill), and the merged message keeps both thinking blocks valid."""
    script = {"turns": [PAUSED, {"thinking": "The notes say Python 3.8 went.", "text": "Widget 2.0 dropped 3.8."},
                        {"text": "You're welcome."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, OPUS55, monkeypatch, server)
        try:
            driven.send("what changed in widget 2.0?")
            history = [m.to_dict() for m in driven.session.history]
            driven.send("thanks")
            sid = driven.session.id
        finally:
            driven.close()
        first, second, third = server.requests
    assert _kinds(second["messages"][-1]) == ["thinking", "server_tool_use"], "the paused answer, sent back"
    assert second["messages"][-1]["role"] == "assistant"
    merged = history[-1]["content"]
    assert [b["type"] for b in merged][:2] == ["thinking", "server_tool"] and len(history) == 2, \
        "one assistant message for the whole turn"
    assert [b["data"]["type"] for b in merged if b["type"] == "server_tool"] == ["server_tool_use",
                                                                                  "web_search_tool_result"]
    assert _kinds(third["messages"][1]) == ["thinking", "server_tool_use", "web_search_tool_result", "thinking",
                                            "text"], "both thinking blocks still bound to their prefix"
    _no_search_left_waiting(third)
    again = resumed_request(git_repo, OPUS55, monkeypatch, sid, "and 2.1?")  # a resume rebuilds the same message
    assert again["messages"][:3] == third["messages"], "the resumed history renders the same bytes"


def test_a_mixed_turn_goes_on_with_the_results_alone(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control of the cut turns below: not cut, the search runs when the results go back and its result opens
    the next answer, which the request after it sends back as the API gave it."""
    script = {"turns": [MIXED, {"text": "Both done."}, {"text": "ok"}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.send("search and look")
            driven.send("thanks")
        finally:
            driven.close()
        bodies = server.requests
    assert _kinds(bodies[1]["messages"][-1]) == ["tool_result"], "results alone continue the turn"
    assert _kinds(bodies[2]["messages"][3])[0] == "web_search_tool_result", "the search's result opened the answer"
    for body in bodies:
        _no_search_left_waiting(body)


def test_a_mixed_turn_cut_by_max_turns_then_a_new_message(git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [MIXED, {"text": "New answer."}]}
    with FakeServer(script) as server:
        env = coder_env(server)
        cut = result(coder_run(git_repo, env, "--model", SONNET, "--max-turns", "1", "search and look"))
        assert cut["exit_reason"] == "max_turns"
        done = coder_run(git_repo, env, "--model", SONNET, "--resume", cut["session_id"], "what did you find?")
        body = server.requests[-1]
    assert done.returncode == 0 and result(done)["final_text"] == "New answer.", done.stderr[-2000:]
    _no_search_left_waiting(body)
    closed = [b["text"] for b in body["messages"][1]["content"] if b["type"] == "text" and "[web_search" in b["text"]]
    assert len(closed) == 1 and "widget 2.0 changelog" in closed[0] and "not run" in closed[0], \
        "the search that never ran is text that says so"


def test_a_mixed_turn_interrupted_then_a_new_message(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleep = own_sleep()
    interrupted = {**MIXED, "tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 120}}]}
    with FakeServer({"turns": [interrupted, {"text": "Stopped; here is what I have."}]}) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        driven.ctrl_c_at_approval()
        try:
            driven.send("search and look", reason="interrupted")
            driven.ctrl_c_at_approval(False)
            driven.send("what now?")
        finally:
            driven.close()
        body = server.requests[-1]
    _no_search_left_waiting(body)
    assert len(server.requests) == 2


def test_a_mixed_turn_killed_then_resumed_goes_on_or_starts_anew(git_repo: Path, tmp_path: Path) -> None:
    """SIGKILL while the client tool runs: resumed without a message the turn goes on (the search runs then);
    resumed with one, the search that never ran is closed as text."""
    sleep = own_sleep()
    killed = {**MIXED, "tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 120}}]}
    with FakeServer({"turns": [killed, {"text": "Went on."}]}) as server:
        env = coder_env(server)
        sid = killed_while_running(git_repo, env, sleep, "--model", SONNET, "search and look")
        went_on = coder_run(git_repo, env, "--model", SONNET, "--resume", sid)
        go_on = server.requests[-1]
    assert went_on.returncode == 0 and result(went_on)["final_text"] == "Went on.", went_on.stderr[-2000:]
    assert _kinds(go_on["messages"][-1]) == ["tool_result"], "the results alone: the turn goes on"
    with FakeServer({"turns": [killed, {"text": "Started anew."}]}) as server:  # killed again at the same point
        sid = killed_while_running(git_repo, coder_env(server), sleep, "--model", SONNET, "search and look")
        anew = coder_run(git_repo, coder_env(server), "--model", SONNET, "--resume", sid, "forget it")
        body = server.requests[-1]
    assert anew.returncode == 0 and result(anew)["final_text"] == "Started anew.", anew.stderr[-2000:]
    _no_search_left_waiting(body)


def test_a_compaction_of_a_cut_mixed_turn_closes_the_search_in_the_summary_request(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/compact` right after a mixed turn was cut: the summary request appends its instruction to the results
    message, which ends the turn: the search that waits is sent as text there."""
    summary = {"when": "Your context is about to be compacted", "repeat": True, "text": "## Intent\nwidget news"}
    script = {"turns": [summary, {"text": "First."}, {"text": "Second."}, MIXED, {"text": "After."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.send("one")
            driven.send("two")
            driven.session.parts.limits.max_turns = 1
            driven.send("search and look", reason="max_turns")
            driven.session.parts.limits.max_turns = 100
            compaction = driven.session.parts.context.compact_now(driven.session.history, driven.session.parts.pinned)
            assert compaction is not None and compaction.kind == "summary"
            driven.send("go on")
        finally:
            driven.close()
    summaries = [b for b in server.requests if "Your context is about to be compacted" in json.dumps(b)]
    assert summaries
    for body in server.requests:
        _no_search_left_waiting(body)


def test_a_withdrawn_search_goes_back_as_text_and_the_cap_holds_across_a_resume(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "coder"
    user.mkdir(parents=True)
    (user / "config.toml").write_text("[web]\nsearch_session_cap = 1\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    searched = {"web_search": [{"query": "widget", "results": RESULTS}], "text": "Found it."}
    with FakeServer({"turns": [searched, {"text": "No more searches."}]}) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.send("search")
            driven.send("again")
            sid = driven.session.id
        finally:
            driven.close()
        first, second = server.requests
    assert any(t["name"] == "web_search" for t in first["tools"])
    assert not any(t["name"] == "web_search" for t in second["tools"]), "the cap withdrew it"
    assert not blocks(second, "server_tool_use") and not blocks(second, "web_search_tool_result")
    replayed = [b["text"] for b in blocks(second, "text") if "[web_search" in b["text"]]
    assert any(RESULTS[0]["url"] in t for t in replayed), "what was found stays, as text"
    body = resumed_request(git_repo, SONNET, monkeypatch, sid, "once more")
    assert not any(t["name"] == "web_search" for t in body["tools"]), "the session's cap counted the stored search"


def test_searches_go_to_the_openai_route_as_text_after_a_model_switch(git_repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    script = {"turns": [{"web_search": [{"query": "widget", "results": RESULTS}], "text": "Found it."},
                        {"text": "On the other route."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.send("search")
            config = driven.opened.config
            driven.session.switch_model(create_provider("openai:gpt-4.1", config.providers, config.pricing))
            driven.send("and now?")
        finally:
            driven.close()
        chat = server.requests[-1]
    answer = next(m for m in chat["messages"] if m["role"] == "assistant")
    assert "[web_search results]" in answer["content"] and RESULTS[0]["url"] in answer["content"]
    assert answer["content"].endswith("Found it.")


def test_the_merged_message_is_what_the_history_holds() -> None:
    """A resume rebuilds a paused turn and its continuation as one message, as the session held it."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    events = [ev.UserMessage("go"),
              ev.AssistantMessage({"role": "assistant", "content": [{"type": "server_tool", "data": use}]},
                                  "pause_turn"),
              ev.AssistantMessage({"role": "assistant", "content": [{"type": "server_tool", "data": found},
                                                                    {"type": "text", "text": "done"}]}, "end_turn"),
              ev.UserMessage("next"),
              ev.AssistantMessage({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}, "end_turn")]
    history = rebuild(events).history
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[1].content == [ServerToolBlock(use), ServerToolBlock(found), TextBlock("done")]


def test_web_search_domains_are_checked_when_coder_starts(git_repo: Path, tmp_path: Path) -> None:
    """[server-tools] "Domain filtering": no scheme, a * only in the path; the API refuses others with a 400. The
    typed config refuses them at start-up, naming the file, the line and the key; a valid list goes out as written."""
    user = tmp_path / "xdg" / "coder"
    user.mkdir(parents=True)
    config = user / "config.toml"
    config.write_text('[web]\nsearch = "on"\nsearch_blocked_domains = ["ads.example.net", "https://spam.example.com"]\n')
    with FakeServer({"turns": [{"text": "never"}]}) as server:
        env = coder_env(server, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
        refused = coder_run(git_repo, env, "--model", SONNET, "search")
        assert refused.returncode == 2 and not server.requests, refused.stderr[-2000:]
        assert f"{config}:3" in refused.stderr and "search_blocked_domains" in refused.stderr
        assert "has a scheme: write spam.example.com" in refused.stderr
        config.write_text('[web]\nsearch_blocked_domains = ["*.ads.example.net"]\n')
        wildcard = coder_run(git_repo, env, "--model", SONNET, "search")
        assert wildcard.returncode == 2 and "a wildcard may only stand in the path" in wildcard.stderr
        config.write_text('[web]\nsearch_allowed_domains = ["docs.example.test", "example.org/blog/*"]\n')
        done = coder_run(git_repo, env, "--model", SONNET, "search")
        declared = next(t for t in server.requests[0]["tools"] if t["name"] == "web_search")
    assert done.returncode == 0, done.stderr[-2000:]
    assert declared["allowed_domains"] == ["docs.example.test", "example.org/blog/*"]


def test_a_rewind_back_to_a_cut_mixed_turn_closes_its_search(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/rewind 2 --conversation` after a mixed turn cut by the turn cap and a new message: the conversation ends
    with the cut turn again (its search waits, the user has moved on), and the next message closes the search."""
    script = {"turns": [MIXED, {"text": "New answer."}, {"text": "After the rewind."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.session.parts.limits.max_turns = 1
            driven.send("search and look", reason="max_turns")
            driven.session.parts.limits.max_turns = 100
            driven.send("what did you find?")
            rewound = run_slash(driven.opened, "/rewind 2 yes --conversation")
            assert not rewound.error and "conversation is back there" in rewound.text, rewound.text
            assert "what did you find?" not in json.dumps([m.to_dict() for m in driven.session.history])
            driven.send("start over")
        finally:
            driven.close()
        body = server.requests[-1]
    assert len(server.requests) == 3 and "what did you find?" not in json.dumps(body), "the rewind held"
    _no_search_left_waiting(body)
    closed = [b["text"] for b in blocks(body, "text") if "[web_search" in b["text"]]
    assert len(closed) == 1 and "not run" in closed[0], "the search that never ran is text that says so"


def test_compact_right_after_ctrl_c_summarises_and_closes_the_waiting_search(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl+C while a mixed turn's client tool runs, then `/compact` at once: the interrupt stopped the turn, not the
    summary (it stopped the summary at once: 'compaction interrupted'); the summary request closes the search."""
    sleep = own_sleep()
    interrupted = {**MIXED, "tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 120}}]}
    summary = {"when": "Your context is about to be compacted", "repeat": True, "text": "## Intent\nwidget news"}
    script = {"turns": [summary, {"text": "One."}, {"text": "Two."}, interrupted, {"text": "After."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, SONNET, monkeypatch, server)
        try:
            driven.send("one")
            driven.send("two")
            driven.ctrl_c_at_approval()
            driven.send("search and look", reason="interrupted")
            driven.ctrl_c_at_approval(False)
            compacted = run_slash(driven.opened, "/compact")
            assert not compacted.error, compacted.text
            assert [e for e in driven.events if isinstance(e, ev.CompactionEvent)], "no compaction"
            driven.send("go on")
        finally:
            driven.close()
    summaries = [b for b in server.requests if "Your context is about to be compacted" in json.dumps(b)]
    assert len(summaries) == 1
    for body in server.requests:
        _no_search_left_waiting(body)
