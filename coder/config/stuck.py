"""`[stuck]`: the stuck detector's switches, and one table per pattern it watches for, each overriding the tuned
thresholds of coder/stuck/thresholds.json (None: as shipped). `Config` (coder/config/sections.py) holds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from coder.base.settings import Repo, section, setting


@dataclass
class StuckPattern:
    """Overrides of one pattern's thresholds (coder/stuck/thresholds.json has the tuned defaults)."""

    enabled: bool = setting(True, doc="Watch for this pattern.", repo=Repo.NEVER)
    nudge_at: int | None = setting(None, doc="The count at which it first fires.", repo=Repo.NEVER, at_least=1)
    again_after: int | None = setting(None, doc="It fires again each this many more.", repo=Repo.NEVER, at_least=1)

    def overrides(self) -> dict[str, Any]:
        """The thresholds set here (None is "as shipped"), by name."""
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class WindowedPattern(StuckPattern):
    window: int | None = setting(None, doc="Steps looked back.", repo=Repo.NEVER, at_least=1)


@dataclass
class RepeatPattern(WindowedPattern):
    wait_factor: float | None = setting(None, doc="How many times more a polling command (sleep, retry) needs.",
                                        repo=Repo.NEVER, above=0)


@dataclass
class SameTextPattern(WindowedPattern):
    min_chars: int | None = setting(None, doc="The shortest text that counts.", repo=Repo.NEVER, at_least=1)


@dataclass
class StuckSettings:
    """`[stuck]`: the stuck detector nudges the model, then warns you or (headless) stops the run."""

    enabled: bool = setting(True, doc="Watch for a stuck agent.", repo=Repo.NEVER)
    interactive: Literal["warn", "stop", "off"] = setting("warn", doc="What an interactive session does after "
                                                          "the nudges did not help.", repo=Repo.NEVER)
    nudges_before_stop: int | None = setting(None, doc="Nudges before the warning or the stop.", repo=Repo.NEVER,
                                             at_least=0)
    repeat: RepeatPattern = section(RepeatPattern, "The same call with the same result.")
    same_error: WindowedPattern = section(WindowedPattern, "Calls failing with the same error.")
    ping_pong: WindowedPattern = section(WindowedPattern, "Edits undone and redone.")
    no_progress: StuckPattern = section(StuckPattern, "Steps in a row that change nothing.")
    same_text: SameTextPattern = section(SameTextPattern, "The same assistant text again.")

    def pattern_overrides(self) -> dict[str, dict[str, Any]]:
        return {name: getattr(self, name).overrides() for name in
                ("repeat", "same_error", "ping_pong", "no_progress", "same_text")}
