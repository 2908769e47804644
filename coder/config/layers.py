"""Layered configuration: built-in < ~/.config/coder/config.toml < <repo>/.coder/config.toml < environment < flags.

One layer sits above them all when it is there: a batch agent's reach (`CODER_BATCH_REACH`, set by
coder/batch/runner.py for every agent it starts). What a session can reach beyond its workspace (REACH_KEYS: the
sandbox's network, extra folders and passed variables, MCP servers, web search) then comes from the batch alone,
starting closed (CLOSED_REACH), whatever the user's files, environment or flags say: an evaluation's agent must
not inherit the user's allow-list or servers (issue 44).

Each layer is checked on its own against the declarations (coder/config/sections.py), so a mistake names its own
file and line (or variable, or flag); the repository's layer is then filtered (coder/config/repository.py); the
layers are merged (tables merge key by key; a list replaces the one below, except that the environment's and the
flags' lists, and a repository's lists that only add, are added to it); and the result is built once into a
`Config` that knows which layer set each value. Nothing downstream reads a raw table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.base.paths import config_dir
from coder.config.check import Keys, Layer, build, check_all, fields_of, hints, read
from coder.config.repository import appends, filter_repository
from coder.config.sections import Config, Origin
from coder.trust.reader import read_repo_file

REPO_FILE = ".coder/config.toml"

#: the environment variable holding a batch agent's reach, a JSON table of REACH_KEYS (the rest is refused)
BATCH_REACH_VAR = "CODER_BATCH_REACH"
#: a batch agent's reach before the batch grants anything: the keys that widen what a session reaches, closed
CLOSED_REACH: dict[str, dict[str, Any]] = {
    "sandbox": {"enabled": True, "network": False, "extra_rw": [], "extra_ro": [], "env_allow": [],
                "allowed_domains": [], "network_presets": []},
    "mcp": {"servers": {}},
    "web": {"search": "off", "search_backend": ""},
}
REACH_KEYS: tuple[Keys, ...] = tuple((section, key) for section, keys in CLOSED_REACH.items() for key in keys)


def user_config_path() -> Path:
    return config_dir() / "config.toml"


def project_config_path(workspace: Path) -> Path:
    return workspace / REPO_FILE


# ------------------------------------------------------------------------------------------------ reading layers
_BARE = r"[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*((?:{_BARE})(?:\s*\.\s*(?:{_BARE}))*)\s*\]\]?")
_KEY = re.compile(rf"^\s*((?:{_BARE})(?:\s*\.\s*(?:{_BARE}))*)\s*=")


def _parts(dotted: str) -> Keys:
    return tuple(p.strip("\"'") for p in re.findall(_BARE, dotted))


def key_lines(text: str) -> dict[Keys, int]:
    """Where each key of a TOML text is written (first line of its value), for the messages. A small scan rather
    than a parser: tomllib keeps no positions, and a line only has to be near enough to find the mistake."""
    lines: dict[Keys, int] = {}
    table: Keys = ()
    counts: dict[Keys, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if header := _HEADER.match(line):
            table = _parts(header.group(2))
            if header.group(1) == "[[":  # an array of tables: entries are numbered from 1, as in the messages
                lines.setdefault(table, number)
                counts[table] = counts.get(table, 0) + 1
                table = (*table, f"#{counts[table]}")
            lines.setdefault(table, number)
        elif key := _KEY.match(line):
            lines.setdefault((*table, *_parts(key.group(1))), number)
    return lines


def read_file(path: Path, name: str, data: bytes | None = None) -> Layer:
    """The checked layer of the TOML file `path` (or of `data`, its bytes already read)."""
    try:
        text = data.decode("utf-8") if data is not None else path.read_text(encoding="utf-8")
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from exc
    except ValueError as exc:  # tomllib's int() of a number over 4,300 digits
        raise ConfigError(f"{path}: not valid TOML: {str(exc).split(':')[0]}.") from exc
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise ConfigError(f"{path}: not valid TOML: nested too deeply.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}.") from exc
    layer = Layer(name, table, str(path), key_lines(text), written=table)
    layer.data = read(Config, table, layer)
    return layer


def env_fields(cls: type = Config, keys: Keys = ()) -> list[tuple[Keys, str, Any, dataclasses.Field]]:
    """(keys, variable, type, field) of every key an environment variable sets."""
    out = []
    for name, f in fields_of(cls).items():
        hint = hints(cls)[name]
        if f.metadata["repo"] is None:
            out.extend(env_fields(hint, (*keys, name)))
        elif f.metadata["env"]:
            out.append(((*keys, name), f.metadata["env"], hint, f))
    return out


def env_layer(environ: typing.Mapping[str, str] | None = None) -> Layer:
    """The CODER_* variables the declarations name, parsed and checked (a list variable is split at the field's
    `env_split`, and adds to the files' list)."""
    environ = os.environ if environ is None else environ
    layer = Layer("environment", {})
    raw: dict[str, Any] = {}
    for keys, var, hint, f in env_fields():
        text = environ.get(var, "")
        if not text:
            continue
        layer.labels[keys] = var
        arms = [a for a in (hint, *typing.get_args(hint)) if a in (int, float)]
        try:
            if typing.get_origin(hint) is list:
                value: Any = [p.strip() for p in text.split(f.metadata["env_split"]) if p.strip()]
            elif hint is bool:  # the way such variables are written (CODER_ENABLE_TELEMETRY=1)
                value = env_bool(var, text)
            elif arms:
                value = arms[0](text)
            else:
                value = text
        except ValueError:
            raise ConfigError(f"environment variable {var}={text!r}: expected "
                              f"{'a whole number' if arms[0] is int else 'a number'}.") from None
        node = raw
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    layer.data = read(Config, raw, layer)
    return layer


def env_bool(var: str, text: str) -> bool:
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"environment variable {var}={text!r}: expected 1 or 0 (true or false).")


def flag_layer(flags: dict[str, Any] | None) -> Layer:
    """The command line's values (None = not given), as a table like a file's: `{"max_turns": 5, "sandbox":
    {"enabled": False}}`."""
    def given(table: dict[str, Any]) -> dict[str, Any]:
        values = {k: given(v) if isinstance(v, dict) else v for k, v in table.items()}
        return {k: v for k, v in values.items() if v is not None and v != [] and v != {}}

    layer = Layer("flag", given(flags or {}), labels={(k,): f"--{k.replace('_', '-')}" for k in flags or {}})
    layer.data = read(Config, layer.data, layer)
    return layer


# --------------------------------------------------------------------------------------------------- merging
def merge(base: dict[str, Any], over: dict[str, Any], adds: Callable[[Keys], bool],
          keys: Keys = ()) -> dict[str, Any]:
    """`over` merged into a copy of `base`: tables key by key; a list replaces, unless `adds(keys)`."""
    out = dict(base)
    for key, value in over.items():
        at = (*keys, key)
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value, adds, at)
        elif isinstance(value, list) and adds(at):
            below = list(out.get(key) or [])
            out[key] = below + [v for v in value if v not in below]
        else:
            out[key] = value
    return out


def leaves(table: dict[str, Any], keys: Keys = ()) -> list[Keys]:
    """The keys of a table's values (a list is one value; an empty table is one too)."""
    out: list[Keys] = []
    for key, value in table.items():
        if isinstance(value, dict) and value:
            out.extend(leaves(value, (*keys, key)))
        else:
            out.append((*keys, key))
    return out


def default_at(keys: Keys, cls: type = Config) -> Any:
    """The built-in value of a key."""
    value: Any = cls()
    for key in keys:
        value = getattr(value, key) if dataclasses.is_dataclass(value) else value.get(key)
    return value


def value_at(table: dict[str, Any], keys: Keys) -> Any:
    """The value of a key in a merged table, else its built-in value."""
    for key in keys:
        if not isinstance(table, dict) or key not in table:
            return default_at(keys)
        table = table[key]
    return table


def load_config(workspace: Path | None, flags: dict[str, Any] | None = None, trusted: bool = False,
                repo_files: dict[str, bytes] | None = None) -> Config:
    """The configuration for a session in `workspace`. `flags` holds command-line values (None = unset).

    `trusted` says whether the workspace's own config is trusted (see `coder.trust.decisions`); untrusted, only
    the keys a repository may always set are taken from it. `repo_files` are the repository's defining files as
    the trust check read them (`TrustRequest.files`): the config used is then the one that was fingerprinted.
    Otherwise it is read here, never through a symlink."""
    merged: dict[str, Any] = {}
    provenance: dict[str, Origin] = {}
    sources: list[Path] = []
    ignored: list[str] = []
    written: dict[str, Any] = {}

    def apply(layer: Layer, adds: Callable[[Keys], bool]) -> None:
        nonlocal merged
        merged = merge(merged, layer.data, adds)
        for keys in leaves(layer.data):
            provenance[".".join(keys)] = Origin(layer.name, layer.path, layer.line(keys))

    user_path = user_config_path()
    if user_path.is_file():
        apply(read_file(user_path, "user"), lambda keys: False)
        sources.append(user_path)
    if workspace is not None:
        repo_path = project_config_path(workspace)
        repo_bytes = repo_files.get(REPO_FILE) if repo_files is not None else \
            read_repo_file(workspace, REPO_FILE, ignored)
        if repo_bytes is not None:
            layer = read_file(repo_path, "repository", repo_bytes)
            written = layer.written
            layer.data, dropped = filter_repository(Config, layer.data, lambda keys: value_at(merged, keys), trusted,
                                                    str(repo_path))
            ignored.extend(dropped)
            apply(layer, lambda keys: appends(Config, keys))
            sources.append(repo_path)
    apply(env_layer(), lambda keys: True)
    apply(flag_layer(flags), lambda keys: True)
    pinned = reach_layer()
    if pinned is not None:  # replaces, never merges: a table of servers is not added to the user's
        for section, key in REACH_KEYS:
            merged.setdefault(section, {})[key] = pinned.data[section][key]
            prefix = f"{section}.{key}"
            for below in [k for k in provenance if k == prefix or k.startswith(prefix + ".")]:
                del provenance[below]
            provenance[prefix] = Origin(pinned.name)
    config = build(Config, merged)
    config.provenance, config.sources, config.ignored, config.trusted = provenance, sources, ignored, trusted
    config.repo_files, config.repository_layer, config.reach_pinned = repo_files, written, pinned is not None
    check_all(config, lambda keys: config.origin(".".join(keys), near=True).where)
    return config


def reach_layer(environ: typing.Mapping[str, str] | None = None) -> Layer | None:
    """A batch agent's reach (BATCH_REACH_VAR): CLOSED_REACH with the batch's grants over it, checked like any
    layer; None outside a batch."""
    text = (os.environ if environ is None else environ).get(BATCH_REACH_VAR, "")
    if not text:
        return None
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{BATCH_REACH_VAR}: not JSON: {exc}.") from None
    keys = ", ".join(".".join(k) for k in REACH_KEYS)
    if not isinstance(given, dict) or not all(isinstance(v, dict) for v in given.values()):
        raise ConfigError(f"{BATCH_REACH_VAR}: a JSON table of tables ({keys}).")
    table = {section: dict(values) for section, values in CLOSED_REACH.items()}
    for section, values in given.items():
        for key, value in values.items():
            if (section, key) not in REACH_KEYS:
                raise ConfigError(f"{BATCH_REACH_VAR}: {section}.{key} is not a key of the reach ({keys}).")
            table[section][key] = value
    layer = Layer("batch", table, labels={(s,): BATCH_REACH_VAR for s in CLOSED_REACH})
    layer.data = read(Config, table, layer)
    return layer


def settings(data: dict[str, Any] | None = None, source: str = "settings") -> Config:
    """A Config from one table, checked like a layer over the built-in values (for tests, and for code that
    composes a configuration rather than reading one)."""
    layer = Layer(source, dict(data or {}))
    config = build(Config, read(Config, layer.data, layer))
    check_all(config, lambda keys: source)
    return config
