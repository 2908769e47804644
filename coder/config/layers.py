"""Layered configuration: defaults < ~/.config/coder/config.toml < <repo>/.coder/config.toml < env < flags.

The result is a plain dict (services read their own section: `config["sandbox"]`, `config["context"]`, ...).
Top-level keys, their types and the fixed sections are checked here, with errors that name the file and the key;
each service validates the inside of its own section (`SandboxConfig.from_dict`, `parse_hooks`, MCP servers).

The repository's layer is written by somebody else: `coder/trust/repo_config.py` decides what of it is merged (less
when the workspace is not trusted, never what widens the sandbox, points a provider elsewhere or grants
permissions). Three keys the loader adds say how the result came about:
- `_provenance`: every leaf key (`sandbox.network`, `permissions.allow`) -> the layer that set it last
  (`built-in`, `user <path>`, `repository <path>`, `environment`, `flag`);
- `_ignored`: one line per repository key that was not honoured, and why;
- `_trusted`: whether the workspace's own configuration was trusted for this load.
"""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.base.paths import config_dir
from coder.models.providers import PROVIDERS

DEFAULTS: dict[str, Any] = {
    "model": None,
    "max_turns": 100,
    "max_cost": 10.0,
    "max_wall_time": 3600.0,
    "max_tokens": 8192,
    "permission_mode": "ask",
    "thinking_budget": None,
    "instructions": {"max_bytes": 32_000},
    "providers": {},
    "pricing": {},
    "sandbox": {},
    "permissions": {},
    "context": {},
    "review": {},
    "vcs": {},
    "mcp": {},
    "hooks": {},
    "edit": {},
    "lsp": {},
    "stuck": {},  # coder/stuck checks its own keys (thresholds.json's patterns)
    "notifications": {},  # the app's and the REPL's: when = unfocused | always | never, method (coder/tui/notify.py)
    "skills": {},  # Agent Skills (coder/ext/skills.py): prompt_chars, the system prompt's budget for them
}

#: sections whose keys are a fixed set (a typo in them must not be silently ignored); the services owning the
#: other sections ([sandbox], [context], [providers.X], [hooks], [mcp.servers.X]) check their keys themselves
SECTION_KEYS: dict[str, frozenset[str]] = {
    "permissions": frozenset({"allow", "ask", "deny"}),
    "instructions": frozenset({"max_bytes"}),
    "edit": frozenset({"syntax_guard", "max_bytes", "view_max_chars"}),
    "mcp": frozenset({"servers"}),
    "review": frozenset({"base", "stages", "llm_on_fail", "tests", "lint", "llm_max_findings", "max_binary_kb",
                         "max_text_kb", "run_tests", "max_fix_rounds"}),
    "vcs": frozenset({"hooks", "keep_sessions"}),
    "skills": frozenset({"prompt_chars"}),
    "notifications": frozenset({"when", "method"}),
    "lsp": frozenset({"enabled", "diagnostics", "wait", "navigation_wait", "start_timeout", "severity", "ignore",
                      "servers"}),
}

#: limits that must be positive to mean anything
POSITIVE = ("max_turns", "max_cost", "max_wall_time", "max_tokens")

#: key -> accepted types (None accepted for keys whose default is None)
SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "max_turns": (int,),
    "max_cost": (int, float),
    "max_wall_time": (int, float),
    "max_tokens": (int,),
    "permission_mode": (str,),
    "thinking_budget": (int,),
}

ENV_KEYS: dict[str, tuple[str, type]] = {
    "CODER_MODEL": ("model", str),
    "CODER_MAX_TURNS": ("max_turns", int),
    "CODER_MAX_COST": ("max_cost", float),
    "CODER_PERMISSION_MODE": ("permission_mode", str),
}

MODES = ("plan", "ask", "auto-edit", "auto")
#: `[notifications]` values (coder/tui/notify.py): when to notify, and how
NOTIFY_WHEN = ("unfocused", "always", "never")
NOTIFY_METHODS = ("auto", "osc9", "osc777", "bell")


def user_config_path() -> Path:
    return config_dir() / "config.toml"


def project_config_path(workspace: Path) -> Path:
    return workspace / ".coder" / "config.toml"


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `override` into a copy of `base` (tables merge, everything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def validate(data: dict[str, Any], source: str) -> None:
    for key, value in data.items():
        if key not in DEFAULTS:
            known = ", ".join(sorted(DEFAULTS))
            raise ConfigError(f"{source}: unknown key {key!r}. Known keys: {known}.")
        if isinstance(DEFAULTS[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: {key!r} must be a table ([{key}]), not {type(value).__name__}.")
            continue
        types = SCALAR_TYPES.get(key)
        if value is not None and types and (not isinstance(value, types) or isinstance(value, bool)):
            want = " or ".join(t.__name__ for t in types)
            raise ConfigError(f"{source}: {key!r} must be {want}, not {value!r}.")
    # [providers] takes one table per registered provider (coder/models/providers.py), read when checked so a
    # provider registered after this module was imported counts too
    for key, known in [*SECTION_KEYS.items(), ("providers", frozenset(PROVIDERS))]:
        section = data.get(key)
        if isinstance(section, dict):
            unknown = sorted(set(section) - known)
            if unknown:
                raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} in [{key}]. "
                                  f"Known: {', '.join(sorted(known))}.")
    for key in POSITIVE:
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise ConfigError(f"{source}: {key!r} must be greater than 0, not {value!r}.")
    notifications = data.get("notifications")
    for key, allowed in (("when", NOTIFY_WHEN), ("method", NOTIFY_METHODS)):
        value = notifications.get(key) if isinstance(notifications, dict) else None
        if value is not None and value not in allowed:
            raise ConfigError(f"{source}: [notifications] {key} = {value!r} is not one of {', '.join(allowed)}.")
    mode = data.get("permission_mode")
    if mode is not None and mode not in MODES:
        raise ConfigError(f"{source}: permission_mode {mode!r} is not one of {', '.join(MODES)}.")


def read_toml(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The validated table of the TOML file `path` (or of `data`, its bytes already read)."""
    try:
        text = data.decode("utf-8") if data is not None else path.read_text(encoding="utf-8")
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}.") from exc
    validate(table, str(path))
    return table


def env_overrides(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for var, (key, kind) in ENV_KEYS.items():
        raw = environ.get(var)
        if raw in (None, ""):
            continue
        try:
            out[key] = kind(raw)
        except ValueError as exc:
            raise ConfigError(f"environment variable {var}={raw!r} is not a valid {kind.__name__}.") from exc
    extra_ro = [p for p in environ.get("CODER_SANDBOX_EXTRA_RO", "").split(os.pathsep) if p]
    if extra_ro:  # read-only folders for the sandbox, set by a parent (`coder swebench run`: the environment)
        out["sandbox"] = {"extra_ro": extra_ro}
    presets = [p.strip() for p in environ.get("CODER_NETWORK_PRESETS", "").split(",") if p.strip()]
    if presets:  # network presets for the sandbox's proxy, set by a parent (`coder batch --net-preset`)
        out.setdefault("sandbox", {})["network_presets"] = presets
    validate(out, "environment")
    return out


def leaf_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of the leaves of a nested table (`sandbox.network`); a list counts as one leaf."""
    out: list[str] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(leaf_keys(value, name + "."))
        else:
            out.append(name)
    return out


def load_config(workspace: Path | None, flags: dict[str, Any] | None = None, trusted: bool = False,
                repo_files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """The merged configuration for a session in `workspace`. `flags` holds command-line values (None = unset).

    `trusted` says whether the workspace's own config is trusted (see `coder.trust.decisions`); untrusted, only the keys
    `config_repo` calls always harmless are taken from it. `repo_files` are the repository's defining files as
    the trust check read them (`TrustRequest.files`): the config used is then the one that was fingerprinted.
    Otherwise it is read here, never through a symlink."""
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.trust.repo_config import filter_repository, merge_hooks

    config = copy.deepcopy(DEFAULTS)
    provenance = dict.fromkeys(leaf_keys(DEFAULTS), "built-in")
    sources: list[str] = []
    ignored: list[str] = []

    def layer(data: dict[str, Any], name: str) -> None:
        nonlocal config
        hooks = data.pop("hooks", None) if name.startswith("repository") else None
        config = merge(config, data)
        if hooks:
            config["hooks"] = merge_hooks(config["hooks"], hooks)
            data["hooks"] = hooks
        provenance.update(dict.fromkeys(leaf_keys(data), name))

    user_path = user_config_path()
    if user_path.is_file():
        layer(read_toml(user_path), f"user {user_path}")
        sources.append(str(user_path))
    repo_path = project_config_path(workspace) if workspace else None
    repo_bytes = None
    if workspace is not None and repo_path is not None:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.trust.reader import read_repo_file

        rel = ".coder/config.toml"
        repo_bytes = repo_files.get(rel) if repo_files is not None else read_repo_file(workspace, rel, ignored)
    if repo_path is not None and repo_bytes is not None:
        kept, dropped = filter_repository(read_toml(repo_path, repo_bytes), config, trusted, str(repo_path))
        layer(kept, f"repository {repo_path}")
        ignored.extend(dropped)
        sources.append(str(repo_path))
    env_layer = env_overrides()
    for key in ("extra_ro", "network_presets"):  # the environment's lists add to the user's, never replace them
        if key in env_layer.get("sandbox", {}):
            env_layer["sandbox"][key] = list(config["sandbox"].get(key, [])) + env_layer["sandbox"][key]
    layer(env_layer, "environment")
    set_flags = {k: v for k, v in (flags or {}).items() if v is not None}
    validate(set_flags, "command line")
    layer(set_flags, "flag")
    config.update(_sources=sources, _provenance=provenance, _ignored=ignored, _trusted=trusted)
    return config
