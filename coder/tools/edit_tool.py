"""`str_replace_based_edit_tool`: the Anthropic text-editor commands (view, create, str_replace, insert,
undo_edit) on top of coder/edit, plus two extensions: `edits` (several replacements in one file, all or
nothing) with `replace_all`, and `overwrite` for create.

The tool is a thin adapter: its params (`EditParams`, with what each command needs) and result formatting.
Matching, atomic writes, the syntax guard and the per-session state (undo, what was viewed) live in coder/edit, so
the batch runner and the reviewer use the very same behaviour."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from coder.base.errors import ToolError
from coder.base.schema import key
from coder.base.settings import SettingError
from coder.edit.errors import EditError, MatchError
from coder.edit.fileio import human_size, read_raw
from coder.edit.ops import Change, Editor
from coder.edit.state import EditState
from coder.edit.view import view
from coder.fs.beneath import EscapeError
from coder.models.images import MAX_SOURCE_BYTES, ImageRefused, looks_like_image, prepare
from coder.sandbox import aftercheck
from coder.tools.base import (
    DETAIL_LIMIT,
    CallFacts,
    ClaudeCall,
    PermissionClass,
    Tool,
    ToolContext,
    ToolContract,
    ToolResult,
    close_observers,
    generic_facts,
    observed,
)
from coder.tools.params import Params, written

Command = Literal["view", "create", "str_replace", "insert", "undo_edit"]


def _view_range(value: list[int]) -> None:
    if len(value) != 2:
        raise ValueError("must be [start, end] (end -1 = to the end)")


@dataclass(frozen=True)
class EditItem(Params):
    """One replacement of `edits`."""

    old_str: str
    new_str: str
    replace_all: bool = False


@dataclass(frozen=True)
class EditParams(Params):
    """tools/str_replace_based_edit_tool.json; `check` says what each command needs beyond `command` and `path`."""

    command: Command
    path: str
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = None
    insert_text: str | None = None
    view_range: list[int] | None = key(None, check=_view_range)
    edits: list[EditItem] | None = None
    replace_all: bool = False
    overwrite: bool = False

    def check(self) -> None:
        if self.command == "create" and self.file_text is None:
            raise SettingError("file_text", "`create` needs the whole content of the new file in file_text")
        if self.command == "str_replace" and self.edits is None and self.old_str is None:
            raise SettingError("old_str", "`str_replace` needs old_str (or edits: a list of {old_str, new_str})")
        if self.command == "insert" and self.insert_line is None:
            raise SettingError("insert_line", "`insert` needs insert_line (0 = before the first line)")
        if self.command == "insert" and self.inserted is None:
            raise SettingError("insert_text", "`insert` needs the text to insert in insert_text (or new_str)")

    @property
    def inserted(self) -> str | None:
        """The text an `insert` inserts: insert_text, or new_str (the contract allows both)."""
        return self.insert_text if self.insert_text is not None else self.new_str


class EditTool(Tool[EditParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def close(self) -> None:
        close_observers(self._services)

    def permission_for(self, params: EditParams, ctx: ToolContext) -> PermissionClass:
        """A view only reads (the contract's `read_commands`); every other command writes."""
        return "read" if params.command in self.contract.read_commands else self.contract.permission

    def facts(self, params: EditParams) -> CallFacts:
        """One file: a view reads it (a later view or edit makes the result stale), every other command writes it
        (edit rules, protected paths and the stay-in-the-workspace rule hold). A prompt shows the change."""
        path, command = params.path, params.command
        if not path:
            return generic_facts(self.contract.name, {"command": command, "path": path}, self.contract.maskable)
        view = command in self.contract.read_commands
        title = f"{'view' if view else 'edit'} {path}" + ("" if command in ("view", "str_replace") else
                                                            f" ({command})")
        detail = [f"{command} {path}"]
        for name, text in (("old_str", params.old_str), ("new_str", params.new_str),
                           ("file_text", params.file_text), ("insert_text", params.insert_text)):
            if text:
                detail.append(f"{name}: {text[:DETAIL_LIMIT // 2]}")
        return CallFacts(title, "\n".join(detail), paths=(path,), writes=not view, reads=view,
                         maskable=self.contract.maskable)

    def claude_call(self, params: EditParams, cwd: Path) -> ClaudeCall:
        """A view is Claude Code's `Read`, a create its `Write`, several edits its `MultiEdit`, every other
        command its `Edit` (an insert as new text at a line, an undo with nothing else)."""
        target: dict[str, Any] = {"file_path": os.path.join(cwd, params.path)}
        command = params.command
        if command in self.contract.read_commands:
            rng = params.view_range
            if rng is not None:
                target.update(offset=rng[0], **({"limit": rng[1] - rng[0] + 1} if rng[1] >= rng[0] else {}))
            return ClaudeCall("Read", target)
        if command == "create":
            return ClaudeCall("Write", {**target, "content": params.file_text or ""})
        if params.edits is not None:
            edits = [{"old_string": e.old_str, "new_string": e.new_str} for e in params.edits]
            return ClaudeCall("MultiEdit", {**target, "edits": edits})
        if command == "insert":
            return ClaudeCall("Edit", {**target, "old_string": "", "new_string": params.inserted or "",
                                       "insert_line": params.insert_line})
        if command == "str_replace":
            return ClaudeCall("Edit", {**target, "old_string": params.old_str or "",
                                       "new_string": params.new_str or "", "replace_all": params.replace_all})
        return ClaudeCall("Edit", {**target, "command": command})

    def from_claude(self, updated: ClaudeCall, params: EditParams, cwd: Path) -> dict[str, Any]:
        """The fields `claude_call` gave, taken back into this call's input (the command stays the call's)."""
        out = written(params)
        theirs = updated.input
        path = theirs.get("file_path")
        if isinstance(path, str) and path:
            out["path"] = os.path.relpath(path, cwd) if os.path.isabs(path) else path
        fields = {"create": {"content": "file_text"},
                  "str_replace": {"old_string": "old_str", "new_string": "new_str", "replace_all": "replace_all"},
                  "insert": {"new_string": "insert_text", "insert_line": "insert_line"}}.get(params.command, {})
        if params.command == "insert" and "new_string" in theirs:
            out.pop("new_str", None)  # the text an insert inserts: in one key
        for their_key, ours in fields.items():
            if their_key in theirs:
                out[ours] = theirs[their_key]
        if isinstance(theirs.get("edits"), list) and params.edits is not None:
            out["edits"] = [{"old_str": e.get("old_string", ""), "new_str": e.get("new_string", "")}
                            for e in theirs["edits"] if isinstance(e, dict)]
        return out

    def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        self._services = ctx.services
        result = observed(ctx, self.facts(params), lambda: self._reported(params, ctx))
        aftercheck.accept(ctx.workspace, result.files_changed)  # written with the user's say: no leftover
        return result

    def _reported(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        """The call's outcome, its failures as results the model reads."""
        try:
            return self._run(params, ctx)
        except MatchError as exc:
            return ToolResult(str(exc), is_error=True, data={"error": exc.kind, "lines": exc.lines})
        except (EditError, ToolError, EscapeError) as exc:  # EscapeError: a symlink met beneath the workspace
            return ToolResult(str(exc), is_error=True, data={"error": type(exc).__name__})
        except OSError as exc:  # a file system failure we did not foresee: still a result the model can read
            return ToolResult(f"{params.command} failed: {exc}; nothing was changed", is_error=True,
                              data={"error": "OSError"})

    def _run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        command, path = params.command, params.path
        cfg = ctx.config.edit
        editor = Editor(ctx.workspace, ctx.cwd, EditState.of(ctx.services), syntax_guard=cfg.syntax_guard,
                        max_bytes=cfg.max_bytes)
        if command == "view" and looks_like_image(path):
            return _view_image(editor, path)
        if command == "view":
            result = view(editor, path, params.view_range, cfg.view_max_chars)
            return ToolResult(result.text, data={"path": result.display, "truncated": result.truncated})
        if command == "create":
            outcome = editor.create(path, params.file_text or "", overwrite=params.overwrite)
        elif command == "str_replace" and params.edits is not None:
            outcome = editor.multi_edit(path, [Change(e.old_str, e.new_str, e.replace_all) for e in params.edits])
        elif command == "str_replace":
            outcome = editor.str_replace(path, params.old_str or "", params.new_str or "", params.replace_all)
        elif command == "insert":
            assert params.insert_line is not None  # the params' check
            outcome = editor.insert(path, params.insert_line, params.inserted or "")
        else:
            outcome = editor.undo(path)
        return ToolResult(outcome.message, files_changed=[outcome.display],
                          data={"path": outcome.display, "diff": outcome.diff, "strategies": outcome.strategies})


def _view_image(editor: Editor, path: str) -> ToolResult:
    """`view` of a PNG, JPEG, GIF or WebP file (issue 35; other formats Pillow reads are converted): the image
    itself, made to obey the API's rules, after one line saying what it is. Read beneath the workspace like any
    view (coder/edit/paths.py); a file that is no image is an error the model reads."""
    loc = editor.locate(path, for_write=False)
    raw, _ = read_raw(loc, MAX_SOURCE_BYTES + 1)
    display = editor.display(loc.path)
    try:
        image = prepare(raw, display)
    except ImageRefused as exc:
        raise ToolError(str(exc)) from exc
    sent = f"{image.width}x{image.height}"
    return ToolResult(f"{display}: image, sent as {image.media_type} {sent} ({human_size(len(raw))} on disk)",
                      data={"path": display, "image": sent}, images=[image])
