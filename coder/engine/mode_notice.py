"""Telling the model that the user switched the permission mode (issue 33, round 4), as Claude Code does.

A switch (Shift+Tab in the app, `/mode`, an editor's set-mode over ACP: all through `coder.commands.modes.set_mode`,
which calls `Session.set_mode`) holds at once for the policy; the model hears of it with the next user message:
one line ahead of the user's text, so it is part of the append-only history (no earlier message is edited, and
the cached prefix holds), stored as a `ModeNotice` event that a resume puts back in the same place. Several
switches before that message give one notice, for the mode the session is in then, and none when it is back in
the mode the model knew. Approving a plan (`exit_plan`) changes the mode without a notice: its result says so.

A mode may want a deferred tool (a contract's `loaded_in_modes`: plan mode wants `exit_plan`). A session that opens
in that mode has it whole from the first request (coder/tools/registry.py); a switch into it tells the model to
load it with the tool search, so the load is the model's own call. An earlier version made that call for the model,
after the user's text: the request then ended in a tool loop with no thinking block, so the API's rule kept
thinking off for the whole planning turn, and models that always think got the call as text, which loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coder.config.modes import MODES

#: what each mode allows, in the words the model reads (coder/policy/rules.py holds the rules themselves)
ALLOWS: dict[str, str] = {
    "ask": "reads run; edits and commands ask the user first",
    "auto-edit": "reads and edits run; commands ask the user first",
    "auto": "everything the sandbox allows runs without asking",
}
PLAN_ON = ("[Plan mode is on (read only): research, then present your plan with exit_plan (if it is not in your "
           "tools, load it first: tool_search select:exit_plan).]")


def notice(mode: str, before: str) -> str:
    """The one line the model reads: plan mode on, plan mode off (into `mode`), or another mode's rules."""
    if mode == "plan":
        return PLAN_ON
    allows = ALLOWS.get(mode, "")
    if before == "plan":
        return f"[Plan mode is off: mode {mode} ({allows}).]"
    return f"[Permission mode is now {mode}: {allows}.]"


#: every notice there is: what a view of the user's own words (/rewind's list, the app's farewell) leaves out
NOTICES = frozenset(notice(mode, before) for mode in MODES for before in MODES)


def is_notice(text: str) -> bool:
    return text in NOTICES


@dataclass
class ModeSwitches:
    """The switches the model has not heard of yet: `before` is the mode it knew when the first of them came (None:
    none pending)."""

    before: str | None = None

    def switch(self, policy: Any, mode: str) -> None:
        if self.before is None:
            self.before = str(policy.mode)
        policy.mode = mode

    def take(self, mode: str) -> str | None:
        """The notice for the user message being sent in `mode`, or None; either way the switches are heard."""
        before, self.before = self.before, None
        return notice(mode, before) if before is not None and before != mode else None
