"""Issue 24, bug 8: a tool block lost its result (once in about 1,500 calls; the stored session had it). Two ways
it could: the result arrived while the block was being composed (its output went into a list the block had
already read), or two calls in flight had the same id (a local OpenAI-compatible server repeating ids), so the
second block took the first one's result and the first one never got any. Each block takes its own result
whenever it arrives."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from textual.widgets import Static
from tui_support import async_test, make_app, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.tui.blocks import DiffView, ToolBlock

HELLO = {"turns": [{"text": "Hello."}]}
DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


@async_test
async def test_a_result_that_arrives_before_the_block_is_mounted_is_shown(factory, git_repo: Path,
                                                                         tmp_path: Path) -> None:
    """Issue 24, bug 8: a result that came while the block was composed was lost. Blocks are mounted in batches
    at a drain's end, so a result often arrives first: the output is placed when the block is mounted."""
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        block = ToolBlock("c1", "bash", "bash: make x")
        block.finish("wrote x.py\nsecond line", False, 0.4, DIFF)
        await app.conversation.mount(block)
        await pilot.pause(0.2)
        assert block.finished and not block.collapsed  # a short diff opens by itself
        await wait_for(pilot, lambda: block.body is not None and len(block.body.query(DiffView)) == 1)


@async_test
async def test_two_calls_with_the_same_id_each_get_their_own_result(factory, git_repo: Path,
                                                                   tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for command in ("echo first", "echo second"):
            app.queue.append(ev.ToolCallRequested("call_0", "bash", {"command": command}))
        await wait_for(pilot, lambda: len(app.query(ToolBlock)) == 2)  # both blocks are up, running
        for output in ("first out\nmore", "second out\nmore"):
            app.queue.append(ev.ToolCallFinished("call_0", "bash", {}, output, False, [], 0.2))
        await wait_for(pilot, lambda: all(b.finished for b in app.query(ToolBlock)))
        blocks = list(app.query(ToolBlock))
        assert len(blocks) == 2 and all(b.finished for b in blocks)
        assert ["echo first" in str(b.title) and "first out" in str(b.title) for b in blocks][0]
        for block, expected in zip(blocks, ("first out", "second out"), strict=True):
            block.set_collapsed(False)
            await pilot.pause(0.1)
            assert block.body is not None
            shown = " ".join(str(s.render()) for s in block.body.query(Static).filter(".output"))
            assert expected in shown, (block.title, shown)
        assert not app.transcript.tool_blocks


@async_test
async def test_the_folded_count_is_exact(factory, git_repo: Path, tmp_path: Path) -> None:
    """Blocks are removed asynchronously; a flush before the removal ended counted the same blocks again."""
    from coder.tui.transcript import MAX_BLOCKS

    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await pilot.pause(0.1)
        start = len(app.conversation.blocks) + app.state.folded
        for i in range(MAX_BLOCKS + 100):
            app.queue.append(ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo {i}"}))
            app.queue.append(ev.ToolCallFinished(f"t{i}", "bash", {}, "ok", False, [], 0.1))
            await app.feed.drain()  # one flush per call, without waiting for the removals to end
        await pilot.pause(0.3)
        assert len(app.conversation.blocks) == MAX_BLOCKS
        assert app.state.folded == start + MAX_BLOCKS + 100 - MAX_BLOCKS


@async_test
async def test_a_folded_block_is_freed_without_the_collector(factory, git_repo: Path, tmp_path: Path) -> None:
    """Issue 32, round 3: a widget lives in reference cycles, and ~1,000 folded ones left ~140,000 objects that
    only a full collection freed (~470 ms of CPU in one pass of the loop). Once gone from the screen, a folded
    block's cycles are broken, so reference counting frees it, with no collection seeing it.

    Item 8 of issue 48: it failed on a loaded machine. Each arrangement of the screen is a reference cycle in
    Textual holding every widget it placed, and one that a collection caught while it was being made lived in an
    older generation, holding the block, until a full collection (coder/tui/main_screen.py). Here a collection
    catches every arrangement (one every 100 allocations, each collecting the middle generation too, none the
    oldest), which load did to some: without the fix all 20 blocks stay alive."""
    from coder.tui.transcript import MAX_BLOCKS

    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        refs: list[weakref.ref[ToolBlock]] = []
        thresholds = gc.get_threshold()
        gc.set_threshold(100, 1, 1_000_000)
        try:
            for i in range(MAX_BLOCKS + 40):
                app.queue.append(ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo {i}"}))
                app.queue.append(ev.ToolCallFinished(f"t{i}", "bash", {}, "ok", False, [], 0.1))
                await app.feed.drain()
                await pilot.pause()  # laid out and drawn, as in a real run
                if i < 20:
                    refs.append(weakref.ref(app.conversation.blocks[-1]))
                if i == 20:  # no collection sees the first 20 any more, as in run_app, which freezes its heap
                    gc.collect()
                    gc.freeze()
            newest = weakref.ref(app.conversation.blocks[-1])

            def freed() -> bool:
                # the young garbage that still points at them (messages, a timer's callback still pending on a
                # loaded machine) goes by young collections; the frozen blocks themselves no collection can free,
                # so once they are gone reference counting freed them, however long the app took
                gc.collect(0)
                return sum(ref() is not None for ref in refs) == 0

            await wait_for(pilot, freed)
            assert app.state.folded >= 40
            assert newest() is not None  # the control: a live block is reachable through a weak reference
        finally:
            gc.unfreeze()
            gc.set_threshold(*thresholds)
