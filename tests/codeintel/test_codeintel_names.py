"""Names per file and references found at query time (coder.codeintel.names), and the fast Python walk that
finds the same definitions as the definition query."""

from __future__ import annotations

import inspect
import json
import textwrap
from pathlib import Path

import pytest

from coder.codeintel import store
from coder.codeintel.index import CodeIndex
from coder.codeintel.names import file_names, reference_lines
from coder.codeintel.outline import _python_definitions, _query, _query_definitions, extract


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def test_file_names_keep_mentions_and_drop_numbers_and_lone_definitions() -> None:
    source = "def helper(x):\n    return render(x) + 0x1f + 12  # café\n\ndef used():\n    return used\n"
    names = file_names(source.encode(), "python", ["helper", "used"]).split(" ")
    assert names == sorted(names)
    assert {"render", "return", "café", "x", "used"} <= set(names)  # `used` occurs again after its definition
    assert "helper" not in names  # its only occurrence is its definition
    assert not any(n[0].isdigit() for n in names) and "x1f" not in names


def test_file_names_for_ruby_and_bash() -> None:
    ruby = file_names(b"def empty?; x.save!; foo!=1; end", "ruby", ["empty?"]).split(" ")
    assert {"save!", "save", "foo", "x"} <= set(ruby) and "empty?" not in ruby
    bash = file_names(b"my-func() { echo $HOME ${target}; }\nmy-func\n", "bash", ["my-func"]).split(" ")
    assert {"my-func", "HOME", "target", "echo"} <= set(bash)


def test_reference_lines_are_identifier_uses_only() -> None:
    source = textwrap.dedent('''
        def render(x):  # render is defined here
            """Call render() twice."""
            return x

        msg = "render me"
        print(f"{render(1)}")
        render(2)
        obj.render_all()
    ''').lstrip().encode()
    assert reference_lines(source, "python", "render") == [6, 7]
    assert reference_lines(source, "python", "self") == []  # a stop name
    js = b"// render\nconst s = 'render';\nconst t = `${render(1)}`;\nobj.render();\n"
    assert reference_lines(js, "javascript", "render") == [3, 4]
    bash = b"greet() { echo hi; }\n# greet\ngreet\necho greet\n"
    assert reference_lines(bash, "bash", "greet") == [3]  # a word is a use only as a command name


def test_fulltext_index_is_made_on_first_use_and_kept_in_step(git_repo: Path) -> None:
    index = CodeIndex.open(git_repo)
    index.refresh()
    tables = "SELECT name FROM sqlite_master WHERE name = 'names_fts'"
    assert index._query(tables) == []  # a build does not pay for it
    assert index.references("greet") == []
    assert index._query(tables) == [("names_fts",)]
    _write(git_repo, "src/late.py", "from src.app import greet\ngreet('x')\n")
    assert [(h.path, h.line) for h in index.references("greet")] == []  # not indexed yet: no candidate
    index.refresh()
    assert [(h.path, h.line) for h in index.references("greet")] == [("src/late.py", 1), ("src/late.py", 2)]
    (git_repo / "src" / "late.py").unlink()
    index.refresh()
    assert index.references("greet") == []
    assert index._query("SELECT rowid FROM names_fts WHERE names_fts MATCH 'greet'") == []


def test_index_references_come_from_current_files(git_repo: Path) -> None:
    _write(git_repo, "src/lib.py", """
        class Store:
            def save(self):
                return 1
        """)
    _write(git_repo, "src/use.py", """
        from src.lib import Store

        # Save is mentioned here, save too, but not used
        def main():
            Store().save()
            Store().save()
        """)
    _write(git_repo, "src/Other.py", "def Save():\n    return Save\n")
    index = CodeIndex.open(git_repo)
    index.refresh()
    hits = [(h.path, h.line) for h in index.references("Store.save")]
    assert hits == [("src/use.py", 5), ("src/use.py", 6)]  # case-folded candidates, exact uses; not the def
    assert [(h.path, h.line) for h in index.references("Save")] == [("src/Other.py", 2)]
    assert len(index.references("save", limit=1)) == 1
    # an edit is seen by the next query, with current lines
    (git_repo / "src" / "use.py").write_text("\n\nfrom src.lib import Store\nStore().save()\n")
    assert [(h.path, h.line) for h in index.references("save")] == [("src/use.py", 4)]


def test_references_without_fts5(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "FULLTEXT", "CREATE VIRTUAL TABLE names_fts USING no_such_module(words);")
    _write(git_repo, "src/use.py", "from src.app import greet\n\ngreet('a')\n")
    index = CodeIndex.open(git_repo, cache_dir=git_repo.parent / "plain-cache")
    index.refresh()
    assert [(h.path, h.line) for h in index.references("greet")] == [("src/use.py", 1), ("src/use.py", 3)]
    assert index.fulltext is False  # the names are scanned instead
    assert index.stats()["files"] == 2


TRICKY_PYTHON = '''
import typing
X = 1
y: int = 2
a = b = 3
if typing.TYPE_CHECKING:
    class OnlyTyping: ...
else:
    def fallback(): ...
try:
    import json
except ImportError:
    def loads(s): ...
finally:
    class Done: ...
with open("f") as fh:
    def inside_with(): ...
for i in range(3):
    def in_loop(): ...
while False:
    class InWhile: ...
match X:
    case 1:
        def in_case(): ...
    case _:
        class InDefault: ...

@decorator
class Outer:
    @property
    def prop(self):
        def nested():
            class Deep: ...
        return nested

    async def run(self):
        lambda: 1
        return [x for x in ()]
'''


def test_python_walk_finds_what_the_query_finds() -> None:
    sources = [TRICKY_PYTHON.encode(), inspect.getsource(json).encode(), inspect.getsource(textwrap).encode(),
               inspect.getsource(inspect).encode()]
    from coder.codeintel.outline import _parser

    for source in sources:
        root = _parser("python").parse(source).root_node
        assert not root.has_error

        def key(items: list) -> list:
            return sorted((kind, d.start_byte, n.start_byte) for kind, d, n, _scope in items)

        assert key(_python_definitions(root)) == key(_query_definitions(_query("python"), root))
    names = {s.name for s in extract("t.py", TRICKY_PYTHON.encode()).symbols}
    assert {"OnlyTyping", "fallback", "loads", "Done", "inside_with", "in_loop", "InWhile", "in_case", "InDefault",
            "Outer.prop.nested.Deep", "Outer.run", "X", "y", "a"} <= names


def test_broken_python_uses_the_query() -> None:
    source = b"def ok():\n    pass\n\ndef broken(:\n    class Inner: ...\n"
    tags = extract("b.py", source)
    assert tags is not None and tags.has_errors
    assert "ok" in {s.name for s in tags.symbols}
