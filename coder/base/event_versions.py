"""Reading a stored event back: its version, the migrations from older versions, and the parse.

Every event type has a `schema_version` (coder/base/events.py, 1 unless raised); the store keeps the version each
event was written with (coder/store/db.py `VERSION_KEY`). Read back, an event goes from its stored version up to its
type's current one through the migrations registered here, one step at a time, and is then parsed through the
schema layer (coder/base/schema.py), so a wrong type in a stored event is one line naming the session, the
event and the key, never a traceback halfway through a resume.

Version 1 of every type is the shape coder stored before events had versions (issue 48): every field added since
an event type appeared has a default, so an older event of version 1 reads as it is. To change a shape:

    class CompactionEvent(Event):
        type: ClassVar[str] = "compaction"
        schema_version: ClassVar[int] = 2   # `tokens` split into tokens_before and tokens_after

    @migrates("compaction", 1)
    def _compaction_1(data: dict[str, Any]) -> dict[str, Any]:
        before, after = data.pop("tokens")
        return {**data, "tokens_before": before, "tokens_after": after}

and add an event of the old shape to the stored sessions of tests/store (its fixture generator says how).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coder.base.events import EVENT_TYPES, Event
from coder.base.schema import SchemaError, Source, parse

Migration = Callable[[dict[str, Any]], dict[str, Any]]
#: (event type, version) -> the function that turns that version's dict into the next version's
MIGRATIONS: dict[tuple[str, int], Migration] = {}


def migrates(event_type: str, version: int) -> Callable[[Migration], Migration]:
    """Register the migration of `event_type` from `version` to `version + 1`."""
    def register(function: Migration) -> Migration:
        MIGRATIONS[(event_type, version)] = function
        return function
    return register


def load_event(event_type: str, data: dict[str, Any], version: int = 1, where: str = "") -> Event:
    """The event of `event_type` stored as `data` with `version`, migrated and parsed. SchemaError (one line naming
    `where` and the key) when it does not fit, when its type is unknown, or when a newer coder wrote it."""
    src = Source(where or f"a {event_type} event")
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        raise src.error((), f"no event type {event_type!r} in this version of coder")
    if version > cls.schema_version:
        raise src.error((), f"stored by a newer coder ({event_type} version {version}; this one reads up to "
                            f"{cls.schema_version})")
    data = {k: v for k, v in data.items() if k != "type"}
    for step in range(version, cls.schema_version):
        migration = MIGRATIONS.get((event_type, step))
        if migration is None:  # a declaration's mistake: the version was raised without its migration
            raise TypeError(f"no migration of {event_type} events from version {step} to {step + 1}")
        data = migration(data)
    return parse(cls, data, src)


def event_from_dict(data: dict[str, Any]) -> Event:
    """An event in its current shape, as `Event.to_dict` wrote it (stream-json, a test's events)."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise SchemaError("an event must be an object with a `type`", (), "no type")
    return load_event(data["type"], data)
