"""Images go first when the context is compacted (issue 35): an image costs up to ~1,600 tokens and is rarely
needed again once the model has described it, while the text around it (what the model said about it) stays.

The images tier, run before masking: every image outside the last `recent_turns` turns is replaced by a note
of what it was (`[image shot.png 1516x758, 210 KB was removed: ...]`), so the model knows it saw one and can ask
for it again (a `view`, the user pasting it anew). An image is known by a digest of its data, so the record of a
compaction (`{"dropped": {digest: note}}`) rebuilds the same view after a resume.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from coder.context.history import assistant_indexes
from coder.models.images import dropped_note
from coder.models.types import Block, ImageBlock, Message, TextBlock, ToolResultBlock

WHY = "dropped from the context to make room; view the file again if it is still needed"


def image_key(image: ImageBlock) -> str:
    return hashlib.sha256(image.data.encode("ascii", "replace")).hexdigest()[:24]


def old_images(history: list[Message], recent_turns: int, dropped: dict[str, str]) -> dict[str, str]:
    """digest -> note for each image before the last `recent_turns` turns not dropped yet."""
    turns = assistant_indexes(history)
    if len(turns) <= recent_turns:
        return {}
    boundary = turns[-recent_turns] if recent_turns > 0 else len(history)
    out: dict[str, str] = {}
    for message in history[:boundary]:
        for block in message.content:
            images = [block] if isinstance(block, ImageBlock) else \
                block.images if isinstance(block, ToolResultBlock) else []
            for image in images:
                key = image_key(image)
                if key not in dropped:
                    out[key] = dropped_note(image, WHY)
    return out


def drop_images(view: list[Message], dropped: dict[str, str]) -> list[Message]:
    """`view` with the images named in `dropped` replaced by their notes; untouched messages are the same
    objects (the cached prefix stays byte for byte what it was)."""
    if not dropped:
        return view
    out: list[Message] = []
    for message in view:
        blocks: list[Block] = []
        changed = False
        for block in message.content:
            if isinstance(block, ImageBlock) and image_key(block) in dropped:
                blocks.append(TextBlock(dropped[image_key(block)]))
                changed = True
            elif isinstance(block, ToolResultBlock) and any(image_key(i) in dropped for i in block.images):
                gone = [i for i in block.images if image_key(i) in dropped]
                notes = "\n".join(dropped[image_key(i)] for i in gone)
                blocks.append(replace(block, content=f"{block.content}\n{notes}".strip(),
                                      images=[i for i in block.images if image_key(i) not in dropped]))
                changed = True
            else:
                blocks.append(block)
        out.append(Message(message.role, blocks) if changed else message)
    return out
