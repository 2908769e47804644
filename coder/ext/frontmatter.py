"""Markdown files with a YAML front matter (`---` ... `---`): subagent definitions and custom slash commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError


def read_front_matter(path: Path, raw: bytes | None = None) -> tuple[dict[str, Any], str]:
    """(front matter dict, body) of `path` (or of `raw`, its bytes already read). A file without front matter has
    an empty dict."""
    try:
        text = raw.decode("utf-8") if raw is not None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc}).") from exc
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        raise ConfigError(f"{path}: the front matter opened with --- is never closed.")
    # start-up time: PyYAML loads only when this runs
    import yaml

    try:
        meta = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: the front matter is not valid YAML ({exc}).") from exc
    if not isinstance(meta, dict):
        raise ConfigError(f"{path}: the front matter must be a mapping of keys to values.")
    return meta, body.lstrip("\n").removeprefix("\n")
