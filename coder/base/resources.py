"""Where the data the model sees (tool contracts, prompts) lives, and the one template syntax of prompts.

In a wheel they ship as `coder/_data/{tools,prompts}`; in a source checkout or an editable install they are
the top-level `tools/` and `prompts/` folders of the repository.

Prompts are templates with one syntax, `{{name}}`, and strict: whoever loads one names the variables it fills,
and a template that uses a variable not named, or lacks one that is, fails when it is loaded (PromptError), as
does rendering with other values than those. A typo in a prompt is then an error in a test, not text sent to
the model. Double braces because prompts show code: single braces (JSON, Python) and `$` (shell) stay literal.
Values are put in in one pass, so a value that itself contains `{{x}}` (a diff of a template) is never expanded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from coder.base.errors import PromptError

_PACKAGE = Path(__file__).resolve().parents[1]  # coder/ (this file is coder/base/resources.py)


def data_dir(name: str) -> Path:
    """Return the folder `name` ("tools" or "prompts"), wheel layout first."""
    packaged = _PACKAGE / "_data" / name
    if packaged.is_dir():
        return packaged
    source = _PACKAGE.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"coder data folder {name!r} not found (looked in {packaged} and {source})")


#: `{{ name }}`; anything else between double braces is a malformed placeholder
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_BRACES = re.compile(r"\{\{.*?\}\}", re.DOTALL)


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    variables: frozenset[str]

    def render(self, **values: object) -> str:
        """The text with every `{{name}}` replaced by `str(values[name])`; exactly the declared values."""
        given = set(values)
        if given != self.variables:
            raise PromptError(_mismatch(self.name, "rendered with", given, self.variables))
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


def template(name: str, variables: Iterable[str] = ()) -> PromptTemplate:
    """`prompts/<name>`, checked to use exactly `variables` (PromptError otherwise)."""
    return parse_template(name, (data_dir("prompts") / name).read_text(encoding="utf-8"), variables)


def parse_template(name: str, text: str, variables: Iterable[str]) -> PromptTemplate:
    """Check `text` against `variables`: every placeholder well-formed and declared, every variable used."""
    declared = frozenset(variables)
    bad = [m.group(0) for m in _BRACES.finditer(text) if not _PLACEHOLDER.fullmatch(m.group(0))]
    if bad:
        raise PromptError(f"prompt {name}: malformed placeholder {bad[0]!r} (the syntax is {{{{name}}}}).")
    used = placeholders(text)
    if used != declared:
        raise PromptError(_mismatch(name, "loaded for", declared, used))
    return PromptTemplate(name, text, declared)


def placeholders(text: str) -> set[str]:
    """The variables `text` uses (for a template whose caller accepts any subset of what it offers)."""
    return {m.group(1) for m in _PLACEHOLDER.finditer(text)}


def _mismatch(name: str, how: str, given: set[str] | frozenset[str], wanted: set[str] | frozenset[str]) -> str:
    parts = []
    if wanted - given:
        parts.append(f"missing {', '.join(sorted(wanted - given))}")
    if given - wanted:
        parts.append(f"unknown {', '.join(sorted(given - wanted))}")
    uses = ", ".join("{{" + v + "}}" for v in sorted(wanted)) or "no variables"
    return f"prompt {name} {how} variables {sorted(given)}: {'; '.join(parts)} (it takes {uses})."


def prompt(name: str) -> str:
    """Text of `prompts/<name>` (e.g. "review_review.md"), a template without variables."""
    return template(name).text
