"""Text from the model, tools and repositories made safe to put on a terminal: shown, never executed.

A terminal obeys control characters wherever they come from. A model's answer, a command it proposes, a file
name or the first line of a file it viewed can carry OSC 52 (write the clipboard), OSC 0 (set the window
title), OSC 8 (a hyperlink whose text lies about its target), CSI 2J (clear the screen), a lone carriage
return (overwrite what was just shown, e.g. hide a command behind a harmless one in a permission prompt) or
Unicode bidi overrides ("Trojan Source": text that displays in a different order than it runs). Every
frontend passes such text through `visible` before it reaches the terminal; the frontend's own styling
(Rich / Textual) is added afterwards and stays.

`visible` replaces, one character for one mark, so it is safe on a stream cut anywhere (a sequence split
across two chunks is neutralised in both halves) and idempotent (its marks are printable):

- tab and newline stay; CR LF becomes LF (a line ending, it overwrites nothing);
- every other C0 character becomes its Unicode control picture (ESC shows as ␛, BEL as ␇, a lone CR as ␍);
- DEL shows as ␡;
- C1 characters (U+0080-U+009F, including the 8-bit CSI U+009B that some terminals obey in UTF-8) and the
  bidi embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069) show as ⟨U+XXXX⟩.

This is not `coder.sandbox.text.clean_output`: that one prepares command output for the model (it removes
escape sequences and collapses progress-bar redraws, since the model reads the final state); this one keeps
every character visible, because a person deciding on a permission prompt must see what is really there.

`inert_json` is the JSON counterpart: json.dumps already escapes C0 (ESC becomes \\u001b), but with
ensure_ascii=False it writes DEL, C1 and bidi controls raw; they are escaped too, so JSON lines piped to a
terminal are inert while `json.loads` still returns the exact original text.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
C1_CONTROLS = tuple(range(0x80, 0xA0))
DEL = 0x7F


def _display_table() -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}  # ␀ … ␟ (␛ for ESC)
    table[DEL] = "\u2421"  # ␡
    for code in (*C1_CONTROLS, *BIDI_CONTROLS):
        table[code] = f"\u27e8U+{code:04X}\u27e9"  # ⟨U+009B⟩: no control picture exists for these
    return table


_DISPLAY = _display_table()
_JSON = {code: f"\\u{code:04x}" for code in (DEL, *C1_CONTROLS, *BIDI_CONTROLS)}
# one pass of a compiled character class finds out whether any work is needed: most text has nothing to replace
_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in _DISPLAY) + "]")
_UNSAFE_JSON = re.compile("[" + "".join(re.escape(chr(c)) for c in _JSON) + "]")


def visible(text: str) -> str:
    """`text` with every control character shown as a mark instead of acted on (see the module docstring)."""
    if not _UNSAFE.search(text):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_DISPLAY)


def inert_json(encoded: str) -> str:
    """A JSON document (as json.dumps wrote it) with DEL, C1 and bidi controls escaped as \\uXXXX. Valid because
    outside strings JSON is ASCII: these characters can only stand inside a string, where the escape means the
    same character."""
    if not _UNSAFE_JSON.search(encoded):
        return encoded
    return encoded.translate(_JSON)
