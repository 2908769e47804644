"""Compaction drops images first (issue 35), each replaced by a note of what it was, and a resume rebuilds the
same view from the compaction's record."""

from __future__ import annotations

from pathlib import Path

from images_support import picture

from coder.config.layers import settings
from coder.context.base import Compaction, Pinned
from coder.context.manager import TieredContext
from coder.models.images import prepare
from coder.models.scripted import ScriptedProvider
from coder.models.types import ImageBlock, Message, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock

TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
CONFIG = settings({"context": {"budget": 60_000, "compact_at": 4_000, "target": 0.5, "recent_turns": 2}}).context
SCRIPT = {"turns": [{"when": "about to be compacted", "repeat": True, "text": "## Intent\nLook at the UI."}]}


def images_in(view: list[Message]) -> list[ImageBlock]:
    return [i for m in view for b in m.content
            for i in ([b] if isinstance(b, ImageBlock) else b.images if isinstance(b, ToolResultBlock) else [])]


def test_old_images_go_first_with_a_note_and_recent_ones_stay(tmp_path: Path) -> None:
    history = [Message("user", [TextBlock("Why is the button red?"), prepare(picture(1500, 1000), "ui.png")])]
    for n in range(4):  # each view returns a screenshot of about 930 tokens
        history.append(Message("assistant", [TextBlock("Looking."), ToolUseBlock(f"t{n}", "view", {"path": "x"})]))
        history.append(Message("user", [ToolResultBlock(f"t{n}", f"shot{n}.png: image",
                                                        images=[prepare(picture(1000, 700 + n), f"shot{n}.png")])]))
    history.append(Message("assistant", [TextBlock("Running."), ToolUseBlock("t9", "bash", {"command": "pytest"})]))
    history.append(Message("user", [ToolResultBlock("t9", "ok\n" * 50)]))
    context = TieredContext(ScriptedProvider(SCRIPT), CONFIG, tmp_path)
    prepared = context.prepare("You are coder.", history, TOOLS, Pinned(task="Why is the button red?"))
    kinds = [c.kind for c in prepared.compactions]
    assert kinds[0] == "images" and "summary" not in kinds  # the images alone freed enough
    kept = images_in(prepared.request.messages)
    assert [i.name for i in kept] == ["shot3.png"]  # inside the last two turns
    texts = "\n".join(b.text if isinstance(b, TextBlock) else b.content if isinstance(b, ToolResultBlock) else ""
                      for m in prepared.request.messages for b in m.content)
    assert "[image ui.png 1357x905" in texts and "[image shot0.png 1000x700" in texts  # what each one was
    assert prepared.tokens < prepared.compactions[0].tokens_before
    assert len(images_in(history)) == 5  # the history keeps them (a rewind, the transcript)

    again = TieredContext(ScriptedProvider(SCRIPT), CONFIG, tmp_path)
    again.restore([Compaction(c.kind, c.tokens_before, c.tokens_after, dict(c.data)) for c in prepared.compactions])
    assert again.prepare("You are coder.", history, TOOLS, Pinned()).request.messages == prepared.request.messages


def test_no_summary_when_dropping_images_gets_under_mask_target(tmp_path: Path) -> None:
    """Issue 33 round 2's rule with the images tier: above the target but under mask_target of compact_at once the
    old images are gone (nothing left to mask), the compaction stops there; a lower mask_target is the control."""
    history = [Message("user", [TextBlock("Why is the button red? " + "context " * 700)])]
    for n in range(3):
        history.append(Message("assistant", [TextBlock("Looking."), ToolUseBlock(f"t{n}", "view", {"path": "x"})]))
        history.append(Message("user", [ToolResultBlock(f"t{n}", f"shot{n}.png: image",
                                                        images=[prepare(picture(1000, 700 + n), f"shot{n}.png")])]))

    def kinds(mask_target: float) -> list[str]:
        config = settings({"context": {"budget": 60_000, "compact_at": 4_000, "target": 0.25, "recent_turns": 1,
                                       "mask_target": mask_target, "summary_max_tokens": 500}}).context
        context = TieredContext(ScriptedProvider(SCRIPT), config, tmp_path)
        prepared = context.prepare("You are coder.", history, TOOLS, Pinned(task="Why is the button red?"))
        return [c.kind for c in prepared.compactions]

    assert kinds(0.9) == ["images"]
    assert kinds(0.2) == ["images", "summary"]
