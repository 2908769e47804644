"""Moved to `coder.events` (a neutral module the services may import too). This alias keeps code written
against the old place importing while concurrent branches land; import `coder.events` instead."""

from coder.events import *  # noqa: F403
from coder.events import EVENT_TYPES, Event, event_from_dict  # noqa: F401
