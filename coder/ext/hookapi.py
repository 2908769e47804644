"""What a hook tells the session, whatever format it came in (coder's TOML hooks, Claude Code's JSON ones).

One verdict type for every event, so the engine's `Hooks` protocol (coder/engine/hook_steps.py) has one answer to
read: a hook may block what was about to happen (a tool call, a prompt, the end of a turn), decide a call's
permission, rewrite its input, add text for the model, or stop the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PermissionVerdict = Literal["allow", "deny", "ask"]


@dataclass
class HookVerdict:
    #: the action does not happen, and this says why (to the model for a tool call or a stop, to the user for a
    #: prompt)
    block: str | None = None
    #: a tool call's permission, decided by a hook (PreToolUse, PermissionRequest); None: the policy decides
    permission: PermissionVerdict | None = None
    permission_reason: str = ""
    #: the call's input, rewritten by a hook (already in the tool's own shape)
    updated_input: dict[str, Any] | None = None
    #: text the model reads with the prompt, the tool result or the next message
    context: list[str] = field(default_factory=list)
    #: `continue: false`: the turn ends here, and this says why (to the user)
    stop: str | None = None
    #: what the user is told (a hook's `systemMessage`, a failure)
    notes: list[str] = field(default_factory=list)

    def merge(self, other: HookVerdict) -> HookVerdict:
        """Several hooks on one event: the first block and stop win; for the permission, deny over ask over allow
        (as Claude Code orders them); every context and note is kept."""
        order = {"deny": 0, "ask": 1, "allow": 2, None: 3}
        permission, reason = self.permission, self.permission_reason
        if order[other.permission] < order[permission]:
            permission, reason = other.permission, other.permission_reason
        return HookVerdict(self.block or other.block, permission, reason,
                           self.updated_input if self.updated_input is not None else other.updated_input,
                           self.context + other.context, self.stop or other.stop, self.notes + other.notes)


NO_VERDICT = HookVerdict()
