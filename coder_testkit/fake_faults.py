"""Fault injection for the fake model server: the `--fault WHAT@WHEN[:retry-after=SECONDS]` syntax (described in
coder_testkit.fake_server's docstring) parsed into `Fault` records."""

from __future__ import annotations

import re
from dataclasses import dataclass

from coder.base.errors import UsageError

_FAULT_RE = re.compile(r"^(?P<what>\d{3}|cut|overload|delay=[\d.]+|stall=[\d.]+)@(?P<when>\*|\d+(?:-\d+|\+)?)"
                       r"(?::retry-after=(?P<retry>[\d.]+))?$")


@dataclass
class Fault:
    kind: str  # "status" | "cut" | "overload" | "delay" | "stall"
    first: int
    last: int | None  # None: no end
    status: int = 0
    seconds: float = 0.0
    retry_after: float | None = None

    def applies(self, number: int) -> bool:
        return number >= self.first and (self.last is None or number <= self.last)


def parse_fault(spec: str) -> Fault:
    """Parse one fault SPEC (syntax in the module docstring); UsageError when it is malformed."""
    match = _FAULT_RE.match(spec.strip())
    if not match:
        raise UsageError(f"Bad fault spec {spec!r}: expected WHAT@WHEN[:retry-after=S] with WHAT a status code, "
                         "cut, overload, delay=S or stall=S and WHEN N, N-M, N+ or * (e.g. 429@2:retry-after=1).")
    what, when = match["what"], match["when"]
    if when == "*":
        first, last = 1, None
    elif when.endswith("+"):
        first, last = int(when[:-1]), None
    elif "-" in when:
        a, b = when.split("-")
        first, last = int(a), int(b)
    else:
        first = last = int(when)
    retry = float(match["retry"]) if match["retry"] else None
    if what.isdigit():
        return Fault("status", first, last, status=int(what), retry_after=retry)
    if what in ("cut", "overload"):
        return Fault(what, first, last)
    kind, seconds = what.split("=")
    return Fault(kind, first, last, seconds=float(seconds))
