"""docs/config.md is written from the declarations, so the reference cannot drift from the code."""

from __future__ import annotations

from coder.config.reference import DOC, reference


def test_the_reference_is_what_the_declarations_say() -> None:
    assert DOC.read_text(encoding="utf-8") == reference(), \
        "docs/config.md differs from the declarations: run `python -m coder.config.reference`"


def test_the_reference_lists_every_section_and_key() -> None:
    text = reference()
    for heading in ("## [sandbox]", "## [review.tests]", "## [[hooks.EVENT]]", "## [mcp.servers.NAME]",
                    "## [providers.NAME]", '## [pricing.MODEL]', "## [stuck.same_text]"):
        assert heading in text, heading
    assert "| `keep_sessions` | integer (>= 1) | `20` | when trusted |" in text
    assert "| `deny` | list of strings | empty | adds to yours |" in text
    assert "`CODER_MAX_TURNS`" in text
