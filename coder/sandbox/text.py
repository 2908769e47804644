"""Turning raw terminal bytes into text a model can read.

Invalid UTF-8 is replaced (never a crash), ANSI escape sequences are removed, carriage-return redraws (progress
bars) keep only their last state, other control characters go, and output that is mostly binary becomes a one-line
note instead of a screenful of replacement characters."""

from __future__ import annotations

import re

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte escapes, and 8-bit CSI
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BACKSPACE = re.compile(r"[^\n\x08]\x08")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _last_redraw(line: str) -> str:
    """What a terminal shows for a line containing carriage returns: later writes overwrite earlier ones."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r")]
    shown = ""
    for part in parts:
        shown = part + shown[len(part):]
    return shown


def looks_binary(raw: bytes) -> bool:
    """True when a sample is mostly not text (NULs, invalid UTF-8, control bytes)."""
    sample = raw[:8192]
    if not sample:
        return False
    if sample.count(0) > len(sample) // 100:
        return True
    text = sample.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") + len(_CONTROL.findall(text))
    return bad > len(text) * 0.3


def clean_output(raw: bytes) -> str:
    """Decode terminal output for the model (see module docstring)."""
    if looks_binary(raw):
        return f"[binary output: {len(raw)} bytes, not shown; redirect it to a file and inspect it with xxd or file]"
    text = raw.decode("utf-8", errors="replace")
    text = strip_ansi(text)
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_last_redraw(line) for line in text.split("\n"))
    while "\x08" in text:
        new = _BACKSPACE.sub("", text)
        if new == text:
            break
        text = new
    return _CONTROL.sub("", text)
