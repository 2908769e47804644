"""Per language: a small real snippet, one definition (qualified where the language nests) and one reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.codeintel.index import CodeIndex
from coder.codeintel.outline import outline_source

# file, source, qualified definition, kind, definition line, referenced name, reference line
CASES = [
    ("shop/cart.py", ("class Cart:\n    def total(self):\n        return 1\n\n\n"
                      "def checkout(c):\n    return c.total()\n"), "Cart.total", "method", 2, "total", 7),
    ("web/app.js", "class Store {\n  load(id) { return id; }\n}\nfunction boot() {\n  return new Store().load(1);\n}\n",
     "Store.load", "method", 2, "Store", 5),
    ("web/api.ts", ("export interface Client {\n  send(x: number): void;\n}\n"
     "export function make(): Client {\n  return null as any;\n}\n"), "Client.send", "method", 2, "Client", 4),
    ("web/view.tsx", ("export function Button(props: Props) {\n  return <b>{props.label}</b>;\n}\n"
     "export const Page = () => <Button label=\"x\" />;\n"), "Button", "function", 1, "Button", 4),
    ("pkg/model.go", ("package pkg\n\ntype Model struct{}\n\nfunc (m *Model) Save() error {\n\treturn nil\n}\n\n"
     "func Run() error {\n\treturn (&Model{}).Save()\n}\n"), "Model.Save", "method", 5, "Save", 10),
    ("src/lib.rs", ("pub struct Counter { n: u32 }\n\nimpl Counter {\n    pub fn bump(&mut self) { self.n += 1; }\n"
     "}\n\nfn main() {\n    let mut c = Counter { n: 0 };\n    c.bump();\n}\n"),
     "Counter.bump", "method", 4, "bump", 9),
    ("src/Main.java", ("class Greeter {\n  String hello(String n) { return n; }\n}\n"
     "class Main {\n  void run() { new Greeter().hello(\"x\"); }\n}\n"), "Greeter.hello", "method", 2, "Greeter", 5),
    ("c/math.c", "static int add(int a, int b) {\n  return a + b;\n}\n\nint main(void) {\n  return add(1, 2);\n}\n",
     "add", "function", 1, "add", 6),
    ("cpp/model.cpp", ("namespace app {\nclass Model {\n public:\n  void save();\n};\n}\n\n"
     "void app::Model::save() {}\n\nint main() { app::Model m; m.save(); }\n"), "Model.save", "method", 8, "save", 10),
    ("rb/cart.rb", ("module Shop\n  class Cart\n    def add(item)\n      item\n    end\n  end\nend\n\n"
     "Shop::Cart.new.add(1)\n"), "Shop.Cart.add", "method", 3, "add", 9),
    ("scripts/build.sh", "#!/bin/bash\nsetup() {\n  echo ready\n}\n\nsetup\n", "setup", "function", 2, "setup", 6),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> CodeIndex:
    root = tmp_path_factory.mktemp("langs")
    for rel, source, *_ in CASES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    idx = CodeIndex.open(root, cache_dir=tmp_path_factory.mktemp("cache"))
    stats = idx.refresh(workers=1)
    assert stats.parsed == len(CASES)
    return idx


@pytest.mark.parametrize("case", CASES, ids=[c[0].rsplit(".", 1)[1] for c in CASES])
def test_definition_and_reference(index: CodeIndex, case: tuple) -> None:
    rel, source, qualified, kind, line, ref_name, ref_line = case
    hits = index.definitions(qualified, fuzzy=False)
    mine = [(h.line, h.kind) for h in hits if h.path == rel and h.name.endswith(qualified)]
    assert (line, kind) in mine, hits
    refs = index.references(ref_name)
    assert (rel, ref_line) in {(r.path, r.line) for r in refs}, refs
    # the outline is the same through the library function other areas use
    symbols = outline_source(rel, source.encode())
    assert any(s.name.endswith(qualified) and s.line == line and s.end_line >= line for s in symbols)


def test_outline_json_fields(index: CodeIndex) -> None:
    symbols = index.outline("shop/cart.py")
    assert [s.to_json() for s in symbols] == [
        {"path": "shop/cart.py", "line": 1, "end_line": 3, "kind": "class", "name": "Cart"},
        {"path": "shop/cart.py", "line": 2, "end_line": 3, "kind": "method", "name": "Cart.total"},
        {"path": "shop/cart.py", "line": 6, "end_line": 7, "kind": "function", "name": "checkout"},
    ]


def test_signatures_are_headers_without_bodies() -> None:
    src = b"class A(Base):  # note\n    x = 1\n\n@dec\ndef f(a: int,\n      b: str) -> None:\n    pass\n"
    by_name = {s.name: s for s in outline_source("m.py", src)}
    assert by_name["A"].signature == "class A(Base)"
    assert by_name["f"].signature == "def f(a: int, b: str) -> None"
    assert (by_name["f"].line, by_name["f"].end_line) == (5, 7)


def test_fuzzy_definition_ranks_close_names(index: CodeIndex) -> None:
    hits = index.definitions("Cart.totl")
    assert hits and hits[0].name == "Cart.total" and hits[0].score > 0


def test_unknown_language_has_no_outline(tmp_path: Path) -> None:
    assert outline_source("notes.txt", b"def f(): pass") == []
