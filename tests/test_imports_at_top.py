"""Imports sit at the top of their module, where a reader finds them and the layer checker sees them at once
(issue 34). An import inside a function is kept only where start-up time needs it (`coder --version` and
`coder --help` must not load what only a command uses; the SDKs, Textual, tree-sitter, asyncio and the like load
when they are used) or where a dependency is optional, and then a comment on it, or on the line above it, says so.
One comment covers a run of imports that follow each other."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: folders being rewritten by other work of this round; each entry goes when its work lands
PENDING = {
}


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def _runs(body: list[ast.stmt]) -> list[list[ast.Import | ast.ImportFrom]]:
    """The runs of import statements that follow each other in one block."""
    runs: list[list[ast.Import | ast.ImportFrom]] = []
    for previous, stmt in zip([None, *body], body, strict=False):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            if isinstance(previous, ast.Import | ast.ImportFrom):
                runs[-1].append(stmt)
            else:
                runs.append([stmt])
    return runs


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists inside `node` (a function's body, its ifs, loops, withs and trys), not those of the
    functions and classes defined in it, which are looked at on their own."""
    found: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        part = getattr(node, field, None)
        if not isinstance(part, list):
            continue
        statements = [s for s in part if isinstance(s, ast.stmt)]
        if statements:
            found.append(statements)
        for child in part:
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.extend(_blocks(child))
    return found


def uncommented_lazy_imports(source: str) -> list[int]:
    """Line numbers of the imports inside functions that no comment explains."""
    tree = ast.parse(source)
    comments = _comment_lines(source)
    lines = source.splitlines()
    found: list[int] = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for body in _blocks(func):
            for run in _runs(body):
                first, last = run[0].lineno, run[-1].end_lineno or run[-1].lineno
                above = first - 1
                while above >= 1 and not lines[above - 1].strip():
                    above -= 1
                explained = (above in comments and lines[above - 1].lstrip().startswith("#")) or any(
                    n in comments for n in range(first, last + 1))
                if not explained:
                    found.extend(stmt.lineno for stmt in run)
    return sorted(found)


def test_imports_inside_functions_say_why() -> None:
    unexplained = {}
    for path in sorted((ROOT / "coder").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(tuple(PENDING)):
            continue
        lines = uncommented_lazy_imports(path.read_text(encoding="utf-8"))
        if lines:
            unexplained[rel] = lines
    assert not unexplained, ("move these imports to the top of their module, or say on them why start-up time "
                             f"needs them inside the function: {unexplained}")


def test_the_check_finds_an_unexplained_import() -> None:
    """The control: a bare import in a function is found; a commented one, a run under one comment, and the
    module's own top imports are not."""
    source = (
        "import os\n\n\n"
        "def bare():\n    import json\n\n    return json\n\n\n"
        "def said():\n    import numpy  # start-up time: numpy loads when a map is ranked\n    return numpy\n\n\n"
        "def run():\n    # start-up time: the SDKs load with the first request\n    import anthropic\n"
        "    import openai\n\n    return anthropic, openai\n\n\n"
        "def nested():\n    def inner():\n        import yaml\n        return yaml\n    return inner\n"
    )
    assert uncommented_lazy_imports(source) == [5, 25]
