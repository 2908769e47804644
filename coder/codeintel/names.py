"""Names: which names a file mentions (stored at build time) and where it uses one (found at query time).

Why not every identifier node with its line at build time, as the first version did: that made a Python object
per identifier use (900k on a 2,300-file corpus), which cost as much again as the parse and put a cold build
at 2.3x the parse floor. The index now keeps, per file, the set of name-like tokens of its raw bytes (split at
C speed with `bytes.translate`, a regular expression for Ruby and Bash; no tree walk), minus one occurrence per
definition name, in the `names` table (with a full-text index made on first use). That set serves two readers:

- the repo map's reference graph (file A mentions a name file B defines). A mention in a comment or a string
  counts too: for ranking, "see `QuerySet.filter`" in a docstring is a link as real as a call;
- "find references", as a candidate filter. The candidates' lines come from their syntax trees at query time:
  every whole-word occurrence of the name whose smallest node is an identifier of a reference type (and not
  a definition's own name), which is exactly what the build used to store. A query parses only the files that
  mention the name, and stops at its limit.

The token set is a superset of the identifier nodes' texts (the full-text lookup folds case, a superset again),
so a file with a use is never filtered out.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable

from coder.codeintel.languages import parser
from coder.codeintel.outline import extract
from coder.codeintel.queries import REFERENCE_TYPES, STOP_REFS

#: names longer than this are not kept (generated code, minified leftovers)
MAX_NAME = 100

# bytes >= 0x80 are UTF-8 parts of non-ASCII identifiers
_SHELL_NAME = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*")
_RUBY = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*[?!]?")  # `empty?`, `save!`
_SHELL_WORD = re.compile(rb"[\w\-.:+@%,~/\x80-\xff]+")  # a command name: `my-func`, `./configure`
#: maps every byte that cannot be part of a name to a space: `source.translate(_SPACES).split()` tokenizes at
#: C speed, several times faster than a regular expression (runs that start with a digit are numbers: dropped)
_SPACES = bytes(b if re.fullmatch(rb"[\w$\x80-\xff]", bytes([b])) else 32 for b in range(256))

#: what may not sit right before or after a name for it to be a whole word (`$x` is a Bash use of `x`)
_EDGE = {"bash": rb"\w\x80-\xff"}
_DEFAULT_EDGE = rb"\w$\x80-\xff"


def file_names(source: bytes, lang: str, definitions: Iterable[str]) -> str:
    """The names `source` mentions, sorted and space-separated; a definition's own name counts only when the
    name occurs more often than the file defines it."""
    if lang == "ruby":
        tokens = _RUBY.findall(source)
        tokens += [t[:-1] for t in tokens if t[-1:] in (b"?", b"!")]  # `foo!=` reads as `foo!`: keep `foo`
    elif lang == "bash":
        tokens = _SHELL_WORD.findall(source)
        words = set(tokens)
        tokens += [t for t in _SHELL_NAME.findall(source) if t not in words]  # `$name`, `${name}`
    else:
        tokens = source.translate(_SPACES).split()
    present = Counter(tokens)
    for short, defined in Counter(definitions).items():
        key = short.encode("utf-8", "surrogatepass")
        if present.get(key, 0) <= defined:
            present.pop(key, None)
    keys = sorted(present)
    del keys[bisect_left(keys, b"0"):bisect_left(keys, b":")]  # numbers
    if max(map(len, keys), default=0) > MAX_NAME:
        keys = [key for key in keys if len(key) <= MAX_NAME]
    return b" ".join(keys).decode("utf-8", "replace")


def match_expression(name: str) -> str | None:
    """The full-text query for files that may mention `name` (its word parts, all required), or None."""
    parts = re.findall(r"[\w$]+", name)
    return " AND ".join(f'"{part}"' for part in parts) if parts else None


def reference_lines(source: bytes, lang: str, name: str) -> list[int]:
    """The 1-based lines where `source` uses `name` as an identifier (not where it defines it), sorted."""
    if not name or len(name) > MAX_NAME or name in STOP_REFS.get(lang, ()):
        return []
    types = REFERENCE_TYPES.get(lang)
    key = name.encode("utf-8", "surrogatepass")
    if types is None or key not in source:
        return []
    edge = _EDGE.get(lang, _DEFAULT_EDGE)
    word = re.compile(rb"(?<![%s])%s(?![%s])" % (edge, re.escape(key), edge))
    spans = [m.span() for m in word.finditer(source)]
    if not spans:
        return []

    own = parser(lang)  # a parser of our own: queries may run on several threads
    if own is None:
        return []
    tree = own.parse(source)
    tags = extract("", source, lang, tree=tree)
    defined_at = tags.name_starts if tags is not None else set()
    root = tree.root_node
    lines: set[int] = set()
    for start, end in spans:
        if start in defined_at:
            continue
        node = root.descendant_for_byte_range(start, end)
        if node is None or node.start_byte != start or node.end_byte != end or node.type not in types:
            continue
        if node.type == "word" and (node.parent is None or node.parent.type != "command_name"):
            continue  # a Bash word is a use only as a command name
        lines.add(node.start_point.row + 1)
    return sorted(lines)
