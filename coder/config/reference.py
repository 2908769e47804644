"""The configuration reference (docs/config.md), written from the declarations so it cannot drift from them, and the
values of a loaded configuration with where each came from (`coder config`).

`python -m coder.config.reference` rewrites docs/config.md; tests/config/test_config_reference.py fails when the
file differs from what the declarations give.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from coder.config.check import fields_of, header, hints
from coder.config.repository import entry_class
from coder.config.sections import Config
from coder.models.providers import PROVIDERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"

INTRO = """# Configuration

<!-- Written by `python -m coder.config.reference` from the declarations in coder/config/sections.py (and
coder/config/programs.py, coder/config/stuck.py, coder/sandbox/profile.py, coder/models/settings.py). Do not edit
by hand: tests/config/test_config_reference.py fails when this file and the declarations differ. The topic pages
say more about their own sections. -->

Where settings come from, how they are checked, and every key. coder reads these layers, each over the one before:

1. the built-in defaults (below);
2. your config, `~/.config/coder/config.toml` (`$XDG_CONFIG_HOME/coder/config.toml`);
3. the repository's `.coder/config.toml`: only what the **repository** column allows (the repository is somebody
   else's: it may lower your limits and add deny rules, never widen the sandbox, point a provider elsewhere or
   grant permissions; what it may not set is ignored and said once when the session starts; [trust.md](trust.md));
4. the environment variables of the **environment** column (a list variable adds to the files' list);
5. the command line (`--model`, `--permission-mode`, `--no-sandbox`, `--net-allow`, ...).

```toml
model = "anthropic:claude-sonnet-4-6"
max_turns = 100          # model requests per user turn (one `coder run` is one user turn)
max_wall_time = 3600     # seconds per user turn; also stops a running tool or stream
max_cost = 10.0          # USD for the whole session (cumulative across turns and resumes)
permission_mode = "ask"  # plan | ask | auto-edit | auto

[permissions]
deny = ["bash(rm -rf*)"]

[providers.anthropic]
max_retries = 6

[pricing."my-local-model"]   # USD per million tokens; extends the built-in table
input = 0.0
output = 0.0
```

Every value is checked when coder starts, before any session: a wrong type, an unknown key (with "did you mean"),
or a value out of range stops coder with one line naming the file, the line, the section and the key, and exit
code 2. The app on a terminal checks it as it opens its session, once its first screen takes keys, and says the
same line on that screen (no session opens; `/doctor` and `/quit` still answer). A string is never read as a list
(`deny = "bash"` is refused: write `deny = ["bash"]`), and `"false"` is not false. `coder config` shows the values
that are not built-in and which file and line set each one (`coder config --all` every key, `coder config KEY` one
key or section).

Other environment variables: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`
(providers); `CODER_STATE_DIR` (where the sessions database and per-session files live, default
`$XDG_STATE_HOME/coder`); `CODER_CHECKPOINTS_KEEP` (checkpoints kept per session, default 50).

Project instructions: `AGENTS.md` files from the repository root down to the working directory are added to the
system prompt (closer files last; `CLAUDE.md` where a folder has no `AGENTS.md`), capped at
`[instructions] max_bytes` with a note when cut.
"""


def type_name(hint: Any) -> str:
    """A type as the reference writes it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (bool, int, float, str):
        return {bool: "bool", int: "integer", float: "number", str: "string"}[hint]
    if hint is Any:
        return "any"
    if origin is Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is list:
        if dataclasses.is_dataclass(args[0]):
            return "tables"
        return f"list of {type_name(args[0])}" + ("s" if args[0] in (str, int) else "")
    if origin is dict:
        return "table of tables" if dataclasses.is_dataclass(args[1]) else "table"
    return "table"


def shown_default(f: dataclasses.Field) -> str:
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
    if value is dataclasses.MISSING:
        return "(required)"
    if value is None:
        return "unset"
    if value == [] or value == {}:
        return "empty"
    return f"`{json.dumps(value)}`"


def table_rows(cls: type) -> list[str]:
    rows = ["| key | type | default | repository | environment | meaning |", "|---|---|---|---|---|---|"]
    for name, f in fields_of(cls).items():
        hint = hints(cls)[name]
        if f.metadata["repo"] is None:
            continue  # a section: its own heading
        repo = f.metadata["repo"].value
        if f.metadata["safe"] is not None:
            repo = f"only `{json.dumps(f.metadata['safe'])}`"
        bounds = " ".join(f"({words} {f.metadata[b]:g})" for b, words in
                          (("above", ">"), ("at_least", ">="), ("at_most", "<=")) if f.metadata.get(b) is not None)
        env = f"`{f.metadata['env']}`" if f.metadata["env"] else ""
        rows.append(f"| `{name}` | {type_name(hint)} {bounds} | {shown_default(f)} | {repo} | {env} | "
                    f"{f.metadata['doc']} |".replace("  |", " |"))
    return rows


#: the word a table of tables is written with in the headings (`[providers.NAME]`)
PLACEHOLDERS = {"pricing": "MODEL", "hooks": "EVENT"}


def about(cls: type, doc: str) -> str:
    """What a section is: its class's docstring (without the `[name]:` it opens with), the field's `doc` before
    a docstring that says something else, or the field's doc alone."""
    text = " ".join((cls.__dict__.get("__doc__") or "").split())
    if not text or text.startswith(f"{cls.__name__}("):  # the signature dataclass writes when there is none
        return doc
    intro = re.match(r"^`\[[^`]*\]`( \([^)]*\))?: ", text)
    if intro is None:
        return f"{doc} {text}"
    text = text[intro.end():]
    return text[:1].upper() + text[1:]


def sections(cls: type, keys: tuple[str, ...] = (), doc: str = "") -> list[str]:
    """The reference of section `cls` at `keys` and of every table inside it."""
    out: list[str] = []
    title = header(keys) if keys else "Top-level keys"
    out += [f"## {title}", ""]
    if keys:
        out += [about(cls, doc), ""]
    if any(f.metadata["repo"] is not None for f in fields_of(cls).values()):
        out += [*table_rows(cls), ""]
    for name, f in fields_of(cls).items():
        hint = hints(cls)[name]
        if f.metadata["repo"] is None:
            out += sections(hint, (*keys, name), f.metadata["doc"])
            continue
        entry = entry_class(hint)
        if entry is not None and entry not in _SHOWN:
            _SHOWN.add(entry)
            if typing.get_origin(hint) is list:  # [[hooks.EVENT]]: one heading for the entries of every event
                inner = (*keys, PLACEHOLDERS.get(keys[-1], name), "#1") if keys else (name, "#1")
            else:
                inner = (*keys, name, PLACEHOLDERS.get(name, "NAME"))
            out += sections(entry, inner, f.metadata["doc"])
            if name == "providers":
                out += ["Each provider reads only its own keys: " + "; ".join(
                    f"{spec.name}: {', '.join(sorted(spec.config_keys))}" for spec in PROVIDERS.values()) + ".", ""]
    return out


_SHOWN: set[type] = set()


def reference() -> str:
    """docs/config.md as the declarations give it."""
    _SHOWN.clear()
    return INTRO + "\n" + "\n".join(sections(Config)).rstrip() + "\n"


# ------------------------------------------------------------------------------------------- a loaded config's values
def values(obj: Any, keys: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """(dotted key, value) of every setting of a built configuration (a list of tables is one value)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [row for name in fields_of(type(obj)) for row in values(getattr(obj, name), (*keys, name))]
    if isinstance(obj, dict) and obj:
        return [row for name, item in obj.items() for row in values(item, (*keys, str(name)))]
    if isinstance(obj, list):
        obj = [dataclasses.asdict(x) if dataclasses.is_dataclass(x) else x for x in obj]  # type: ignore[arg-type]
    return [(".".join(keys), obj)]


def main() -> int:
    text = reference()
    if "--check" in sys.argv:
        return 0 if DOC.is_file() and DOC.read_text(encoding="utf-8") == text else 1
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
