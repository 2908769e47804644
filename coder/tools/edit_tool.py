"""`str_replace_based_edit_tool`: the Anthropic text-editor commands (view, create, str_replace, insert,
undo_edit) on top of coder/edit, plus two extensions: `edits` (several replacements in one file, all or
nothing) with `replace_all`, and `overwrite` for create.

The tool is a thin adapter: argument checking and result formatting. Matching, atomic writes, the syntax
guard and the per-session state (undo, what was viewed) live in coder/edit, so the batch runner and the
reviewer use the very same behaviour."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coder.base.errors import ToolError
from coder.edit.errors import EditError, MatchError
from coder.edit.fileio import human_size, read_raw
from coder.edit.ops import Editor
from coder.edit.state import EditState
from coder.edit.view import view
from coder.fs.beneath import EscapeError
from coder.models.images import MAX_SOURCE_BYTES, ImageRefused, looks_like_image, prepare
from coder.sandbox import aftercheck
from coder.tools.base import (
    DETAIL_LIMIT,
    CallFacts,
    ClaudeCall,
    Tool,
    ToolContext,
    ToolContract,
    ToolResult,
    close_observers,
    generic_facts,
    observed,
)

COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise ToolError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ToolError(f"{name} must be an integer, got {value!r}")


def _str(args: dict[str, Any], name: str, required: bool = True, default: str | None = None) -> str | None:
    value = args.get(name, default)
    if value is None:
        if required:
            raise ToolError(f"`{args.get('command')}` needs the parameter {name}")
        return None
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string, got {type(value).__name__}")
    return value


class EditTool(Tool):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def close(self) -> None:
        close_observers(self._services)

    def facts(self, args: dict[str, Any]) -> CallFacts:
        """One file: a view reads it (a later view or edit makes the result stale), every other command writes it
        (edit rules, protected paths and the stay-in-the-workspace rule hold). A prompt shows the change."""
        path, command = args.get("path"), args.get("command")
        if not isinstance(path, str) or not path:
            return generic_facts(self.contract.name, args, self.contract.maskable)
        view = command in self.contract.read_commands
        title = f"{'view' if view else 'edit'} {path}" + ("" if command in ("view", "str_replace") else
                                                            f" ({command})")
        detail = [f"{command} {path}"]
        for key in ("old_str", "new_str", "file_text", "insert_text"):
            if args.get(key):
                detail.append(f"{key}: {str(args[key])[:DETAIL_LIMIT // 2]}")
        return CallFacts(title, "\n".join(detail), paths=(path,), writes=not view, reads=view,
                         maskable=self.contract.maskable)

    def claude_call(self, args: dict[str, Any], cwd: Path) -> ClaudeCall:
        """A view is Claude Code's `Read`, a create its `Write`, several edits its `MultiEdit`, every other
        command its `Edit` (an insert as new text at a line, an undo with nothing else)."""
        path = args.get("path")
        target = {"file_path": os.path.join(cwd, path) if isinstance(path, str) else ""}
        command = args.get("command")
        if command in self.contract.read_commands:
            rng = args.get("view_range")
            if isinstance(rng, list) and len(rng) == 2 and all(isinstance(n, int) for n in rng):
                target.update(offset=rng[0], **({"limit": rng[1] - rng[0] + 1} if rng[1] >= rng[0] else {}))
            return ClaudeCall("Read", target)
        if command == "create":
            return ClaudeCall("Write", {**target, "content": args.get("file_text", "")})
        if isinstance(args.get("edits"), list):
            edits = [{"old_string": e.get("old_str", ""), "new_string": e.get("new_str", "")}
                     for e in args["edits"] if isinstance(e, dict)]
            return ClaudeCall("MultiEdit", {**target, "edits": edits})
        if command == "insert":
            return ClaudeCall("Edit", {**target, "old_string": "", "new_string": args.get("insert_text", ""),
                                       "insert_line": args.get("insert_line")})
        if command == "str_replace":
            return ClaudeCall("Edit", {**target, "old_string": args.get("old_str", ""),
                                       "new_string": args.get("new_str", ""),
                                       "replace_all": bool(args.get("replace_all", False))})
        return ClaudeCall("Edit", {**target, "command": command})

    def from_claude(self, updated: dict[str, Any], args: dict[str, Any], cwd: Path) -> dict[str, Any]:
        """The fields `claude_call` gave, taken back into this call's input (the command stays the call's)."""
        out = dict(args)
        path = updated.get("file_path")
        if isinstance(path, str) and path:
            out["path"] = os.path.relpath(path, cwd) if os.path.isabs(path) else path
        fields = {"content": "file_text", "old_string": "old_str", "new_string": "new_str",
                  "replace_all": "replace_all", "insert_line": "insert_line"}
        if out.get("command") == "insert":
            fields["new_string"] = "insert_text"
        for theirs, ours in fields.items():
            if theirs in updated and (ours in args or theirs in ("content", "old_string", "new_string")):
                out[ours] = updated[theirs]
        if isinstance(updated.get("edits"), list) and "edits" in args:
            out["edits"] = [{"old_str": e.get("old_string", ""), "new_str": e.get("new_string", "")}
                            for e in updated["edits"] if isinstance(e, dict)]
        return out

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self._services = ctx.services
        result = observed(ctx, self.facts(args), lambda: self._reported(args, ctx))
        aftercheck.accept(ctx.workspace, result.files_changed)  # written with the user's say: no leftover
        return result

    def _reported(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The call's outcome, its failures as results the model reads."""
        try:
            return self._run(args, ctx)
        except MatchError as exc:
            return ToolResult(str(exc), is_error=True, data={"error": exc.kind, "lines": exc.lines})
        except (EditError, ToolError, EscapeError) as exc:  # EscapeError: a symlink met beneath the workspace
            return ToolResult(str(exc), is_error=True, data={"error": type(exc).__name__})
        except OSError as exc:  # a file system failure we did not foresee: still a result the model can read
            return ToolResult(f"{args.get('command')} failed: {exc}; nothing was changed", is_error=True,
                              data={"error": "OSError"})

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args.get("command")
        if command not in COMMANDS:
            raise ToolError(f"unknown command {command!r}; use one of: {', '.join(COMMANDS)}")
        cfg = ctx.config.edit
        editor = Editor(ctx.workspace, ctx.cwd, EditState.of(ctx.services), syntax_guard=cfg.syntax_guard,
                        max_bytes=cfg.max_bytes)
        path = _str(args, "path")
        assert path is not None
        if command == "view" and looks_like_image(path):
            return _view_image(editor, path)
        if command == "view":
            view_range = args.get("view_range")
            if view_range is not None:
                if not isinstance(view_range, (list, tuple)) or len(view_range) != 2:
                    raise ToolError(f"view_range must be [start, end] (end -1 = to the end), got {view_range!r}")
                view_range = [_int(view_range[0], "view_range[0]"), _int(view_range[1], "view_range[1]")]
            result = view(editor, path, view_range, cfg.view_max_chars)
            return ToolResult(result.text, data={"path": result.display, "truncated": result.truncated})
        if command == "create":
            text = _str(args, "file_text")
            outcome = editor.create(path, text or "", overwrite=bool(args.get("overwrite", False)))
        elif command == "str_replace":
            edits = args.get("edits")
            if edits is not None:
                if not isinstance(edits, list):
                    raise ToolError("edits must be a list of {old_str, new_str[, replace_all]} objects")
                outcome = editor.multi_edit(path, edits)
            else:
                old = _str(args, "old_str")
                new = _str(args, "new_str", required=False, default="")
                outcome = editor.str_replace(path, old or "", new or "", bool(args.get("replace_all", False)))
        elif command == "insert":
            if "insert_line" not in args:
                raise ToolError("`insert` needs insert_line (0 = before the first line)")
            text = args.get("insert_text", args.get("new_str"))
            if not isinstance(text, str):
                raise ToolError("`insert` needs the text to insert in insert_text (or new_str)")
            outcome = editor.insert(path, _int(args["insert_line"], "insert_line"), text)
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
