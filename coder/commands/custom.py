"""Custom slash commands: Markdown files in `$XDG_CONFIG_HOME/coder/commands/` and `.coder/commands/` of the
repository (the project's file wins on a name clash; a file cannot shadow a built-in command).

    ---
    description: fix the named bug
    allowed-tools: bash(pytest*), str_replace_based_edit_tool
    argument-hint: "[bug]"
    ---
    Find and fix this bug: $ARGUMENTS. Run the tests.

The body becomes the user's message with `$ARGUMENTS` replaced by what follows the command (appended when the
body has no placeholder). `allowed-tools` become "always allow" rules for the session when the command runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import CoderError, ConfigError
from coder.base.paths import config_dir
from coder.fs.beneath import read_beneath

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?", re.DOTALL)


@dataclass
class CustomCommand:
    name: str
    summary: str
    usage: str = ""
    body: str | None = None  # None: the file is broken and `summary` says why
    allowed_tools: list[str] = field(default_factory=list)
    source: str = ""

    def expand(self, arg: str) -> str:
        assert self.body is not None
        arg = arg.strip()
        if "$ARGUMENTS" in self.body:
            return self.body.replace("$ARGUMENTS", arg)
        return f"{self.body}\n\n{arg}" if arg else self.body


def load_custom(path: Path, workspace: Path | None = None) -> CustomCommand:
    """One `.md` command file; ConfigError names the file and the problem. With `workspace`, the file is the
    repository's and is read beneath it: not through a symlink that leaves, and only a regular file."""
    try:
        if workspace is not None:
            data = read_beneath(workspace, path.relative_to(workspace).as_posix())
            if data is None:
                raise OSError("not a regular file inside the repository")
            text = data.decode("utf-8")
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"custom command {path}: cannot be read ({exc}).") from exc
    meta: dict[str, Any] = {}
    match = _FRONT.match(text)
    if match:
        # start-up time: PyYAML loads only when this runs
        import yaml

        try:
            loaded = yaml.safe_load(match.group(1)) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"custom command {path}: the front matter is not valid YAML ({exc}).") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"custom command {path}: the front matter must be a mapping.")
        meta, text = loaded, text[match.end():]
    body = text.strip()
    if not body:
        raise ConfigError(f"custom command {path}: the body (the prompt to send) is empty.")
    tools = meta.get("allowed-tools", meta.get("allowed_tools", [])) or []
    if isinstance(tools, str):  # "a, bash(x, y), b": split on commas outside parentheses
        tools = [t.strip() for t in re.split(r",(?![^()]*\))", tools) if t.strip()]
    summary = str(meta.get("description") or body.splitlines()[0][:60])
    usage = str(meta.get("argument-hint", "")) or ("[arguments]" if "$ARGUMENTS" in body else "")
    return CustomCommand(path.stem.lower(), summary, usage, body, [str(t) for t in tools], str(path))


def custom_dirs(workspace: Path, trusted: bool = False) -> list[Path]:
    """The user's folder, then the repository's (later wins) when the workspace is trusted."""
    return [config_dir() / "commands"] + ([workspace / ".coder" / "commands"] if trusted else [])


def discover(workspace: Path, reserved: set[str], trusted: bool = False) -> dict[str, CustomCommand]:
    """Every custom command by name; broken files are listed (with why) instead of failing the whole list.

    A repository's command never pre-allows tools (`allowed-tools`): an allow rule is the user's to give, so
    only commands from the user's own folder carry one."""
    found: dict[str, CustomCommand] = {}
    user_dir = config_dir() / "commands"
    for folder in custom_dirs(workspace, trusted):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.md")):
            name = path.stem.lower()
            if name in reserved:
                continue
            try:
                found[name] = load_custom(path, None if folder == user_dir else workspace)
            except CoderError as exc:
                found[name] = CustomCommand(name, f"(broken: {exc})", source=str(path))
            if folder != user_dir:
                found[name].allowed_tools = []
    return found
