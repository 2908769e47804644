"""Issue 49 over ACP: a prompt turn that changed code ends with its evidence, said in the chat and returned in the
prompt response's `_meta` (`coder/evidence`), through the real `coder acp` with the real sandbox and pytest."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import text_block
from acp_support import RecordingClient, coder_acp, write_script  # type: ignore[import-not-found]

from coder.evidence.record import nudge_line


def test_the_prompt_response_carries_the_evidence(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    script = write_script(tmp_path / "s.json", [
        {"text": "Fixing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
            "command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a + b"}}]},
        {"text": "Testing.", "tool_calls": [{"name": "bash", "input": {
            "command": "python -m pytest -q test_calc.py"}}]},
        {"text": "Fixed, and the test passes."}])
    client = RecordingClient()

    async def main():
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("fix add")])

    result = asyncio.run(main())
    assert result.stop_reason == "end_turn"
    evidence = (result.field_meta or {})["coder/evidence"]
    assert evidence["state"] == "verified" and evidence["runs"][0]["counts"]["passed"] == 1
    assert "coder: evidence: verified — `python -m pytest -q test_calc.py`: 1 passed" in client.text()


def test_the_nudge_once_and_an_unsupported_claim_flagged(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = write_script(tmp_path / "s.json", [
        {"text": "Fixing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
            "command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a + b"}}]},
        {"text": "Fixed."}, {"text": "It works now."}, {"text": "never asked for"}])
    client = RecordingClient()

    async def main():
        async with coder_acp(client, git_repo, "--model", f"scripted:{script}") as (conn, _):
            new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("fix add")])

    result = asyncio.run(main())
    evidence = (result.field_meta or {})["coder/evidence"]
    assert (evidence["state"], evidence["claim"], evidence["unsupported_claim"]) == ("unverified", "It works now.",
                                                                                     True)
    text = client.text()
    assert text.count(nudge_line("nudge")) == 1 and "never asked for" not in text
    assert "coder: evidence: unverified — no test ran. Unsupported claim: “It works now.”" in text
