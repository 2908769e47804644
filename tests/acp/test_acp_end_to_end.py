"""`coder acp` driven end to end by the ACP SDK's own client, over stdio, against a scripted model: the real
engine, policy, sandbox and session store in a subprocess; only the model is scripted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from acp.schema import TextContentBlock
from acp_support import RecordingClient, coder_acp, coder_cli, user_config, write_script

TIMEOUT = 120


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


def run(coro):  # noqa: ANN001, ANN201 - tiny helper: each test is one asyncio program
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def test_prompt_streams_text_and_thinking(git_repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    answer = "Hello from coder. This answer arrives in several streamed pieces, not in one block."
    script = write_script(tmp_path / "s.json", [{"thinking": "The user greets me; answer politely.",
                                                 "text": answer}])
    user_config(isolated_home, "thinking_budget = 2048\n")
    client = RecordingClient()

    async def main() -> tuple[object, str]:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            assert conn.init_response.agent_capabilities.load_session is True
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            result = await conn.prompt(session_id=new.session_id, prompt=text("say hello"))
            return result, new.session_id

    result, session_id = run(main())
    assert result.stop_reason == "end_turn"
    chunks = client.of("agent_message_chunk")
    assert len(chunks) > 1, "the answer was not streamed"
    assert client.text() == answer
    assert client.text("agent_thought_chunk") == "The user greets me; answer politely."
    assert {sid for sid, _ in client.updates} == {session_id}


EDIT_SCRIPT = [
    {"text": "Creating the notes file.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "create", "path": "notes.txt", "file_text": "hello\nworld\n"}}]},
    {"text": "Created notes.txt."},
]


def test_tool_call_needs_permission_granted_by_the_client(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", EDIT_SCRIPT)
    client = RecordingClient(answer="allow_once")

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "ask") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=text("write notes"))

    result = run(main())
    assert result.stop_reason == "end_turn"
    assert len(client.questions) == 1
    call, options = client.questions[0]
    assert "notes.txt" in (call.title or "")
    assert {o.kind for o in options} >= {"allow_once", "reject_once"}
    assert (git_repo / "notes.txt").read_text() == "hello\nworld\n"
    started = client.of("tool_call")
    assert len(started) == 1 and started[0].kind == "edit" and started[0].status == "pending"
    assert started[0].locations[0].path == str(git_repo / "notes.txt")
    assert [u.status for u in client.of("tool_call_update")] == ["in_progress", "completed"]
    finished = [u for u in client.of("tool_call_update") if u.status == "completed"]
    diffs = [c for c in finished[0].content if c.type == "diff"]
    assert diffs and diffs[0].new_text == "hello\nworld\n" and diffs[0].old_text is None
    assert client.text().endswith("Created notes.txt.")


def test_denied_by_the_client_leaves_the_file_alone(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", EDIT_SCRIPT)
    client = RecordingClient(answer="reject_once")

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "ask") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=text("write notes"))

    result = run(main())
    assert result.stop_reason == "end_turn"
    assert not (git_repo / "notes.txt").exists()
    assert [u.status for u in client.of("tool_call_update")][-1] == "failed"


def test_cancel_mid_stream(git_repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    long_answer = " ".join(f"word{i}" for i in range(400))
    script = write_script(tmp_path / "s.json", [{"text": long_answer}])
    user_config(isolated_home, "[providers.scripted]\nchunk_delay = 0.05\n")
    client = RecordingClient()

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            turn = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=text("talk a lot")))
            await asyncio.wait_for(client.first_text.wait(), 60)
            await conn.cancel(session_id=new.session_id)
            return await turn

    result = run(main())
    assert result.stop_reason == "cancelled"
    assert 0 < len(client.text()) < len(long_answer)


def test_cancel_while_a_permission_question_waits(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", EDIT_SCRIPT)
    client = RecordingClient(answer="cancel")

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "ask") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=text("write notes"))

    result = run(main())
    assert result.stop_reason == "cancelled"
    assert len(client.questions) == 1
    assert not (git_repo / "notes.txt").exists()


def test_todo_list_is_sent_as_a_plan(git_repo: Path, tmp_path: Path) -> None:
    todos = [{"id": "1", "text": "read the code", "status": "done"},
             {"id": "2", "text": "write the fix", "status": "in_progress"},
             {"id": "3", "text": "run the tests", "status": "pending"}]
    script = write_script(tmp_path / "s.json", [
        {"text": "Planning.", "tool_calls": [{"name": "todo", "input": {"todos": todos}}]},
        {"text": "Planned."}])
    client = RecordingClient()

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=text("plan it"))

    assert run(main()).stop_reason == "end_turn"
    plans = client.of("plan")
    assert plans, client.kinds()
    assert [(e.content, e.status) for e in plans[-1].entries] == [
        ("read the code", "completed"), ("write the fix", "in_progress"), ("run the tests", "pending")]


def test_session_loaded_again_and_resumed_in_the_terminal(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "First answer."}, {"text": "Second answer."},
                                                {"text": "Third answer, in the terminal."}])
    first = RecordingClient()

    async def editor_one() -> str:
        async with coder_acp(first, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=text("question one"))
            return new.session_id

    session_id = run(editor_one())
    assert first.text() == "First answer."
    second = RecordingClient()

    async def editor_two() -> object:
        async with coder_acp(second, git_repo, "--model", f"scripted:{script}") as (conn, _):
            await conn.load_session(cwd=str(git_repo), session_id=session_id, mcp_servers=[])
            replayed = list(second.updates)
            result = await conn.prompt(session_id=session_id, prompt=text("question two"))
            return replayed, result

    replayed, result = run(editor_two())
    kinds = [u.session_update for _, u in replayed]
    assert kinds == ["user_message_chunk", "agent_message_chunk"]
    assert replayed[0][1].content.text == "question one" and replayed[1][1].content.text == "First answer."
    assert result.stop_reason == "end_turn"
    assert second.text().endswith("Second answer.")
    # the same stored session goes on in the terminal
    done = coder_cli("run", "--resume", session_id, "--model", f"scripted:{script}", "--output-format", "json",
                     "question three", cwd=git_repo)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["final_text"] == "Third answer, in the terminal."


def test_a_bad_working_directory_is_an_error_answer(git_repo: Path, tmp_path: Path) -> None:
    from acp import RequestError

    script = write_script(tmp_path / "s.json", [{"text": "unused"}])
    client = RecordingClient()

    async def main() -> str:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, proc):
            try:
                await conn.new_session(cwd=str(tmp_path / "missing"), mcp_servers=[])
            except RequestError as exc:
                message = json.dumps(exc.to_error_obj())
            else:
                raise AssertionError("new_session in a missing directory succeeded")
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])  # the agent is still serving
            assert new.session_id
            return message

    message = run(main())
    assert "missing" in message and "not a directory" in message


def test_client_gone_mid_turn_ends_the_agent(git_repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": " ".join(f"w{i}" for i in range(2000))}])
    user_config(isolated_home, "[providers.scripted]\nchunk_delay = 0.05\n")
    client = RecordingClient()

    async def main() -> int | None:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, proc):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            turn = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=text("talk")))
            await asyncio.wait_for(client.first_text.wait(), 60)
            proc.stdin.close()  # the editor closed the pipe while the model was streaming
            code = await asyncio.wait_for(proc.wait(), 20)
            turn.cancel()
            return code

    assert run(main()) == 0


def test_modes_are_the_permission_modes(git_repo: Path, tmp_path: Path) -> None:
    # the model edits only if it was told of the switch (coder/engine/mode_notice.py) with the prompt
    told = {**EDIT_SCRIPT[0], "when": r"\[Permission mode is now auto-edit: reads and edits run"}
    script = write_script(tmp_path / "s.json", [told, EDIT_SCRIPT[1]])
    client = RecordingClient(answer="reject_once")

    async def main() -> tuple[object, object]:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "ask") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            await conn.set_session_mode(session_id=new.session_id, mode_id="auto-edit")
            return new, await conn.prompt(session_id=new.session_id, prompt=text("write notes"))

    new, result = run(main())
    assert new.modes.current_mode_id == "ask"
    assert [m.id for m in new.modes.available_modes] == ["plan", "ask", "auto-edit", "auto"]
    assert result.stop_reason == "end_turn"
    assert client.questions == []  # auto-edit: the edit needed no question
    assert (git_repo / "notes.txt").read_text() == "hello\nworld\n"


def test_an_attached_file_is_read_from_the_editors_buffer(git_repo: Path, tmp_path: Path) -> None:
    from acp.schema import ResourceContentBlock

    app = str(git_repo / "src" / "app.py")
    script = write_script(tmp_path / "s.json", [
        {"when": "UNSAVED = 'edited in the editor'", "text": "I see your unsaved edit."},
        {"text": "I did not get the buffer."}])
    client = RecordingClient(buffers={app: "UNSAVED = 'edited in the editor'\n"})

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            link = ResourceContentBlock(type="resource_link", uri=f"file://{app}", name="app.py")
            return await conn.prompt(session_id=new.session_id, prompt=[*text("what changed here?"), link])

    assert run(main()).stop_reason == "end_turn"
    assert client.reads == [app]
    assert client.text() == "I see your unsaved edit."


def test_a_plan_is_approved_by_the_client_and_plan_mode_ends(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "Here is my plan.", "tool_calls": [{"name": "exit_plan", "input": {"plan": "1. add notes.txt"}}]},
        {"text": "Plan approved; starting."}])
    client = RecordingClient(answer="allow_once")

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "plan") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            assert new.modes.current_mode_id == "plan"
            return await conn.prompt(session_id=new.session_id, prompt=text("plan the notes"))

    assert run(main()).stop_reason == "end_turn"
    assert len(client.questions) == 1
    call, options = client.questions[0]
    assert [o.name for o in options] == ["Approve the plan", "Keep planning"]
    assert call.tool_call_id == client.of("tool_call")[0].tool_call_id  # the question is about the exit_plan call
    assert "1. add notes.txt" in call.content[0].content.text
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["ask"]
    assert client.text().endswith("Plan approved; starting.")


def test_through_the_fake_server_and_the_real_anthropic_sdk(git_repo: Path, tmp_path: Path) -> None:
    from coder_testkit.fake_server import FakeServer

    answer = "Streamed over HTTP by the fake model server, through the real SDK."
    script = write_script(tmp_path / "s.json", EDIT_SCRIPT[:1] + [{"text": answer}])
    client = RecordingClient(answer="allow_once")
    with FakeServer(script) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}

        async def main() -> object:
            async with coder_acp(client, git_repo, "--model", "anthropic:claude-sonnet-4-6", "--permission-mode",
                                 "ask", env=env) as (conn, _):
                new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
                return await conn.prompt(session_id=new.session_id, prompt=text("write notes"))

        result = run(main())
        requests = server.requests
    assert result.stop_reason == "end_turn"
    assert len(requests) == 2 and all(r.get("stream") for r in requests)
    assert requests[0]["messages"][0]["content"][0]["text"] == "write notes"
    assert client.text().endswith(answer) and len(client.of("agent_message_chunk")) > 2
    assert len(client.questions) == 1 and (git_repo / "notes.txt").read_text() == "hello\nworld\n"


def test_a_running_command_shows_its_newest_lines_bounded(git_repo: Path, tmp_path: Path) -> None:
    """Issue 32: a command's live output reaches the editor as its newest lines, a few times a second, however
    much it prints (a 5-second `yes`, with the real sandboxed shell); the finished call carries the result."""
    from coder.acp.updates import LIVE_CHARS, LIVE_EVERY

    command = "echo start; timeout 3 yes | head -c 3000000 | awk 'NR % 200000 == 0 {print NR; fflush()}'; " \
              "timeout 5 yes; echo THE-END"
    script = write_script(tmp_path / "s.json", [{"tool_calls": [{"name": "bash", "input": {
        "command": command, "timeout": 60}}]}, {"text": "ran it"}])
    client = RecordingClient()

    async def main() -> object:
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}", "--permission-mode", "auto") as (
                conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=text("run it"))

    result = run(main())
    assert result.stop_reason == "end_turn"
    updates = client.of("tool_call_update")
    live = [u for u in updates if u.status == "in_progress" and u.content]
    # shown while it ran (which lines the first update holds depends on how soon the loaded machine sends it:
    # "start", or already `yes`'s flood)
    assert live and "THE-END" not in live[0].content[0].content.text
    assert all(len(u.content[0].content.text) <= LIVE_CHARS for u in live)
    assert len(live) <= 10 / LIVE_EVERY + 5  # a few a second, not one per line
    assert updates[-1].status in ("completed", "failed") and updates[-1].raw_output["output"]
