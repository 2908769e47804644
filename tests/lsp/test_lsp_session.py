"""The issue's "done when", end to end: `coder run` (a real process, the scripted model, a real temp git repo,
the real basedpyright) makes an edit that introduces an undefined name, and the same tool result carries the
server's diagnostic. Untrusted, the same run reads exactly as without servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lsp_support import make_repo, need

REPO = Path(__file__).resolve().parents[2]
TURNS = [
    {"text": "Editing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "str_replace", "path": "app.py", "old_str": "return greeting(name)",
        "new_str": "return greting(name)"}}]},
    {"text": "Done."},
]


def _run(repo: Path, tmp_path: Path, *flags: str) -> list[dict]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": TURNS}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                             "--permission-mode", "auto", "--no-sandbox", "--model", f"scripted:{script}", *flags,
                             "fix it"], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_an_undefined_name_comes_back_to_the_model_in_the_same_result(tmp_path: Path) -> None:
    need("basedpyright-langserver", "pip install basedpyright (or pip install -e '.[dev]')")
    repo = make_repo(tmp_path / "repo", {"app.py": "def greeting(name):\n    return 'hi ' + name\n\n\n"
                                         "def main(name):\n    return greeting(name)\n"})
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder"
    user_config.mkdir(parents=True, exist_ok=True)
    (user_config / "config.toml").write_text("[lsp]\nwait = 60\n")  # a cold server on a loaded machine
    events = _run(repo, tmp_path, "--trust")
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert len(finished) == 1 and not finished[0]["is_error"]
    assert 'app.py:6:12: error: "greting" is not defined' in finished[0]["output"]
    assert "Diagnostics from basedpyright" in finished[0]["output"]

    (repo / "app.py").write_text((repo / "app.py").read_text().replace("greting(", "greeting("))
    untrusted = [e for e in _run(repo, tmp_path, "--no-trust") if e["type"] == "tool_call_finished"]
    assert "Diagnostics" not in untrusted[0]["output"] and "Edited app.py" in untrusted[0]["output"]
