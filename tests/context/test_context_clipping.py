"""Tier 1: long outputs keep head and tail; the whole text stays readable behind its handle."""

from __future__ import annotations

from pathlib import Path

from context_helpers import HistoryBuilder, lines, result_of

from coder.context.clipping import ClipTier, cut_user_texts
from coder.context.history import replace_results
from coder.models.types import Message
from coder.store.outputs import clip_output, load_output


def test_long_result_is_clipped_to_head_and_tail_with_a_readable_handle(tmp_path: Path) -> None:
    h = HistoryBuilder()
    big = lines(5000) + "\r\nlast line with CRLF"
    long_id = h.bash("pytest -q", big)
    short_id = h.bash("ls", "README.md\nsrc")
    tier = ClipTier(tmp_path, max_chars=20_000)
    new = tier.run(h.messages, {})
    assert set(new) == {long_id}, "only the long output is clipped"
    clipped = new[long_id]
    assert len(clipped) < 21_000
    assert "line 00001" in clipped and "last line with CRLF" in clipped
    assert "line 02500" not in clipped
    handle = clipped.split("Full output: ")[1].split()[0]
    assert load_output(tmp_path, handle) == big + "\n[exit 0]", "the stored text is byte-exact (CRLF kept)"
    view = replace_results(h.messages, new)
    assert result_of(view, short_id) == "README.md\nsrc\n[exit 0]"
    assert view[0] is h.messages[0], "untouched messages are the same objects (cache-stable prefix)"


def test_clipping_is_done_once_and_is_deterministic(tmp_path: Path) -> None:
    h = HistoryBuilder()
    long_id = h.bash("cat big.log", lines(3000))
    tier = ClipTier(tmp_path, max_chars=5_000)
    first = tier.run(h.messages, {})
    assert tier.run(h.messages, first) == {}, "an output already clipped is not clipped again"
    again = ClipTier(tmp_path, max_chars=5_000).run(h.messages, {})
    assert again[long_id] == first[long_id], "same text, same handle, same clipped text"
    assert len(list((tmp_path / "outputs").glob("*.txt"))) == 1


def test_few_very_long_lines_share_the_budget(tmp_path: Path) -> None:
    text = "\n".join(["a" * 30_000, "b" * 30_000, "c" * 30_000])
    clipped = clip_output(text, tmp_path, max_chars=6_000)
    assert clipped.handle and 3_000 < len(clipped.text) < 8_000
    assert "aaaa" in clipped.text and "cccc" in clipped.text


def test_hard_cut_cuts_every_long_result_and_user_text(tmp_path: Path) -> None:
    h = HistoryBuilder(task="paste: " + lines(2000, "log"))
    rid = h.bash("cat huge", lines(4000))
    tier = ClipTier(tmp_path)
    view, replacements = tier.hard_cut(h.messages, 2_000)
    assert set(replacements) == {rid}
    assert len(result_of(view, rid)) < 4_000
    cut = cut_user_texts(view, tmp_path, 2_000)
    assert len(cut[0].text()) < 4_000 and "output://" in cut[0].text()
    assert cut_user_texts(view, tmp_path, 2_000)[0].text() == cut[0].text(), "deterministic"
    small = [Message.user_text("hello")]
    assert cut_user_texts(small, tmp_path, 2_000)[0] is small[0]


def test_an_output_the_tool_already_clipped_is_not_clipped_twice(tmp_path: Path) -> None:
    h = HistoryBuilder()
    already = clip_output("\n".join("y" * 300 for _ in range(3000)), tmp_path, max_chars=20_000).text
    assert len(already) > 20_000, "the note makes a clipped text a little longer than the limit"
    h.bash("pytest", already)
    assert ClipTier(tmp_path, max_chars=20_000).run(h.messages, {}) == {}
