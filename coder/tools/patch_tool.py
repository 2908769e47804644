"""`apply_patch`: multi-file changes in the Codex patch format, all or nothing (see coder/edit/patch.py)."""

from __future__ import annotations

from typing import Any

from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult


class ApplyPatchTool(Tool):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from coder.edit.errors import EditError
        from coder.edit.patch_apply import apply_patch
        from coder.edit.state import EditState
        from coder.fsbeneath import EscapeError

        text = args.get("patch", args.get("input"))
        if not isinstance(text, str):
            return ToolResult("apply_patch needs the patch text in `patch` ('*** Begin Patch' ... "
                              "'*** End Patch')", is_error=True, data={"error": "usage"})
        cfg = ctx.config.get("edit", {}) if isinstance(ctx.config.get("edit"), dict) else {}
        try:
            outcome = apply_patch(text, ctx.workspace, ctx.cwd, EditState.of(ctx.services),
                                  syntax_guard=bool(cfg.get("syntax_guard", True)))
        except (EditError, EscapeError) as exc:  # EscapeError: a symlink met beneath the workspace
            return ToolResult(str(exc), is_error=True, data={"error": type(exc).__name__})
        except OSError as exc:
            return ToolResult(f"apply_patch failed: {exc}; no file was changed", is_error=True,
                              data={"error": "OSError"})
        return ToolResult(outcome.message, files_changed=outcome.files_changed, data={"diff": outcome.diff})
