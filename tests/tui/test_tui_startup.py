"""Issue 47: the app and `--plain` take keys before the engine loads. What the frontend's module imports is what
stands between the launch and the first screen; the engine, the tools, the configuration's declarations, the
commands, the stuck detector and the model SDKs load after it (the app: in its opening worker; `--plain`: on a
thread once the first prompt is up). This reads what importing each frontend loads, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: packages that must not load before the first screen (each costs tens of milliseconds or more)
LATER = ("coder.engine.builder", "coder.engine.session", "coder.tools", "coder.config.sections", "coder.commands",
         "coder.stuck", "coder.review", "coder.models", "coder.sandbox", "coder.store", "coder.context", "coder.vcs",
         "coder.ext", "coder.lsp", "anthropic", "openai", "httpx", "markdown_it", "pygments", "prompt_toolkit")


def loaded_by(module: str) -> list[str]:
    code = f"import sys, json; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", ["coder.tui.app", "coder.repl.repl"])
def test_a_frontend_loads_nothing_of_the_engine_before_its_first_screen(module: str) -> None:
    loaded = loaded_by(module)
    early = [name for name in loaded if any(name == p or name.startswith(p + ".") for p in LATER)]
    assert early == [], f"importing {module} loads {early}"
    assert "textual" in loaded or module != "coder.tui.app"  # the control: the frontend itself did load
