"""`@path` in a user message attaches the file's content (issue 24): `explain @src/app.py`, or a range of lines
`@src/app.py:10-40` (`:10` is one line). Completing the path was all `@` did; the model then had to spend a tool
call (and, in ask mode, the person an approval) to read a file the person had already named.

A mention is `@` at the start of a word followed by a path relative to the working directory. It attaches only a
regular file inside the workspace, read beneath it without following a symlink out (coder/fs/beneath.py); a
mention that names nothing (an npm scope, a handle) is left as typed. The content goes to the model as extra
text blocks of the same user message, so the message as typed stays what people see; the events keep the
attachments, so a resumed session sends the same message again.

Only the person's words become attachments (issue 43): the frontends resolve what was typed, dropped or pasted
(`attach`, through `Opened.attach`) and hand the engine an `Attached`; `Session.send` never reads a file for the
text it is given, so a prompt a model wrote for a subagent, an agent's report, hook output or review feedback
that names a file reads nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.fs.beneath import read_beneath
from coder.models.images import MAX_SOURCE_BYTES, ImageRefused, looks_like_image, prepare
from coder.models.types import ImageBlock

MENTION = re.compile(r"(?<![\w@/])@([\w.~+\-/]+)(?::(\d+)(?:-(\d+))?)?")
#: a file dropped into the terminal: its absolute (or ~) path, quoted or with backslash-escaped spaces, as the
#: terminals paste it (issue 35); only image files are taken this way
DROPPED = re.compile(r"""(?<!\S)(?:'((?:/|~/)[^']+)'|"((?:/|~/)[^"]+)"|((?:/|~/)(?:\\ |\S)+))(?!\S)""")
MAX_BYTES = 256 * 1024  # a bigger file is cut: the model can read the rest with its tools
MAX_FILES = 10


@dataclass
class Attachment:
    path: str  # workspace-relative
    start: int  # first line, 1-based
    end: int  # last line (inclusive)
    text: str
    note: str = ""  # "cut at 256 KB" and the like

    def block(self) -> str:
        """The text the model gets for it."""
        note = f" note=\"{self.note}\"" if self.note else ""
        return f'<file path="{self.path}" lines="{self.start}-{self.end}"{note}>\n{self.text}\n</file>'

    def label(self) -> str:
        return f"{self.path}:{self.start}-{self.end}" if self.start > 1 or self.note.startswith("lines") \
            else f"{self.path} ({self.end} lines)"


@dataclass
class Attached:
    """What the person attached to one message, resolved by the frontend: the files `@path` names, and images
    (`--image`, pasted, `@shot.png`, dropped paths), already within the API's limits; `refused` says why an image
    named could not be sent."""

    files: list[Attachment] = field(default_factory=list)
    images: list[ImageBlock] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def attach(text: str, workspace: Path, cwd: Path | None = None, images: Sequence[ImageBlock] = (), *,
           dropped: bool = True) -> Attached:
    """The attachments of a message the person typed (only a frontend calls this, with the person's words):
    `images` they gave some other way (a flag, a paste, an editor's image block) first, then what the text names.
    `dropped`: whether image paths in the text count as dropped files, which only a terminal (or a command line
    pasted into one) makes; text from a file, a pipe or a program names files with `@path` only."""
    found, mentioned = find(text, workspace, cwd)  # `@path` attaches the file
    pictures, refused = dropped_images(text, workspace) if dropped else ([], [])  # a screenshot dropped in
    return Attached(found, [*images, *mentioned, *pictures], refused)


def find(text: str, workspace: Path, cwd: Path | None = None) -> tuple[list[Attachment], list[ImageBlock]]:
    """The files `text` mentions, read (at most MAX_FILES, each once): text files as attachments, images (issue
    35: `@shot.png`) as image blocks within the API's limits; an image that cannot be sent is an attachment that
    says why."""
    out: list[Attachment] = []
    images: list[ImageBlock] = []
    seen: set[tuple[str, int | None, int | None]] = set()
    root = Path(os.path.realpath(workspace))
    base = Path(os.path.realpath(cwd or workspace))
    for m in MENTION.finditer(text):
        raw, first, last = m.group(1), m.group(2), m.group(3)
        for candidate in (raw, raw.rstrip(".,;:!?)")):  # "see @a.py." ends a sentence
            rel = _inside(root, base, candidate)
            image = rel is not None and looks_like_image(rel)
            data = read_beneath(root, rel, (MAX_SOURCE_BYTES if image else MAX_BYTES) + 1) if rel else None
            if rel is None or data is None:
                continue
            start = int(first) if first else None
            end = int(last) if last else (start if first else None)
            key = (rel, start, end)
            if key not in seen and len(out) + len(images) < MAX_FILES:
                seen.add(key)
                if image:
                    try:
                        images.append(prepare(data, rel))
                    except ImageRefused as exc:
                        out.append(Attachment(rel, 1, 1, f"(image not attached: {exc})", "refused"))
                else:
                    out.append(_attachment(rel, data, start, end))
            break
    return out, images


def dropped_images(text: str, workspace: Path) -> tuple[list[ImageBlock], list[str]]:
    """Image files whose paths were dropped (pasted) into the message: the user named them, as they would attach a
    file in any program; only files that are images are read, each at most once. A path inside the workspace is
    read beneath it (coder/fs: no link followed out, since the sandbox shaped that tree). Also the reasons of
    those that could not be sent."""
    images: list[ImageBlock] = []
    refused: list[str] = []
    seen: set[str] = set()
    root = Path(os.path.realpath(workspace))
    for m in DROPPED.finditer(text):
        raw = next(g for g in m.groups() if g is not None).replace("\\ ", " ")
        path = Path(os.path.normpath(os.path.expanduser(raw)))
        if not looks_like_image(path) or str(path) in seen or len(images) >= MAX_FILES:
            continue
        seen.add(str(path))
        # inside the workspace as written, or once resolved (a link from elsewhere into it): read beneath it
        inside = _inside(Path(os.path.normpath(workspace)), root, str(path)) or _inside(root, root, str(path)) \
            or _inside(root, root, os.path.realpath(path))
        data = read_beneath(root, inside, MAX_SOURCE_BYTES + 1) if inside else _outside(path)
        if data is None:
            continue
        try:
            images.append(prepare(data, path.name))
        except ImageRefused as exc:
            refused.append(str(exc))
    return images, refused


def named(text: str, workspace: Path, cwd: Path | None = None) -> list[str]:
    """What sending `text` would attach, by name only (nothing read): each `@path` of a file inside the workspace
    and each dropped image path of a file, as the frontend's chips show them before the message is sent (issue
    47: a pasted image showed nothing until then). `attach` still decides, when it is sent."""
    out: list[str] = []
    root = Path(os.path.realpath(workspace))
    base = Path(os.path.realpath(cwd or workspace))
    for m in MENTION.finditer(text):
        raw = m.group(1)
        for candidate in (raw, raw.rstrip(".,;:!?)")):
            rel = _inside(root, base, candidate)
            if rel is not None and os.path.isfile(root / rel) and not os.path.islink(root / rel):
                kind = "image" if looks_like_image(rel) else "file"
                out.append(f"{kind} {rel}" + (f":{m.group(2)}" + (f"-{m.group(3)}" if m.group(3) else "")
                                              if m.group(2) else ""))
                break
    for m in DROPPED.finditer(text):
        raw = next(g for g in m.groups() if g is not None).replace("\\ ", " ")
        path = Path(os.path.normpath(os.path.expanduser(raw)))
        if looks_like_image(path) and path.is_file():
            out.append(f"image {path.name}")
    return list(dict.fromkeys(out))[:MAX_FILES]


def _outside(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def _inside(root: Path, base: Path, name: str) -> str | None:
    path = Path(os.path.normpath(base / name))
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    return None if str(rel) in (".", "") else rel.as_posix()


def _attachment(rel: str, data: bytes, start: int | None, end: int | None) -> Attachment:
    note = ""
    if len(data) > MAX_BYTES:
        data, note = data[:MAX_BYTES], f"cut at {MAX_BYTES // 1024} KB"
    if b"\0" in data[:8192]:
        return Attachment(rel, 1, 1, "(binary file, not attached)", "binary")
    lines = data.decode("utf-8", errors="replace").splitlines()
    first = max(1, start or 1)
    last = min(len(lines), end or len(lines)) if lines else 0
    if start is not None:
        note = note or f"lines {first}-{last} of {len(lines)}"
    return Attachment(rel, first, max(last, first - 1), "\n".join(lines[first - 1:last]), note)


def as_dicts(attachments: list[Attachment]) -> list[dict[str, Any]]:
    return [asdict(a) for a in attachments]


def blocks(attachments: list[dict[str, Any]]) -> list[str]:
    """The model's text blocks of stored attachments (the event's dicts)."""
    return [Attachment(**a).block() for a in attachments]


def chips(images: list[dict[str, Any]]) -> str:
    """How a transcript shows a message's images: one chip each, with its size (`[image shot.png 1568x784, 210
    KB]`)."""
    return "  ".join(f"[image {i.label()}]" for i in stored_images(images))


def stored_images(images: list[dict[str, Any]]) -> list[ImageBlock]:
    """The image blocks of a stored user message (the event's dicts)."""
    return [ImageBlock(**{k: v for k, v in i.items() if k != "type"}) for i in images]
