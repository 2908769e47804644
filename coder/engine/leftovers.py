"""The engine's side of the after-command check (coder/sandbox/findings.py): the question about what a command left
that runs later, and the event that shows what was found, handed to the sandbox as plain callbacks.

The question reuses the frontends' permission prompt (a PermissionRequest for the pseudo-tool `left_behind`, no
rule to remember: each command's leftovers are asked about anew); allow keeps them, deny removes or restores them.
It is asked in every permission mode: the mode says what the model may run in the sandbox, not what the user will
run later. Headless sessions cannot answer: the sandbox refuses, as it does with nobody to ask.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from coder.base import events as ev
from coder.engine.session_parts import AskHandler, no_questions
from coder.sandbox.findings import AfterHooks, Finding, report

_ids = itertools.count(1)


def after_hooks(record: Callable[[ev.Event], None], ask: AskHandler) -> AfterHooks:
    def question(text: str, found: list[Finding]) -> bool:
        request = ev.PermissionRequest(f"left-{next(_ids)}", "left_behind",
                                       {"files": [f"{f.path} ({f.kind})" for f in found]}, text, None)
        record(request)
        return ask(request).allow

    def tell(found: list[Finding]) -> None:
        record(ev.LeftBehind([dataclasses.asdict(f) for f in found], report(found)))

    return AfterHooks(None if ask is no_questions else question, tell)
