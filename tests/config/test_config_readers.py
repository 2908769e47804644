"""Nothing outside coder/config reads a raw configuration table: no `config["sandbox"]`, no
`section.get("timeout", 120)`, no `cfg.get(...)`. Every reader goes through the typed model, so a value is checked
once, at load, and never cast again. Read from the AST of every module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: names a raw configuration table went by (and would again)
CONFIG_NAME = re.compile(r"^(config|cfg|conf|settings|section|rcfg|tcfg|\w+_config|\w+_cfg|\w+_section|\w+_settings)$")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.Call, ast.Subscript)):  # `load_config(...)["x"]`, `config["vcs"].get("y")`
        return _name(node.func if isinstance(node, ast.Call) else node.value)
    return None


def raw_reads(source: str) -> list[tuple[int, str]]:
    """(line, code) of each `X["key"]` or `X.get("key")` / `.setdefault` / `.pop` where X is named like a config."""
    found = []
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value,
                                                                                                     str):
            target = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "setdefault", "pop") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            target = node.func.value
        name = _name(target) if target is not None else None
        if name is not None and (CONFIG_NAME.match(name) or name == "load_config"):
            found.append((node.lineno, ast.unparse(node)[:100]))
    return found


def test_the_scan_finds_the_readers_it_is_for() -> None:
    """The control: the shapes the old readers had are found."""
    old = ('x = int(config["vcs"].get("keep_sessions", 20))\n'
           'cfg = ctx.config.get("edit", {})\n'
           'y = section.get("timeout")\n'
           'z = load_config(root)["_trusted"]\n'
           'w = self.review_config.get("tests", {})\n')
    assert len(raw_reads(old)) == 6
    assert raw_reads('config.sandbox.timeout\nrow["id"]\nenv.get("PATH")\n') == []


def test_no_module_outside_coder_config_reads_a_raw_table() -> None:
    offenders = []
    for path in sorted((ROOT / "coder").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("coder", "config"):
            continue
        offenders += [f"{rel}:{line}: {code}" for line, code in raw_reads(path.read_text(encoding="utf-8"))]
    assert not offenders, "read the typed configuration (coder/config/sections.py) instead:\n" + "\n".join(offenders)
