"""One headless `coder run` with a scripted model, as the security tests drive it (a real process, real sandbox)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: the permission modes in which the model's bash runs without a question (plan mode runs none)
BASH_MODES = (("auto", ()), ("ask", ("--allow", "bash(*)")), ("auto-edit", ("--allow", "bash(*)")))
MODE_IDS = [m for m, _ in BASH_MODES]


#: how a console script starts coder: never with the working directory on sys.path (`python -m coder` in a
#: repository holding a `coder/` package would import that one, before coder could do anything about it)
CONSOLE = f"import sys; sys.path.insert(0, {str(REPO)!r}); sys.argv[0] = 'coder'; " \
          "from coder.cli.main import main; sys.exit(main())"


def run_scripted(repo: Path, turns: list[dict[str, Any]], *flags: str, timeout: float = 300) -> list[dict[str, Any]]:
    """`coder run --model scripted:...` in `repo` with `turns`, started as the `coder` console script is; every
    stream-json event. Fails on a traceback."""
    path = repo.parent / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-I", "-c", CONSOLE, "run", "--model", f"scripted:{path}",
                           "--output-format", "stream-json", *flags, "go"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert events, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return events


def take_fired(marker_dir: Path) -> list[str]:
    """The words the planted programs wrote to `marker_dir/marker` since the last look (the file is removed)."""
    marker = marker_dir / "marker"
    words = marker.read_text().split() if marker.exists() else []
    marker.unlink(missing_ok=True)
    return words
