"""What the session does about a detection: nudge the model first, then warn the user or stop the run.

Escalation is per thing that repeats (a detection's key): its first firing is a nudge, a note appended to the
tool result the model reads next; it fires again only after `again_after` more of the same; once
`nudges_before_stop` nudges did not help, the next firing is a "warn" (interactive: the frontend shows it and the
user may stop the turn) or a "stop" (headless and batch: the turn ends with reason `stuck`). When the key is no
longer active (the file changed, a new file was read, the model moved on) its escalation starts over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coder.base import events as ev
from coder.config.stuck import StuckSettings
from coder.stuck.detector import Detection, Detector, Thresholds, load_thresholds

#: what each pattern suggests; the model decides what to do with it
ADVICE = {
    "repeat": "Running it again will give the same result: change the command or the code first, or try "
              "another approach.",
    "same_error": "Read the error itself and change what causes it (for an edit: view the file's current text "
                  "before matching it) instead of retrying variations.",
    "ping_pong": "You are undoing and redoing the same change: decide which version is right and why, then "
                 "move on.",
    "no_progress": "Nothing has changed for a while: step back, state what you know and what is missing, and "
                   "either make a change or finish with what you have.",
    "same_text": "You are writing the same message again: take a different step.",
}
MODES = ("stop", "warn", "off")


@dataclass
class Verdict:
    note: str = ""  # appended to the last tool result of the step
    events: list[ev.StuckEvent] = field(default_factory=list)
    stop: bool = False
    reason: str = ""


@dataclass
class _Escalation:
    pattern: str
    fires: int = 0
    next_at: int = 0
    last_seen: int = 0


class StuckGuard:
    """Owns a Detector; the session feeds it every event and asks it after each step's tool calls."""

    def __init__(self, thresholds: Thresholds | None = None, mode: str = "warn") -> None:
        self.thresholds = thresholds or load_thresholds()
        self.mode = mode if mode in MODES else "warn"
        self.detector = Detector(self.thresholds)
        self.escalation: dict[str, _Escalation] = {}

    @classmethod
    def from_config(cls, section: StuckSettings, headless: bool) -> StuckGuard:
        """`[stuck]`: `enabled = false` turns it off; `interactive = "stop"` stops interactive sessions too
        (default "warn"); the rest overrides thresholds.json."""
        mode = "off" if not section.enabled else "stop" if headless else section.interactive
        return cls(load_thresholds(section), mode)

    def observe(self, event: ev.Event) -> None:
        if self.mode != "off":
            self.detector.observe(event)
            if isinstance(event, ev.UserMessage):
                self.escalation.clear()

    def after_step(self, tool_id: str = "") -> Verdict:
        """Close the step; what to append, emit and whether to stop."""
        if self.mode == "off":
            return Verdict()
        step = self.detector.index + 1
        found = self.detector.end_step()
        for key, esc in list(self.escalation.items()):  # not seen for a window: that episode is over
            if step - esc.last_seen > self.thresholds.of(esc.pattern, "window", 1):
                del self.escalation[key]
        verdict = Verdict()
        notes: list[str] = []
        for d in sorted(found, key=lambda d: d.pattern):
            esc = self.escalation.setdefault(d.key, _Escalation(d.pattern))
            esc.last_seen = step
            again = int(self.thresholds.of(d.pattern, "again_after", 1))
            if esc.fires and d.strength < esc.next_at - again:  # the count started over: so does escalation
                esc.fires = 0
            if esc.fires and d.strength < esc.next_at:
                continue
            esc.fires += 1
            esc.next_at = d.strength + again
            action = "nudge" if esc.fires <= self.thresholds.nudges_before_stop else self.mode
            note = note_for(d, action)
            notes.append(note)
            verdict.events.append(ev.StuckEvent(d.pattern, action, d.detail, d.strength, step, note, tool_id))
            if action == "stop":
                verdict.stop = True
                verdict.reason = d.detail
        verdict.note = "\n".join(notes)
        return verdict


def note_for(d: Detection, action: str) -> str:
    head = "coder stopped this run" if action == "stop" else "Note from coder"
    return f"[{head}: you may be stuck: {d.detail}. {ADVICE.get(d.pattern, '')}]"


def stuck_warning(event: ev.StuckEvent, times: int = 1) -> str:
    """What the interactive frontends show for a warn or stop (a nudge is for the model only). A warning that
    comes again in the same turn is folded into the first one's line (`times`: how often it came)."""
    if event.action == "stop":
        return f"coder stopped the turn: the agent looks stuck ({event.detail})."
    again = f" (warned {times} times this turn)" if times > 1 else ""
    return (f"the agent looks stuck: {event.detail}{again}. It was told so and goes on; press Esc (Ctrl+C in "
            f"`coder --plain`) to stop the turn.")
