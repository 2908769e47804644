"""Custom slash commands: Markdown files in `$XDG_CONFIG_HOME/coder/commands/` and `.coder/commands/` of the
repository (the project's file wins on a name clash; a file cannot shadow a built-in command).

    ---
    description: fix the named bug
    allowed-tools: bash(pytest*), str_replace_based_edit_tool
    argument-hint: "[bug]"
    ---
    Find and fix this bug: $ARGUMENTS. Run the tests.

The body becomes the user's message with `$ARGUMENTS` replaced by what follows the command (appended when the
body has no placeholder; `$1` ... `$9` are its words, as in Claude Code). `allowed-tools` become "always allow"
rules for the session when the command runs.

Claude Code's commands count too, in its format (https://docs.claude.com/en/docs/claude-code/slash-commands):
`~/.claude/commands/` (the user's), `.claude/commands/` of a trusted repository (subfolders organise them: the
name is the file's, the folder shows in the description), and each enabled plugin's `commands/` (named
`/plugin:command`, and `/command` too when no other command has that name). Their `allowed-tools` are Claude
Code rules (`Bash(git add:*)`), translated (coder/policy/claude_rules.py). A `!` line (run a command first) is
not run: the model reads it as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from coder.base.errors import CoderError, ConfigError
from coder.base.paths import config_dir
from coder.ext.manifests import ClaudeCommandFile, CommandFile, read_markdown
from coder.fs.beneath import read_beneath
from coder.policy.claude_rules import translate_rule


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
        words = arg.split()
        body = re.sub(r"\$([1-9])", lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "",
                      self.body)
        if "$ARGUMENTS" in body:
            return body.replace("$ARGUMENTS", arg)
        if body != self.body:
            return body
        return f"{body}\n\n{arg}" if arg else body


def load_custom(path: Path, workspace: Path | None = None, lenient: bool = False) -> CustomCommand:
    """One `.md` command file; ConfigError names the file and the problem. With `workspace`, the file is the
    repository's and is read beneath it: not through a symlink that leaves, and only a regular file. `lenient`:
    Claude Code's format (ClaudeCommandFile: keys coder does not read are left out, and front matter lines that
    YAML refuses are taken as plain `key: value` lines); else coder's own (CommandFile)."""
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
    meta, body = read_markdown(ClaudeCommandFile if lenient else CommandFile, path, text=text, lenient=lenient)
    body = body.strip()
    if not body:
        raise ConfigError(f"custom command {path}: the body (the prompt to send) is empty.")
    summary = meta.description or body.splitlines()[0][:60]
    usage = meta.hint() or ("[arguments]" if "$ARGUMENTS" in body else "")
    return CustomCommand(path.stem.lower(), summary, usage, body, meta.tools(), str(path))


@dataclass(frozen=True)
class CommandFolder:
    """One place custom commands come from."""

    path: Path
    #: the repository's: read beneath the workspace, and its `allowed-tools` never count
    repository: bool = False
    #: Claude Code's format: `allowed-tools` are Claude Code rules, subfolders hold commands too
    claude: bool = False
    #: a plugin's: its commands are `/plugin:name`
    plugin: str = ""


def custom_dirs(workspace: Path, trusted: bool = False,
                plugin_dirs: list[tuple[str, Path]] | None = None) -> list[CommandFolder]:
    """Where commands come from, later winning a name: plugins', the user's (Claude Code's, then coder's), then
    the repository's (Claude Code's, then coder's) when the workspace is trusted."""
    folders = [CommandFolder(path, claude=True, plugin=name) for name, path in plugin_dirs or []]
    folders += [CommandFolder(Path.home() / ".claude" / "commands", claude=True),
                CommandFolder(config_dir() / "commands")]
    if trusted:
        folders += [CommandFolder(workspace / ".claude" / "commands", repository=True, claude=True),
                    CommandFolder(workspace / ".coder" / "commands", repository=True)]
    return folders


def discover(workspace: Path, reserved: set[str], trusted: bool = False,
             plugin_dirs: list[tuple[str, Path]] | None = None) -> dict[str, CustomCommand]:
    """Every custom command by name; broken files are listed (with why) instead of failing the whole list.

    A repository's command never pre-allows tools (`allowed-tools`): an allow rule is the user's to give, so
    only commands from the user's own folders and plugins carry one."""
    found: dict[str, CustomCommand] = {}
    for folder in custom_dirs(workspace, trusted, plugin_dirs):
        if folder.path.is_symlink() or not (folder.path.is_dir() or (folder.plugin and folder.path.is_file())):
            continue
        paths = [folder.path] if folder.path.is_file() else \
            folder.path.rglob("*.md") if folder.claude else folder.path.glob("*.md")
        for path in sorted(paths):
            name = path.stem.lower()
            if name in reserved:
                continue
            try:
                command = load_custom(path, workspace if folder.repository else None, lenient=folder.claude)
            except CoderError as exc:
                command = CustomCommand(name, f"(broken: {exc})", source=str(path))
            if folder.claude:
                _claude_format(command, folder, path)
            if folder.repository:
                command.allowed_tools = []
            if folder.plugin:
                found.setdefault(name, command)  # `/name` too, unless another command has it
                name = f"{folder.plugin}:{name}"
                command.name = name
            found[name] = command
    return found


def _claude_format(command: CustomCommand, folder: CommandFolder, path: Path) -> None:
    """A Claude Code command: its rules translated (those coder cannot match dropped), its subfolder shown."""
    rules: list[str] = []
    for text in command.allowed_tools:
        rules += translate_rule(text, project_file=folder.repository)[0]
    command.allowed_tools = rules
    sub = path.parent.relative_to(folder.path).as_posix() if folder.path.is_dir() else "."
    where = "project" if folder.repository else (f"plugin {folder.plugin}" if folder.plugin else "user")
    if sub != "." or folder.plugin:
        command.summary += f" ({where}{':' + sub if sub != '.' else ''})"
