"""Diagnostics an edit introduced: the server's findings after the edit minus those it already had before.

"New" is counted by kind and words, not by line: an edit that inserts ten lines above an old error moves it, it
does not create it. Each (severity, code, message) counts as many times as it occurs, so a second undefined
`foo` after an edit is new even when the file already had one. Only errors count by default (`[lsp] severity`),
and codes in `[lsp] ignore` never do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from coder.config.programs import LSP_IGNORE
from coder.lsp.manager import Diagnostic

SEVERITIES = {"error": 1, "warning": 2, "information": 3, "hint": 4}
SEVERITY_NAMES = {v: k for k, v in SEVERITIES.items()}
#: a result shows at most this many diagnostics; the rest are counted
MAX_SHOWN = 12


def introduced(before: Iterable[Diagnostic], after: Iterable[Diagnostic], max_severity: int = 1,
               ignore: Iterable[str] = LSP_IGNORE) -> list[Diagnostic]:
    """The diagnostics of `after` not accounted for by `before`, at `max_severity` or worse."""
    skip = set(ignore)

    def keep(d: Diagnostic) -> bool:
        return d.severity <= max_severity and d.code not in skip

    old = Counter(d.key() for d in before if keep(d))
    new: list[Diagnostic] = []
    for d in sorted((d for d in after if keep(d)), key=lambda d: (d.path, d.line, d.column)):
        if old[d.key()] > 0:
            old[d.key()] -= 1
        else:
            new.append(d)
    return new


def render(found: list[Diagnostic], server: str) -> str:
    """The short block appended to an edit's result."""
    lines = [f"Diagnostics from {server}: the edit introduced {len(found)} problem{'s' if len(found) != 1 else ''}"
             " (fix them, or say why they are wrong):"]
    for d in found[:MAX_SHOWN]:
        message = " ".join(d.message.split())
        message = message if len(message) <= 240 else message[:240] + "…"
        code = f" [{d.code}]" if d.code else ""
        lines.append(f"  {d.path}:{d.line}:{d.column}: {SEVERITY_NAMES.get(d.severity, 'error')}: {message}{code}")
    if len(found) > MAX_SHOWN:
        lines.append(f"  … and {len(found) - MAX_SHOWN} more")
    return "\n".join(lines)
