"""The user's turns and the checkpoints around them: what `/undo` and `/rewind` are about (issue 24, bug 13).

People think in messages, not in checkpoints: "undo what my last message did", "go back to before I asked X".
Checkpoints are taken only when the work tree changed, so counting checkpoints is not counting turns: `/undo`
after a turn that changed nothing used to restore the checkpoint *before the previous turn* (and so removed a
file the user had committed in between). Here each user message is matched with the checkpoint its turn ended
on, if any, from what the session already records: `history_at` (checkpoint id -> messages in the history when
it was taken, persisted in the checkpoint events, so a resumed session has it too) and the checkpoint labels
("turn N" ends a turn, "before turn N" holds the user's own edits made between turns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from coder.engine.mode_notice import is_notice
from coder.models.types import TextBlock


@dataclass
class UserTurn:
    number: int  # 1-based, as /rewind lists it
    index: int  # the message's index in the history
    text: str
    end: Any | None = None  # the checkpoint the turn's changes were saved in; None: the turn changed nothing
    start_id: int | None = None  # the checkpoint the work tree was at when the turn began

    @property
    def files(self) -> list[str]:
        return list(getattr(self.end, "files_changed", []) or [])

    def short(self, width: int = 60) -> str:
        one = " ".join(self.text.split())
        return one if len(one) <= width else one[: width - 1] + "…"


#: how the texts coder itself adds as user messages begin: its notes when a turn would end without proof
#: (prompts/verify_nudge.md, verify_ran.md; issue 49) and a hook's context (coder/engine/history.py)
CODERS_NOTE = re.compile(r"\[coder[: ]|\[\w+ hook\]\n")


def _is_user_text(message: Any) -> bool:
    return message.role == "user" and bool(_typed(message).strip())


def _typed(message: Any) -> str:
    """What the user wrote, without what the engine put with it or sent as a message of its own (a mode notice,
    a hook's context, the note that the turn has no proof yet: /rewind listed that as the user's message, with the
    turn's changes, and the user's own message as having changed nothing)."""
    return "".join(b.text for b in message.content if isinstance(b, TextBlock) and not is_notice(b.text)
                   and not CODERS_NOTE.match(b.text))


def user_turns(session: Any, checkpointer: Any | None) -> list[UserTurn]:
    """The user's messages in the current history, oldest first, each with the checkpoint its turn ended on."""
    history = session.history
    indexes = [i for i, m in enumerate(history) if _is_user_text(m)]
    turns = [UserTurn(n + 1, i, _typed(history[i])) for n, i in enumerate(indexes)]
    if checkpointer is None or not hasattr(checkpointer, "list"):
        return turns
    at = {int(k): v for k, v in session.history_at.items() if str(k).isdigit()}
    checkpoints = {cp.id: cp for cp in checkpointer.list()}
    for n, turn in enumerate(turns):
        upper = turns[n + 1].index if n + 1 < len(turns) else None
        ends = [cid for cid, h in at.items() if cid in checkpoints and checkpoints[cid].label.startswith("turn ")
                and turn.index < h and (upper is None or h <= upper)]
        if ends:
            end = turn.end = checkpoints[max(ends)]
            turn.start_id = end.parent
        else:  # the state it began in: the newest checkpoint taken before the message
            before = [cid for cid, h in at.items() if cid in checkpoints and h <= turn.index]
            turn.start_id = max(before) if before else None
    return turns


def forget_after(history_at: dict[str, int], keep: int) -> None:
    """After the conversation was cut to `keep` messages, forget checkpoints taken later in it: they belong to
    messages that no longer exist, and must not be matched with new messages at the same places."""
    for key in [k for k, v in history_at.items() if v > keep and k != "0"]:
        del history_at[key]
