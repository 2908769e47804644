"""Fixtures for the frontend tests (helpers live in tui_support.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tui_support import Factory  # type: ignore[import-not-found]


@pytest.fixture
def factory(git_repo: Path) -> Callable[..., Factory]:
    def make(script: dict[str, Any], mode: str = "ask", chunk_delay: float = 0.0,
             context: Callable[[Any], Any] | None = None) -> Factory:
        return Factory(git_repo, script, mode, chunk_delay, context=context)

    return make
