"""The permission mode as the frontends show and switch it: the status bar, Shift+Tab, `/mode`, and what `/clear`
carries into the fresh session. Here, beside the commands, because it is user-interface policy (which modes the
key cycles through), not part of the loop."""

from __future__ import annotations

from typing import Any

from coder.base.errors import UsageError
from coder.config.modes import MODES
from coder.engine.session import Session

#: Shift+Tab cycles through these; `auto` is only ever chosen explicitly (/mode auto, --permission-mode auto)
MODE_CYCLE: tuple[str, ...] = ("ask", "auto-edit", "plan")


def current_mode(session: Session) -> str:
    return str(session.parts.policy.mode)


def set_mode(session: Session, mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}.")
    session.set_mode(mode)  # the engine tells the model with the next message (coder/engine/mode_notice.py)
    return mode


def cycle_mode(session: Session) -> str:
    """Shift+Tab: the next mode of MODE_CYCLE (auto, chosen explicitly, goes back to ask)."""
    mode = current_mode(session)
    nxt = MODE_CYCLE[(MODE_CYCLE.index(mode) + 1) % len(MODE_CYCLE)] if mode in MODE_CYCLE else "ask"
    return set_mode(session, nxt)


def carry_over(session: Session) -> dict[str, Any]:
    """What `/clear` keeps in the fresh session: the model chosen with /model and the permission mode (a user who
    switched either expects a clean conversation, not their settings reset to the launch flags)."""
    out: dict[str, Any] = {"permission_mode": current_mode(session)}
    spec = session.parts.provider.spec
    if spec:
        out["model"] = str(spec)
    return out
