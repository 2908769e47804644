"""A link the person clicked in the app, opened in their browser through the door.

Textual opens a clicked link with Python's `webbrowser`, which starts the browser (or `xdg-settings`,
`xdg-open`, ...) itself: with coder's whole environment, the API key included, and outside the door (which
refuses it). Here the system's opener (`xdg-open`, `open` on macOS) starts through `coder/host` instead, with the
scrubbed environment plus what a desktop needs to show a window, and only for web and mail addresses: a link in
the model's text must not open a local file or another application's URL scheme.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from coder.host.spawn import DEVNULL, Text, forget, start

SCHEMES = ("http", "https", "mailto")
#: what an opener needs of the desktop session to reach the browser
DESKTOP_VARS = ("DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "BROWSER",
                "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE")


def open_link(url: str) -> str | None:
    """Open `url` in the person's browser; None when started, else why not."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        return f"only web and mail links are opened ({scheme or 'no'} scheme)"
    if scheme == "mailto" and parts.query:  # `?attach=~/.ssh/id_rsa`: some mail clients attach the file named
        return "a mail link is opened only without fields after its address (?subject=, ?attach=, ...)"
    opener = "open" if sys.platform == "darwin" else "xdg-open"
    desktop = {name: os.environ[name] for name in DESKTOP_VARS if name in os.environ}
    try:
        proc = start([opener, Text(url)], purpose="a link the person clicked", extra_env=desktop, stdout=DEVNULL,
                     stderr=DEVNULL)
    except OSError as exc:
        return f"{opener} could not start ({exc})"
    forget(proc)  # the browser it starts outlives coder: never stopped with coder's own processes
    return None
