"""Where the data the model sees (tool contracts, prompts) lives.

In a wheel they ship as `coder/_data/{tools,prompts}`; in a source checkout or an editable install they are
the top-level `tools/` and `prompts/` folders of the repository."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("tools" or "prompts"), wheel layout first."""
    packaged = _PACKAGE / "_data" / name
    if packaged.is_dir():
        return packaged
    source = _PACKAGE.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"coder data folder {name!r} not found (looked in {packaged} and {source})")


def prompt(name: str) -> str:
    """Text of `prompts/<name>` (e.g. "system.md")."""
    return (data_dir("prompts") / name).read_text(encoding="utf-8")
