"""Moved to `coder.base.events` (a neutral module the services may import too). This alias keeps code written
against the old place importing while concurrent branches land; import `coder.base.events` instead."""

from coder.base.events import *  # noqa: F403
from coder.base.events import EVENT_TYPES, Event, event_from_dict  # noqa: F401
