"""Issue 24: `@path` attaches the file's content (or a range of its lines) to the message, in the app with Pilot;
a resumed session sends the same message again; a mention of something that is not a workspace file stays text."""

from __future__ import annotations

from pathlib import Path

from tui_support import async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.engine.history import rebuild
from coder.engine.mentions import find
from coder.models.types import TextBlock

HELLO = {"turns": [{"text": "It greets."}, {"text": "Again."}]}


def sent_texts(message) -> list[str]:
    return [b.text for b in message.content if isinstance(b, TextBlock)]


@async_test
async def test_at_path_attaches_the_file_and_a_range(factory, git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "notes.md").write_text("alpha\nbeta\ngamma\ndelta\n")
    app, f = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "what does @src/app.py do, and @notes.md:2-3? (not @scope/pkg)")
        await wait_for(pilot, lambda: not app.busy and "It greets." in conversation_text(app))
        text = conversation_text(app)
        assert "attached src/app.py (2 lines), notes.md:2-3" in text
        first = app.session.history[0]
        texts = sent_texts(first)
        assert texts[0] == "what does @src/app.py do, and @notes.md:2-3? (not @scope/pkg)"  # as typed
        assert texts[1] == ('<file path="src/app.py" lines="1-2">\n'
                            "def greet(name):\n    return 'hello ' + name\n</file>")
        assert texts[2].startswith('<file path="notes.md" lines="2-3"') and "beta\ngamma\n</file>" in texts[2]
        assert "alpha" not in texts[2] and len(texts) == 3
        opened = f.opened[0]
        restored = rebuild(opened.store.stored(opened.session.id))
        assert sent_texts(restored.history[0]) == texts  # a resume sends the same


def test_mentions_stay_inside_the_workspace(git_repo: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside\n")
    (git_repo / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert find("@../secret.txt and @link.txt and @/etc/passwd and a@b.com", git_repo) == ([], [])
    found, _ = find("see @README.md.", git_repo)  # the full stop ends the sentence, not the name
    assert [a.path for a in found] == ["README.md"] and found[0].text == "# demo"
