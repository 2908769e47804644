"""ACP image content (issue 35): an editor's pasted image reaches the model as an image block, through `coder acp`
and the real anthropic SDK against the strict fake server; a broken image is refused before the turn."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import EmbeddedResourceContentBlock, ImageContentBlock, TextContentBlock, TextResourceContents
from acp_support import RecordingClient, coder_acp
from PIL import Image

from coder_testkit.fake_server import FakeServer


def png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (0, 200, 0)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_an_image_in_the_prompt_reaches_the_model_and_a_broken_one_is_refused(git_repo: Path,
                                                                               tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "A green square."}]}))
    client = RecordingClient()
    with FakeServer(script) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}

        async def main() -> object:
            async with coder_acp(client, git_repo, "--model", "anthropic:claude-sonnet-4-6", env=env) as (conn, _):
                assert conn.init_response.agent_capabilities.prompt_capabilities.image is True
                new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
                with pytest.raises(RequestError) as refused:
                    broken = base64.b64encode(b"nope").decode()
                    await conn.prompt(session_id=new.session_id, prompt=[
                        ImageContentBlock(type="image", data=broken, mime_type="image/png")])
                assert "not an image" in str(refused.value.data)
                return await conn.prompt(session_id=new.session_id, prompt=[
                    TextContentBlock(type="text", text="what colour?"),
                    ImageContentBlock(type="image", data=png(3000, 2000), mime_type="image/png")])

        result = asyncio.run(asyncio.wait_for(main(), 120))
        sent = server.requests[-1]["messages"][0]["content"]
    assert result.stop_reason == "end_turn" and client.text() == "A green square."  # type: ignore[attr-defined]
    assert [b["type"] for b in sent] == ["text", "image"] and sent[1]["source"]["media_type"] == "image/png"
    assert len(server.requests) == 1  # the refused image never started a turn


def test_only_the_persons_words_attach_a_dropped_image(git_repo: Path, tmp_path: Path) -> None:
    """Issue 43, item 3: an image path typed into the editor's chat is attached; the same path inside an
    embedded resource (a buffer the editor attached: the file's content, not the person's words) is not."""
    picture = tmp_path / "pictures" / "shot.png"
    picture.parent.mkdir()
    picture.write_bytes(base64.b64decode(png(40, 30)))
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "Seen."}, {"text": "Read."}]}))
    client = RecordingClient()
    with FakeServer(script) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}

        async def main() -> None:
            async with coder_acp(client, git_repo, "--model", "anthropic:claude-sonnet-4-6", env=env) as (conn, _):
                new = await conn.new_session(cwd=str(git_repo), mcp_servers=[])
                await conn.prompt(session_id=new.session_id, prompt=[
                    TextContentBlock(type="text", text=f"what is in {picture} please")])
                await conn.prompt(session_id=new.session_id, prompt=[
                    TextContentBlock(type="text", text="summarise the notes"),
                    EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                        uri=f"file://{git_repo}/notes.md", text=f"see the screenshot {picture} here"))])

        asyncio.run(asyncio.wait_for(main(), 120))
        first, second = (r["messages"][-1]["content"] for r in server.requests)
    assert [b["type"] for b in first] == ["text", "image"]
    assert [b["type"] for b in second] == ["text"] and str(picture) in second[0]["text"]
