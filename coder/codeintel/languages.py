"""Tree-sitter grammars from the per-language wheels, looked up by file extension.

Shared by the code index, the edit syntax guard and the reviewer's parse check. Grammars load lazily and
once per process; an unknown extension or a missing wheel gives None (callers fall back to text)."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import Any

#: language name -> (module, function returning the language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rb": "ruby",
    ".sh": "bash", ".bash": "bash",
}


def language_name(path: str | Path) -> str | None:
    """The language of `path` by its extension, or None."""
    return EXTENSIONS.get(Path(path).suffix.lower())


@cache
def language(name: str) -> Any | None:
    """The tree_sitter.Language for `name`, or None when its grammar wheel is missing."""
    if name not in GRAMMARS:
        return None
    module_name, func = GRAMMARS[name]
    try:
        # start-up time: tree-sitter loads only when this runs
        from tree_sitter import Language

        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return Language(getattr(module, func)())


def parser(name: str) -> Any | None:
    """A new tree_sitter.Parser for `name` (parsers are not thread-safe: one per thread), or None."""
    lang = language(name)
    if lang is None:
        return None
    # start-up time: tree-sitter loads only when this runs
    from tree_sitter import Parser

    return Parser(lang)


def parser_for(path: str | Path) -> Any | None:
    name = language_name(path)
    return parser(name) if name else None
