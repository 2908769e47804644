"""Errors of the edit library. Each carries a message written for the model: what was wrong, where, and
what to do next, because an edit error that only says "failed" costs the agent a turn of guessing."""

from __future__ import annotations

from coder.base.errors import ToolError


class EditError(ToolError):
    """Any refused edit. The file on disk is untouched when this is raised."""


class PathError(EditError):
    """The path is empty, outside the workspace, a device, a directory where a file is needed, ..."""


class FileFormatError(EditError):
    """Binary, image, invalid UTF-8 or too large to edit safely."""


class MatchError(EditError):
    """old_str (or a patch hunk) did not match exactly one place. `kind` is one of
    "no-match", "multiple", "identical", "empty", "no-change"."""

    def __init__(self, message: str, kind: str = "no-match", lines: list[int] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.lines = lines or []


class SyntaxGuardError(EditError):
    """The edit would turn a file that parses cleanly into one with parse errors."""


class StaleFileError(EditError):
    """The file changed on disk since the model viewed it, or while we were editing it."""


class PatchError(EditError):
    """A malformed apply_patch text, or a patch that cannot be applied (all files left as they were)."""
