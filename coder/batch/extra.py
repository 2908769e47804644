"""The harness is an optional extra: `pip install 'coder[swebench]'` brings what only it needs (`datasets`).

`coder batch` and `coder swebench` are registered in every install so that `coder --help` lists them, but a
command of theirs first checks that the extra is there and otherwise says how to install it (a UsageError: an
exit code and one paragraph, never a traceback from an import deep inside a run). The check asks the import
system, without importing `datasets` (a second of start-up that local files do not need).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from coder.base.errors import UsageError

#: what the extra adds to the core install (pyproject.toml, [project.optional-dependencies] swebench)
EXTRA_MODULES = ("datasets",)
INSTALL = "pip install 'coder[swebench]'"


class ExtraMissing(UsageError):
    """`coder batch` / `coder swebench` in an install without the swebench extra."""


def missing_modules() -> list[str]:
    missing = []
    for name in EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or blocked package is as good as none
            found = False
        if not found:
            missing.append(name)
    return missing


def require_extra(command: str) -> None:
    missing = missing_modules()
    if missing:
        raise ExtraMissing(f"`coder {command}` is part of the optional SWE-bench and batch harness, which is not "
                           f"installed here ({', '.join(missing)} missing). Install it with: {INSTALL} (from a "
                           "source checkout: pip install -e '.[swebench]'; bash install.sh installs everything).")


def needs_extra(command: str, handler: Callable[[Any], int]) -> Callable[[Any], int]:
    """`handler`, run only when the extra is installed."""

    def checked(args: Any) -> int:
        require_extra(command)
        return handler(args)

    return checked
