"""What every event is: the `Event` base class, and the registry of event types by their `type` name that a
stored event is read back through (coder/base/event_versions.py). The events themselves are coder/base/events.py
(and coder/base/agent_events.py, which it gathers), so importing those fills the registry.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

#: every event type by its `type` name (filled as each class is defined)
EVENT_TYPES: dict[str, type[Event]] = {}


@dataclass
class Event:
    type: ClassVar[str] = "event"
    persist: ClassVar[bool] = True
    #: the version of this type's stored shape: raised when a change needs a migration (coder/base/event_versions.py)
    schema_version: ClassVar[int] = 1
    #: keys a stored event carries that this version does not declare are left out (a newer coder added them)
    __unknown_keys__ = "ignore"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type" in cls.__dict__:
            if cls.type in EVENT_TYPES:
                raise TypeError(f"two event classes of type {cls.type!r}: {EVENT_TYPES[cls.type].__name__} and "
                                f"{cls.__name__}")
            EVENT_TYPES[cls.type] = cls

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}
