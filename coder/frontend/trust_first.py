"""The trust question before the session opens (issue 47): both frontends ask it as soon as they can, before the
engine, the tools and the model's SDK load (a second and more), from what the repository would run and its
fingerprint alone; the session then opens with that answer, which holds only for what was shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder.host.git import repo_top
from coder.trust import decisions as trust
from coder.trust.reader import workspace_key

#: asks the person whether to trust the repository: (the request, why it is asked) -> trusted
AskTrust = Callable[[Any, str], bool]


def ask_before_opening(cwd: Path, ask: AskTrust) -> AskTrust | None:
    """Ask now when the repository (of `cwd`) wants something run and is not trusted; returns what answers the
    session's own question: the answer given, for the same fingerprint (anything else stays untrusted). None when
    nothing was asked."""
    request = trust.inspect(Path(workspace_key(repo_top(cwd) or cwd)))
    state = trust.status(request)
    if state.trusted or not request.wants_anything or not request.trustable:
        return None
    answer = ask(request, state.reason)
    return lambda seen, _reason: answer and seen.fingerprint == request.fingerprint
