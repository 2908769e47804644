"""Commit messages: Conventional Commits, a short body, and a trailer naming coder and the model.

With a model, `prompts/commit_message.md` asks for the message and the answer is normalised (type checked,
subject cut to 72 characters, our trailer added). Without one, or when the model fails, a deterministic
message is built from the diff and the task, so `coder run --commit` works offline and in tests.

The model arrives as `ask(system, user) -> text`, made by the caller (coder/review/gate.py) from its provider:
version control sits below the models and never imports them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath

from coder.base.resources import template
from coder.vcs.patch import FilePatch, parse_diff

#: one question to a model: (system prompt, user text) -> the answer's text
Ask = Callable[[str, str], str]

TYPES = ("feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert")
_HEADER_RE = re.compile(r"^(?P<type>[a-z]+)(?:\((?P<scope>[^)]{1,40})\))?(?P<bang>!)?: (?P<subject>.+)$")
SUBJECT_MAX = 72
_DOC_EXT = {".md", ".rst", ".txt", ".adoc"}
_BUILD_FILES = {"pyproject.toml", "setup.py", "setup.cfg", "package.json", "Cargo.toml", "go.mod", "Makefile",
                "requirements.txt", "poetry.lock", "package-lock.json", "Cargo.lock", "go.sum"}


def trailer(model_name: str) -> str:
    model = model_name.strip()
    return f"Generated-by: coder ({model})" if model and model != "none" else "Generated-by: coder"


def commit_message(diff: str, task: str, ask: Ask | None = None, model_name: str = "") -> str:
    """A commit message for `diff` made while doing `task`; `ask` puts the question to a model (None: none)."""
    files = parse_diff(diff)
    if ask is not None:
        try:
            normalised = normalise(ask(SYSTEM, _question(diff, task)), files, task)
            if normalised:
                return _with_trailer(normalised, model_name)
        except Exception:  # noqa: BLE001 - a broken model must never block a commit: fall back below
            pass
    return _with_trailer(fallback_message(files, task), model_name)


SYSTEM = "You write git commit messages."


def _question(diff: str, task: str) -> str:
    clipped = diff if len(diff) < 24000 else diff[:24000] + "\n[diff truncated]\n"
    return template("commit_message.md", ("task", "diff")).render(task=task.strip() or "(no task given)", diff=clipped)


#: answers that are about the model, not the change (a script that ran out, a refusal): use the fallback instead
_NOT_A_MESSAGE = re.compile(r"^(the script has no more turns|i can(no|')t|i'm sorry|sorry\b)", re.I)


def normalise(text: str, files: list[FilePatch], task: str) -> str | None:
    """Clean a model's answer into `type(scope): subject` + body; None when no usable header is found."""
    text = re.sub(r"^```[a-z]*\n|\n```\s*$", "", text.strip())
    if _NOT_A_MESSAGE.match(text):
        return None
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    header = lines[0].strip().strip("`")
    m = _HEADER_RE.match(header)
    if m and m.group("type") in TYPES:
        scope = f"({m.group('scope')})" if m.group("scope") else ""
        header = f"{m.group('type')}{scope}{m.group('bang') or ''}: {_subject(m.group('subject'))}"
    else:
        header = f"{_guess_type(files, task)}: {_subject(header)}"
    body = [line for line in lines[1:] if not re.match(r"^(Co-authored-by|Generated-by|Signed-off-by):", line)]
    body_text = "\n".join(body).strip()
    return header + ("\n\n" + body_text if body_text else "")


def _subject(text: str) -> str:
    text = " ".join(text.split()).rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    if len(text) > SUBJECT_MAX - 12:
        cut = text[: SUBJECT_MAX - 12].rsplit(" ", 1)[0]
        text = cut if len(cut) > 20 else text[: SUBJECT_MAX - 12]
    return text


def _with_trailer(message: str, model_name: str) -> str:
    return f"{message.rstrip()}\n\n{trailer(model_name)}\n"


_TRAILER_LINE = re.compile(r"^[A-Za-z][\w-]*: \S")


def add_trailers(message: str, trailers: list[str]) -> str:
    """`message` with `trailers` (`Key: value` lines) added to its trailer block, or as a new block after it."""
    lines = [t for t in trailers if t.strip()]
    if not lines:
        return message
    body = message.rstrip()
    last = body.rsplit("\n\n", 1)[-1]
    joined = "\n" if "\n\n" in body and all(_TRAILER_LINE.match(x) for x in last.splitlines()) else "\n\n"
    return body + joined + "\n".join(lines) + "\n"


def _is_test(path: str) -> bool:
    p = PurePosixPath(path)
    return (any(part in ("tests", "test", "__tests__", "spec") for part in p.parts[:-1])
            or p.name.startswith("test_") or p.stem.endswith(("_test", ".test", ".spec")) or p.name == "conftest.py")


def _guess_type(files: list[FilePatch], task: str) -> str:
    paths = [f.path for f in files]
    lowered = task.lower()
    if paths and all(_is_test(p) for p in paths):
        return "test"
    if paths and all(PurePosixPath(p).suffix in _DOC_EXT or p.startswith("docs/") for p in paths):
        return "docs"
    if paths and all(p.startswith((".github/", ".gitlab-ci", ".circleci/")) for p in paths):
        return "ci"
    if paths and all(PurePosixPath(p).name in _BUILD_FILES for p in paths):
        return "build"
    if re.search(r"\b(fix|bug|crash|error|broken|regression|wrong|fail)", lowered):
        return "fix"
    if re.search(r"\b(refactor|rename|clean ?up|simplify|extract)", lowered):
        return "refactor"
    if re.search(r"\b(speed|faster|perf|optimi[sz])", lowered):
        return "perf"
    if re.search(r"\b(add|implement|support|introduce|new|create)", lowered) or any(
        f.status == "added" and not _is_test(f.path) for f in files
    ):
        return "feat"
    return "chore"


def _scope(files: list[FilePatch]) -> str:
    """The one top-level package or folder all source changes share, if any."""
    dirs = set()
    for f in files:
        parts = PurePosixPath(f.path).parts
        if _is_test(f.path) or len(parts) < 2:
            continue
        if parts[0] in ("src", "lib", "pkg", "packages"):
            top = parts[1] if len(parts) > 2 else PurePosixPath(parts[1]).stem
        else:
            top = parts[0]
        dirs.add(top)
    return dirs.pop() if len(dirs) == 1 else ""


def fallback_message(files: list[FilePatch], task: str) -> str:
    """A message from the diff alone (and the task's first line): no model needed."""
    kind = _guess_type(files, task)
    scope = _scope(files)
    first = task.strip().splitlines()[0] if task.strip() else ""
    first = re.sub(r"^(please|can you|could you)\s+", "", first, flags=re.I)
    if first:
        subject = _subject(first)
    elif len(files) == 1:
        verb = {"added": "add", "deleted": "remove", "modified": "update"}[files[0].status]
        subject = f"{verb} {files[0].path}"
    else:
        subject = f"update {len(files)} files"
    header = f"{kind}({scope}): {subject}" if scope else f"{kind}: {subject}"
    body = []
    for f in files[:10]:
        if f.binary:
            body.append(f"- {f.path}: binary file {f.status}")
        else:
            body.append(f"- {f.path}: {f.status} (+{len(f.added)} -{len(f.removed)})")
    if len(files) > 10:
        body.append(f"- and {len(files) - 10} more file(s)")
    return header + ("\n\n" + "\n".join(body) if body else "")
