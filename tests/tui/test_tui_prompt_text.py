"""Issue 47: prompts that say the right thing, in a real terminal (tmux), the app and `--plain`: a replacement's
diff is numbered where the change is in its file (it read `@@ -1,2 +1,4 @@` for a change at lines 9-10)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from terminal_support import Tmux, coder_command  # type: ignore[import-not-found]


@pytest.mark.parametrize("plain", [False, True])
def test_an_edit_prompts_diff_is_numbered_where_the_change_is(git_repo: Path, tmp_path: Path, plain: bool) -> None:
    (git_repo / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 13)))
    script = tmp_path / "edit.json"
    script.write_text(json.dumps({"turns": [{"text": "Adding two lines.", "tool_calls": [{
        "name": "str_replace_based_edit_tool", "input": {"command": "str_replace", "path": "notes.txt",
                                                         "old_str": "line 9\nline 10\n",
                                                         "new_str": "line 9\nnew a\nnew b\nline 10\n"}}]}]}))
    tmux = Tmux(tmp_path, coder_command(script, *(["--plain"] if plain else [])), git_repo, width=110, height=40)
    try:
        tmux.wait("ask>" if plain else "idle │")
        if plain:
            tmux.type_at_prompt("add them")
        else:
            tmux.type("add them")
        tmux.send("Enter")
        screen = tmux.wait("Allow edit notes.txt", "+new b")
        assert "@@ -9,2 +9,4 @@" in screen and "@@ -1,2 +1,4 @@" not in screen
        time.sleep(0.7)  # a question's keys count once the keyboard was quiet a moment
        tmux.send("Escape")  # deny and stop
        tmux.wait("interrupted")
    finally:
        tmux.close()
