"""Tool names live in `coder/tools` (issue 34): every other module asks a call's tool what it needs to know
(`Tool.facts` -> `CallFacts`, `coder.tools.registry.describe` for a name alone), so a tool can be renamed or added
without a hunt through the frontends, the stores and the detectors.

The check reads every string literal under `coder/` outside `coder/tools` (docstrings aside) and fails on one that
is exactly the name of a built-in tool (`tools/*.json`), unless the list below names that file and that word with
the reason it is not a tool name there: the same word in another vocabulary (a tree-sitter grammar, the permission
language's `bash(...)` rule, a slash command, an event type), or other agents' vocabularies in replay code. An entry
counts its literals, so a new use in a listed file still fails; an entry that no longer matches fails too (remove
it)."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, word) -> (how many literals, why it is not a tool name there)
NOT_TOOL_NAMES: dict[tuple[str, str], tuple[int, str]] = {
    # the same word in another vocabulary
    ("coder/codeintel/languages.py", "bash"): (3, "the tree-sitter grammar of shell scripts"),
    ("coder/codeintel/names.py", "bash"): (2, "the tree-sitter grammar of shell scripts"),
    ("coder/codeintel/outline.py", "bash"): (1, "the tree-sitter grammar of shell scripts"),
    ("coder/codeintel/queries.py", "bash"): (2, "the tree-sitter grammar of shell scripts"),
    ("coder/policy/shellparse.py", "bash"): (1, "the tree-sitter grammar of shell scripts"),
    ("coder/batch/agent_warm.py", "bash"): (1, "the tree-sitter grammar of shell scripts"),
    ("coder/policy/rules.py", "bash"): (2, "a program a shell line runs; the permission language's bash(...) rule"),
    ("coder/policy/patterns.py", "bash"): (1, "the permission language's bash(...) rule (it covers any shell line)"),
    ("coder/policy/claude_rules.py", "bash"): (1, "the permission language's bash rule, which Claude Code's Bash "
                                                  "rules become"),
    ("coder/store/export.py", "bash"): (1, "the Agent Data Protocol's word for a shell command's language"),
    ("coder/base/events.py", "todo"): (1, "the type of the TodoUpdated event (stored sessions keep it)"),
    ("coder/commands/builtin.py", "todo"): (1, "the /todo slash command"),
    ("coder/commands/slash.py", "todo"): (1, "the /todo slash command"),
    ("coder/trust/reader.py", "skill"): (1, "the kind of thing a repository defines (a skill folder)"),
    ("coder/vcs/message.py", "task"): (1, "a variable of the commit-message prompt"),
    ("coder/models/script.py", "web_search"): (2, "a scripted turn's key: the server-side searches the fake runs"),
    ("coder/evidence/commands.py", "bash"): (2, "a program a shell line runs (a script's interpreter, `bash x.sh`)"),
    ("coder/evidence/runners.py", "todo"): (2, "Jest's and node's word for a test not written yet, in their summaries"),
    # other agents' vocabularies, in replay code
    ("coder/context/replay.py", "bash"): (2, "SWE-agent's shell tool, in the trajectories it replays"),
    ("coder/stuck/replay.py", "bash"): (1, "other agents' shell tool, in the trajectories the stuck benchmark replays"),
}


def tool_names() -> set[str]:
    return {json.loads(p.read_text(encoding="utf-8"))["name"] for p in (ROOT / "tools").glob("*.json")}


def tool_name_literals(root: Path, names: set[str]) -> Counter[tuple[str, str]]:
    """(file, word) -> how many string literals outside `coder/tools` are exactly a tool's name."""
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted((root / "coder").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("coder/tools/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.value) for node in ast.walk(tree)
                      if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and id(node) not in docstrings):
                found[(rel, node.value)] += 1
    return found


def test_no_module_outside_coder_tools_names_a_tool() -> None:
    found = tool_name_literals(ROOT, tool_names())
    unexplained = {key: n for key, n in found.items() if n > NOT_TOOL_NAMES.get(key, (0, ""))[0]}
    assert not unexplained, ("ask the call's tool (Tool.facts, coder.tools.registry.describe) instead of naming it: "
                             f"{unexplained}")
    stale = {key for key, (n, _) in NOT_TOOL_NAMES.items() if found.get(key, 0) < n}
    assert not stale, f"these entries no longer match the code: lower or remove them: {stale}"


def test_the_check_sees_a_tool_name(tmp_path: Path) -> None:
    """The control: a module that compares a call's tool with a name is found, and its docstring is not."""
    (tmp_path / "coder" / "frontend").mkdir(parents=True)
    (tmp_path / "coder" / "tools").mkdir()
    (tmp_path / "coder" / "frontend" / "view.py").write_text(
        '"""Shows bash calls."""\n\ndef running(tool: str) -> bool:\n    return tool == "bash"\n')
    (tmp_path / "coder" / "tools" / "bash_tool.py").write_text('NAME = "bash"\n')
    assert tool_name_literals(tmp_path, {"bash"}) == Counter({("coder/frontend/view.py", "bash"): 1})
