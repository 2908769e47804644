"""How the app's parts are wired to each other (issue 48, item 6), read from the source with `ast`.

Textual's rule is "attributes down, messages up": a part is handed what it shows and posts a message when
something happened; the app (the parent) acts; no part holds a sibling. The counts say how far coder/tui is from
that:

`state` (coder/tui/state.py) is the data the parts share, not a part: handing it down and setting its fields is
the rule, not against it. The app is the parts' parent: each part is handed it (to post messages, run workers,
query its widgets), which is the rule too, and is counted apart from the siblings.

- callbacks attached after construction: an assignment `self.PART.NAME = ...` (one part setting a field of
  another, in the app or in a part), the links that go against the order the parts are built in;
- peers handed to a part: the arguments of each part's constructor in `CoderApp.__init__` that are another part
  (`self.PART`) or something of one (`self.PART.NAME`, a bound method or a field);
- sibling fields: the fields a part keeps of another part (`self.NAME = PARAM` in its `__init__`, where PARAM was
  handed in as a peer); the app's field (`self.app = app`, or the app handed to `super().__init__`) is counted
  apart;
- reached through the app: `self.app.PART` in a part's module (the app is typed `App[Any]` in the parts, so
  basedpyright would refuse it too; this counts it anyway).

`python benchmarks/tui_wiring.py [CHECKOUT]` prints them for CHECKOUT's coder/tui (default: this one);
`--write-section --before CHECKOUT` writes benchmarks/sections/tui_wiring.md, CHECKOUT beside this one.
tests/tui/test_tui_wiring.py fails when they rise above this round's figures.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

#: what the parts share as data, not a part: the session, busy, the status figures (coder/tui/state.py)
DATA = {"state"}


@dataclass
class Wiring:
    parts: list[str]
    late: list[str] = field(default_factory=list)  # "file:line target = value"
    peers: dict[str, int] = field(default_factory=dict)  # part -> other parts (or their members) handed to it
    app_handed: int = 0  # parts handed the app
    siblings: list[str] = field(default_factory=list)  # "part.field" kept of another part
    app_fields: int = 0  # parts that keep the app
    through_app: list[str] = field(default_factory=list)  # "file:line self.app.PART"

    @property
    def built_with_peers(self) -> int:
        return sum(1 for n in self.peers.values() if n)


def _parts(app: ast.ClassDef) -> dict[str, ast.Call]:
    """The app's parts: `self.NAME = Class(...)` in CoderApp.__init__, with the call that builds each."""
    init = next(n for n in app.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    parts: dict[str, ast.Call] = {}
    for node in ast.walk(init):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1
                and isinstance(target := node.targets[0], ast.Attribute)
                and isinstance(target.value, ast.Name) and target.value.id == "self"
                and isinstance(node.value.func, ast.Name) and node.value.func.id[:1].isupper()):
            parts[target.attr] = node.value
    for name in DATA:
        parts.pop(name, None)
    return parts


def _is_app(arg: ast.expr) -> bool:
    return isinstance(arg, ast.Name) and arg.id == "self"


def _is_peer(arg: ast.expr, parts: dict[str, ast.Call]) -> bool:
    """`self.PART`, or anything reached from it (`self.PART.method`)."""
    while isinstance(arg, ast.Attribute):
        if isinstance(arg.value, ast.Name) and arg.value.id == "self":
            return arg.attr in parts
        arg = arg.value
    return False


def _super_init(node: ast.AST) -> bool:
    """`super().__init__(...)`."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super")


def measure(root: Path) -> Wiring:
    tui = root / "coder" / "tui"
    trees = {path.name: ast.parse(path.read_text()) for path in sorted(tui.glob("*.py"))}
    app = next(n for n in ast.walk(trees["app.py"]) if isinstance(n, ast.ClassDef) and n.name == "CoderApp")
    parts = _parts(app)
    wiring = Wiring(sorted(parts))
    classes = {n.name: n for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                            and isinstance(target.value.value, ast.Name) and target.value.value.id == "self"
                            and target.value.attr in parts | {"app": None}):
                        wiring.late.append(f"{name}:{node.lineno} {ast.unparse(target)} = {ast.unparse(node.value)}")
            if (name != "app.py" and isinstance(node, ast.Attribute) and node.attr in parts
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "app"
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"):
                wiring.through_app.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    for part, call in parts.items():
        wiring.peers[part] = sum(1 for a in call.args if _is_peer(a, parts)) + \
            sum(1 for k in call.keywords if _is_peer(k.value, parts))
        wiring.app_handed += any(_is_app(a) for a in call.args)
        cls = classes.get(call.func.id) if isinstance(call.func, ast.Name) else None
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls \
            else None
        if init is None:
            continue
        params = [a.arg for a in init.args.args[1:]]
        handed = {params[i]: a for i, a in enumerate(call.args) if i < len(params)}
        handed.update({k.arg: k.value for k in call.keywords if k.arg})
        for node in ast.walk(init):
            if _super_init(node) and any(isinstance(x, ast.Name) and _is_app(handed.get(x.id, x)) for x in node.args):
                wiring.app_fields += 1  # the app kept by the base class (coder/tui/part.py)
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in handed):
                continue
            given = handed[node.value.id]
            if _is_app(given):
                wiring.app_fields += 1
            elif _is_peer(given, parts):
                wiring.siblings.append(f"{part}.{ast.unparse(node.targets[0]).removeprefix('self.')}")
    return wiring


def _report(root: Path, m: Wiring) -> None:
    print(f"{root}: {len(m.parts)} parts ({', '.join(m.parts)})")
    print(f"callbacks attached after construction: {len(m.late)}")
    for line in m.late:
        print(f"  {line}")
    print(f"parts built with peers (another part, or something of one): {m.built_with_peers} of {len(m.parts)}, "
          f"at most {max(m.peers.values(), default=0)}; handed the app: {m.app_handed}")
    print("  " + ", ".join(f"{p} {n}" for p, n in sorted(m.peers.items(), key=lambda kv: -kv[1]) if n))
    print(f"sibling fields kept by parts: {len(m.siblings)}" + (f" ({', '.join(m.siblings)})" if m.siblings else ""))
    print(f"parts that keep the app: {m.app_fields}")
    print(f"parts reached through the app: {len(m.through_app)}")
    for line in m.through_app:
        print(f"  {line}")


def _commit(root: Path) -> str:
    """The last commit that changed the checkout's coder/tui (what the figures are of)."""
    out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h", "--", "coder/tui"], capture_output=True,
                         text=True)
    return out.stdout.strip() or root.name


def _section(before: Path, after: Path) -> str:
    b, a = measure(before), measure(after)
    rows = [
        ("parts", len(b.parts), len(a.parts)),
        ("callbacks attached after construction", len(b.late), len(a.late)),
        ("parts built with peers (another part, or something of one)", b.built_with_peers, a.built_with_peers),
        ("most peers handed to one part", max(b.peers.values(), default=0), max(a.peers.values(), default=0)),
        ("sibling fields kept by parts", len(b.siblings), len(a.siblings)),
        ("parts that keep the app (their parent: the rule)", b.app_fields, a.app_fields),
        ("parts reached through the app", len(b.through_app), len(a.through_app)),
    ]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["## The app's wiring (benchmarks/tui_wiring.py)", "",
             f"Command: `python benchmarks/tui_wiring.py --write-section --before CHECKOUT`; {when}; read from the "
             "source with `ast` (no timing: the machine's load does not matter). Definitions: the script's docstring.",
             "", f"| | before ({_commit(before)}) | after ({_commit(after)}) |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {x} | {y} |" for name, x, y in rows]
    lines += ["", f"Sibling fields left: {', '.join(a.siblings) or 'none'} (coder/tui/app.py's docstring says why)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("checkout", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--write-section", action="store_true", help="write benchmarks/sections/tui_wiring.md")
    parser.add_argument("--before", type=Path, help="the checkout to compare with (--write-section)")
    args = parser.parse_args()
    if args.write_section:
        if args.before is None:
            parser.error("--write-section needs --before CHECKOUT")
        text = _section(args.before, args.checkout)
        (Path(__file__).resolve().parent / "sections" / "tui_wiring.md").write_text(text)
        print(text)
        return
    _report(args.checkout, measure(args.checkout))


if __name__ == "__main__":
    main()
