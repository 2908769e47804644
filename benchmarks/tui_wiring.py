"""How the app's parts are wired to each other (issue 48, item 6), read from the source with `ast`.

Textual's rule is "attributes down, messages up": a part is handed what it shows and posts a message when
something happened; no part holds a sibling. Three counts say how far coder/tui is from that:

`state` (coder/tui/state.py) is the data the parts share, not a part: handing it down and setting its fields is
the rule, not against it.

- callbacks attached after construction: an assignment `self.PART.NAME = ...` (one part setting a field of
  another, in the app or in a part), the links that go against the order the parts are built in;
- peers handed to a part: the arguments of each part's constructor in `CoderApp.__init__` that are the app or
  another part (`self`, `self.PART`);
- sibling fields: the fields a part keeps of the app or of another part (`self.NAME = PARAM` in its `__init__`,
  where PARAM was handed in as a peer).

`python benchmarks/tui_wiring.py [CHECKOUT]` prints them for CHECKOUT's coder/tui (default: this one).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: what the parts share as data, not a part: the session, busy, the status figures (coder/tui/state.py)
DATA = {"state"}


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


def _is_peer(arg: ast.expr, parts: dict[str, ast.Call]) -> bool:
    if isinstance(arg, ast.Name):
        return arg.id == "self"
    return (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "self"
            and arg.attr in parts)


def measure(root: Path) -> dict[str, object]:
    tui = root / "coder" / "tui"
    trees = {path.name: ast.parse(path.read_text()) for path in sorted(tui.glob("*.py"))}
    app = next(n for n in ast.walk(trees["app.py"]) if isinstance(n, ast.ClassDef) and n.name == "CoderApp")
    parts = _parts(app)
    classes = {n.name: n for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    late: list[str] = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                        and isinstance(target.value.value, ast.Name) and target.value.value.id == "self"
                        and target.value.attr in parts | {"app": None}):
                    late.append(f"{name}:{node.lineno} {ast.unparse(target)} = {ast.unparse(node.value)}")
    peers: dict[str, int] = {}
    fields = 0
    for part, call in parts.items():
        handed = [a for a in call.args if _is_peer(a, parts)]
        peers[part] = len(handed)
        cls = classes.get(call.func.id) if isinstance(call.func, ast.Name) else None
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls \
            else None
        if init is None:
            continue
        params = [a.arg for a in init.args.args[1:]]
        peer_params = {params[i] for i, a in enumerate(call.args) if i < len(params) and _is_peer(a, parts)}
        fields += sum(1 for n in ast.walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                      and n.value.id in peer_params)
    return {"parts": len(parts), "late": late, "peers": peers, "fields": fields}


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    m = measure(root)
    peers: dict[str, int] = m["peers"]  # type: ignore[assignment]
    late: list[str] = m["late"]  # type: ignore[assignment]
    print(f"{root}: {m['parts']} parts")
    print(f"callbacks attached after construction: {len(late)}")
    for line in late:
        print(f"  {line}")
    built = {p: n for p, n in peers.items() if n > (1 if n else 0)}
    print(f"parts built with peers (the app or another part): {sum(1 for n in peers.values() if n)}, "
          f"with more than the app: {len(built)}, at most {max(peers.values(), default=0)}")
    print("  " + ", ".join(f"{p} {n}" for p, n in sorted(peers.items(), key=lambda kv: -kv[1])))
    print(f"sibling fields kept by parts: {m['fields']}")


if __name__ == "__main__":
    main()
