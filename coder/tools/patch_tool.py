"""`apply_patch`: multi-file changes in the Codex patch format, all or nothing (see coder/edit/patch.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.edit.errors import EditError, PatchError
from coder.edit.patch import parse_patch
from coder.edit.patch_apply import apply_patch
from coder.edit.state import EditState
from coder.fs.beneath import EscapeError
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
    observed,
)
from coder.tools.params import Params

_PATCH_PATH = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)


def patch_paths(patch: str) -> list[str]:
    """The files a patch text touches (`*** Add/Update/Delete File: P`, `*** Move to: P`): what the patch parser
    reads (so a policy check can never see other paths than the write), plus every header line the pattern
    finds, for a patch the parser rejects or reads differently."""
    found = [m.group(1).strip() for m in _PATCH_PATH.finditer(patch or "")]
    try:
        ops = parse_patch(patch).ops
    except PatchError:
        ops = []
    found += [path for op in ops for path in (op.path, op.move_to) if path]
    return list(dict.fromkeys(p for p in found if p))


@dataclass(frozen=True)
class PatchParams(Params):
    """tools/apply_patch.json: the patch text."""

    patch: str

    @classmethod
    def normalize(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """Codex's own apply_patch calls the text `input`, which models trained on it write."""
        if "patch" not in raw and "input" in raw:
            return {"patch": raw["input"], **{k: v for k, v in raw.items() if k != "input"}}
        return raw


class ApplyPatchTool(Tool[PatchParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def facts(self, params: PatchParams) -> CallFacts:
        """Writes every file the patch names (each one is checked by the policy, and supersedes older views)."""
        paths = tuple(patch_paths(params.patch))
        title = "patch " + (", ".join(paths[:3]) + (" …" if len(paths) > 3 else "") if paths else "(files)")
        return CallFacts(title, params.patch[:DETAIL_LIMIT], paths=paths, writes=True,
                         maskable=self.contract.maskable)

    def claude_call(self, params: PatchParams, cwd: Path) -> ClaudeCall:
        """Claude Code has no patch tool: a patch is its `Edit` of the first file it names (what `Edit|Write`
        hooks, formatters for one, read), with every file in `file_paths` and the text in `patch`."""
        paths = [os.path.join(cwd, p) for p in patch_paths(params.patch)]
        return ClaudeCall("Edit", {"file_path": paths[0] if paths else "", "file_paths": paths,
                                   "patch": params.patch})

    def from_claude(self, updated: ClaudeCall, params: PatchParams, cwd: Path) -> dict[str, Any]:
        patch = updated.input.get("patch")
        return {"patch": patch if isinstance(patch, str) else params.patch}

    def run(self, params: PatchParams, ctx: ToolContext) -> ToolResult:
        self._services = ctx.services
        result = observed(ctx, self.facts(params), lambda: self._apply(params.patch, ctx))
        aftercheck.accept(ctx.workspace, result.files_changed)  # written with the user's say: no leftover
        return result

    def _apply(self, text: str, ctx: ToolContext) -> ToolResult:
        try:
            outcome = apply_patch(text, ctx.workspace, ctx.cwd, EditState.of(ctx.services),
                                  syntax_guard=ctx.config.edit.syntax_guard, max_bytes=ctx.config.edit.max_bytes)
        except (EditError, EscapeError) as exc:  # EscapeError: a symlink met beneath the workspace
            return ToolResult(str(exc), is_error=True, data={"error": type(exc).__name__})
        except OSError as exc:
            return ToolResult(f"apply_patch failed: {exc}; no file was changed", is_error=True,
                              data={"error": "OSError"})
        return ToolResult(outcome.message, files_changed=outcome.files_changed, data={"diff": outcome.diff})

    def close(self) -> None:
        close_observers(self._services)
