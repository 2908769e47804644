"""Whole-file replacement: readers see the old file or the new one, never a part, and a failed write leaves
neither a half-written file nor its temporary file behind."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, *, mode: int = 0o600, durable: bool = False) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`. The new file gets `mode` less
    the umask (0o600 by default: what coder keeps for the user is the user's alone); `durable` fsyncs before the
    rename. The folder must exist: callers create what they write, with the mode they want."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any, **dump_kwargs: Any) -> None:
    """`data` as JSON (`json.dumps(data, **dump_kwargs)`, ending in a newline), written by `write_text_atomic`."""
    write_text_atomic(path, json.dumps(data, **dump_kwargs) + "\n")
