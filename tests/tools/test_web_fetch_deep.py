"""A hostile page nested thousands of elements deep (the red team's finding): markdownify recursed and the fetch
ended in a RecursionError; the page's text is kept instead."""

from __future__ import annotations

import sys

from coder.tools.web_fetch_tool import html_to_markdown


def test_a_page_nested_deeper_than_the_recursion_limit_keeps_its_text() -> None:
    depth = sys.getrecursionlimit() * 3
    html = ("<html><head><title>Deep</title></head><body>" + "<div>" * depth + "the words deep_marker_41"
            + "</div>" * depth + "<p>after</p></body></html>")
    text = html_to_markdown(html)
    assert "deep_marker_41" in text and "after" in text and "nested too deeply" in text
    assert text.startswith("# Deep")
    # control: a shallow page goes through markdownify as before
    assert html_to_markdown("<html><body><div><b>bold</b></div></body></html>") == "**bold**"
