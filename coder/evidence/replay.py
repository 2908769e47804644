"""The evidence of another agent's recorded run (a mini-swe-agent trajectory), computed by the tracker a live
session uses, so benchmarks/evidence.py measures the very code sessions run against known outcomes.

What a replay lacks, and what stands in for it:
- no work tree to probe: the files that changed are those of the submitted patch, and a shell command changed
  them when it writes (coder.stuck.signals: `sed -i`, `cat > f`, `patch`, ...) and names them; an in-place writer
  whose paths are unknown or none of the patch's (`patch -p1 < fix.diff`, `git apply`, `git stash`) counts as
  changing every file of the patch; a patch file no command was seen writing changed with the last write seen
  (a script that edits files is invisible here, as it is not in a live session, where the probe sees it);
- no files to read: the text of a script is the here-document that wrote it (`cat > t.py << 'EOF'`), or the
  inline code; a test file's imports are unknown (its name still relates it to a changed module).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from coder.base import events as ev
from coder.evidence.record import Evidence
from coder.evidence.tracker import EvidenceTracker
from coder.policy.shellparse import split_command
from coder.stuck.replay import chat_steps
from coder.tools.registry import describe

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_IN_PLACE = re.compile(r"(^|[;&|(]\s*)(patch\b|git\s+(apply|checkout|restore|stash|am|reset)\b|sed\s+-i|"
                       r"perl\s+-\w*i)", re.M)
_HEREDOC_FILE = re.compile(r"cat\s+(?:>\s*(?P<a>\S+)\s+<<-?\s*['\"]?(?P<t1>\w+)['\"]?|"
                           r"<<-?\s*['\"]?(?P<t2>\w+)['\"]?\s*>\s*(?P<b>\S+))[^\n]*\n")


def patch_files(patch: str) -> list[str]:
    return sorted({m.group(2) for m in _DIFF_FILE.finditer(patch or "")})


class _Submitted:
    """The probe of a replay: the net change is the submitted patch's files; nothing is probed step by step."""

    def __init__(self, files: list[str]) -> None:
        self.files = files

    def changes(self) -> list[str]:
        return []

    def net(self) -> list[str] | None:
        return list(self.files)


def replay_evidence(messages: list[dict[str, Any]], submission: str, root: str = "/testbed") -> Evidence | None:
    """The record a session would end with for this recorded run (None when the submission changes no code)."""
    files = patch_files(submission)
    texts: dict[str, str] = {}
    tracker = EvidenceTracker(_Submitted(files), texts.get, [], None, root)  # type: ignore[arg-type]
    tracker.observe(ev.UserMessage("(the task)"))
    last_text, last_write = "", 0
    for step in chat_steps(messages):
        for event in step.events:
            if isinstance(event, ev.AssistantMessage):
                text = " ".join(b.get("text", "") for b in event.message.get("content", []))
                last_text = text or last_text
            elif isinstance(event, ev.ToolCallFinished):
                written = _writes(event, files, texts, root)
                if written:
                    last_write = tracker.tick + 3
                event = ev.ToolCallFinished(event.id, event.tool, event.input, event.output, event.is_error,
                                            written, event.duration_s, {**event.data, "cwd": root})
            tracker.observe(event)
    for path in files:  # a patch file no command was seen writing: changed with the last write seen
        tracker.last_change.setdefault(path, last_write)
    return tracker.record(last_text)


def _writes(event: ev.ToolCallFinished, files: list[str], texts: dict[str, str], root: str) -> list[str]:
    """The workspace files a recorded shell command wrote, as well as a replay can tell (see the module doc)."""
    line = describe(event.tool, event.input).shell
    if line is None:
        return list(event.files_changed)
    for m in _HEREDOC_FILE.finditer(line):
        rest = line[m.end():]
        end = re.search(rf"^\s*{m.group('t1') or m.group('t2')}\s*$", rest, re.M)
        texts[_relative(m.group("a") or m.group("b"), root)] = rest[: end.start() if end else len(rest)]
    targets, in_place = write_targets(line)
    paths = {_relative(p, root) for p in targets}
    if in_place and not paths & set(files):
        return list(files)
    return sorted(paths)


def write_targets(line: str) -> tuple[set[str], bool]:
    """(the files a shell line writes by name, whether it also changes files in place without naming them): output
    redirections, `sed -i`/`perl -i` files, `cp`/`mv`/`install` targets, `tee`/`touch`/`truncate`/`rm` arguments;
    `patch`, `git apply|checkout|restore|stash|am|reset` name none."""
    parsed = split_command(line)
    if not parsed.ok:
        return set(), bool(_IN_PLACE.search(line))
    paths: set[str] = set()
    in_place = False
    for part in parsed.parts:
        paths.update(part.writes_files)
        words = part.words
        name = PurePosixPath(words[0]).name if words else ""
        args = [w for w in words[1:] if not w.startswith("-")]
        if name in ("sed", "perl") and any(re.fullmatch(r"-\w*i\S*|--in-place\S*", w) for w in words[1:]):
            scripted = any(w in ("-e", "--expression") for w in words[1:])
            paths.update(args if scripted else args[1:])
        elif name in ("cp", "mv", "install") and len(args) >= 2:
            paths.update(args[-1:] if name != "mv" else args)
        elif name in ("tee", "touch", "truncate", "rm"):
            paths.update(args)
        elif name == "patch" or (name == "git" and args[:1] and args[0] in ("apply", "checkout", "restore", "stash",
                                                                             "am", "reset")):
            in_place = True
    return paths, in_place


def _relative(path: str, root: str) -> str:
    path = path.strip("'\"")
    if path.startswith(root + "/"):
        path = path[len(root) + 1:]
    return str(PurePosixPath(path))
