"""How a compaction reads for a person, the same in the app and in `--plain` (issue 45): a summary is a model call
that takes seconds to a minute, so its start is said when it starts and its end with how long it took."""

from __future__ import annotations

from coder.base.events import CompactionEvent, CompactionStarted


def compaction_started(event: CompactionStarted) -> str:
    """The line that says a summary started ("" when code writes it: no call, nothing to wait for)."""
    if event.by == "code":
        return ""
    who = "/compact" if event.trigger == "manual" else "the context is full"
    return (f"compacting the context ({who}): summarising {event.messages} earlier messages, "
            f"{event.tokens_before:,} tokens…")


def compaction_line(event: CompactionEvent) -> str:
    if event.kind == "summary" and event.data.get("by") == "code":
        how = "summary written by code, no model call"
    else:  # the other tiers take no time
        how = event.kind + (f" in {event.duration_s:.1f}s" if event.kind == "summary" else "")
    return f"context compacted ({how}): {event.tokens_before:,} → {event.tokens_after:,} tokens"
