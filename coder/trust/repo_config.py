"""What a repository's `.coder/config.toml` may set: the line between a project's preferences and the user's safety.

A cloned repository is written by somebody else. Its config is read, validated like any other layer, and then
filtered here before it is merged:

- **Never from a repository**, trusted or not (the user's own config, the environment and flags only):
  `[providers]` (a `base_url` there receives the API key), `[pricing]` (a zero price disarms `max_cost`),
  `[permissions] allow` rules, `[vcs] hooks`, everything in `[sandbox]` that widens it (`enabled = false`,
  `network`, `extra_rw`, `extra_ro`, `env_allow`, and the network lists `allowed_domains`, `denied_domains`,
  `network_presets`), hooks and MCP servers that would run outside the sandbox
  (`sandbox = false` hooks), and a `permission_mode` broader than the one the user's layers give.
- **Only when the workspace is trusted**: `model`, `max_tokens`, `thinking_budget`, `[review]`, `[hooks]` (the
  sandboxed ones; they are added to the user's, never replace them), `[mcp]` servers (each still approved by name
  and command at trust time), the rest of `[sandbox]` (timeouts and resource limits), `[vcs] keep_sessions`.
- **Never from a repository** either: `[lsp]` servers and settings (a server is a program on the host); a
  repository may only turn them off (`[lsp] enabled = false` or `diagnostics = false`).
- **Always** (harmless: they change how coder works, not what runs or where data goes): `[edit]`, `[context]`,
  `[instructions]`, `[permissions] ask` and `deny` rules (they only narrow), and limits (`max_turns`,
  `max_cost`, `max_wall_time`) that lower the value the user's layers give; a repository can never raise them.

Each ignored key is reported once, in words, so the user knows what the repository wanted.
"""

from __future__ import annotations

from typing import Any

MODE_ORDER = ("plan", "ask", "auto-edit", "auto")
ALWAYS_SECTIONS = frozenset({"edit", "context", "instructions"})
TRUSTED_ONLY = frozenset({"model", "max_tokens", "thinking_budget", "review", "mcp"})
NEVER_SECTIONS = frozenset({"providers", "pricing"})
LOWER_ONLY = ("max_turns", "max_cost", "max_wall_time")
SANDBOX_WIDENING = frozenset({"enabled", "network", "extra_rw", "extra_ro", "env_allow"})
#: network by domain (issue 21): the lists and presets are the user's alone, even the narrowing deny list (a list
#: starts the proxy and its questions; a repository that wants less network can simply not use it)
SANDBOX_NETWORK = frozenset({"allowed_domains", "denied_domains", "network_presets"})


def filter_repository(data: dict[str, Any], current: dict[str, Any], trusted: bool,
                      source: str) -> tuple[dict[str, Any], list[str]]:
    """The part of a repository's config that may be merged over `current` (the layers below it), and what was
    ignored, one line per key."""
    kept: dict[str, Any] = {}
    ignored: list[str] = []

    def drop(key: str, why: str) -> None:
        ignored.append(f"{source}: {key} ignored ({why})")

    for key, value in data.items():
        if key in ALWAYS_SECTIONS:
            kept[key] = value
        elif key in LOWER_ONLY:
            if value <= current[key]:
                kept[key] = value
            else:
                drop(key, f"a repository may lower it, not raise it above {current[key]}")
        elif key in NEVER_SECTIONS:
            drop(f"[{key}]", "only your own config, the environment or flags may set it")
        elif key == "permission_mode":
            if MODE_ORDER.index(value) <= MODE_ORDER.index(current[key]):
                kept[key] = value
            else:
                drop(key, f"{value!r} is broader than your {current[key]!r}")
        elif key == "permissions":
            narrowing = {k: v for k, v in value.items() if k in ("ask", "deny")}
            if "allow" in value:
                drop("[permissions] allow", "allow rules come only from your own config, flags or answers")
            if narrowing:
                kept[key] = narrowing
        elif key == "sandbox":
            part = _sandbox(value, trusted, drop)
            if part:
                kept[key] = part
        elif key == "vcs":
            if "hooks" in value:
                drop("[vcs] hooks", "running commit hooks is your decision, not the repository's")
            if trusted and "keep_sessions" in value:
                kept[key] = {"keep_sessions": value["keep_sessions"]}
            elif "keep_sessions" in value:
                drop("[vcs] keep_sessions", "the workspace is not trusted")
        elif key == "lsp":  # which programs run as language servers is the user's choice: a repository only turns
            # them off
            off = {k: v for k, v in value.items() if k in ("enabled", "diagnostics") and v is False}
            for k in sorted(set(value) - set(off)):
                drop(f"[lsp] {k}", "which language servers run is your choice; a repository may only turn them off")
            if off:
                kept[key] = off
        elif key == "hooks":
            part = _hooks(value, trusted, drop)
            if part:
                kept[key] = part
        elif key in TRUSTED_ONLY:
            if trusted:
                kept[key] = value
            else:
                drop(key if not isinstance(value, dict) else f"[{key}]", "the workspace is not trusted")
        else:  # a key validate() knows but this table does not: refuse rather than guess
            drop(key, "not a setting a repository may make")
    return kept, ignored


def _sandbox(section: dict[str, Any], trusted: bool, drop) -> dict[str, Any]:
    kept = {}
    for key, value in section.items():
        if key in SANDBOX_WIDENING:
            drop(f"[sandbox] {key}", "it would widen the sandbox; only your own config or flags may")
        elif key in SANDBOX_NETWORK:
            drop(f"[sandbox] {key}", "the sandbox's network lists come only from your own config or flags")
        elif trusted:
            kept[key] = value
        else:
            drop(f"[sandbox] {key}", "the workspace is not trusted")
    return kept


def _hooks(section: dict[str, Any], trusted: bool, drop) -> dict[str, Any]:
    if not trusted:
        drop("[hooks]", "the workspace is not trusted")
        return {}
    kept: dict[str, Any] = {}
    for event, entries in section.items():
        if not isinstance(entries, list):
            kept[event] = entries  # parse_hooks names the mistake
            continue
        sandboxed = [e for e in entries if not (isinstance(e, dict) and e.get("sandbox") is False)]
        if len(sandboxed) < len(entries):
            drop(f"[[hooks.{event}]] sandbox = false", "only your own config may run hooks outside the sandbox")
        if sandboxed:
            kept[event] = sandboxed
    return kept


def merge_hooks(base: dict[str, Any], repo: dict[str, Any]) -> dict[str, Any]:
    """The user's hooks first, then the repository's: a repository adds checks, it never removes the user's."""
    out = {event: list(entries) for event, entries in base.items()}
    for event, entries in repo.items():
        out[event] = list(out.get(event, [])) + list(entries) if isinstance(entries, list) else entries
    return out
