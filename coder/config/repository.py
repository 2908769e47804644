"""What a repository's `.coder/config.toml` may set: the line between a project's preferences and the user's safety.

A cloned repository is written by somebody else. Its layer is checked like any other, then filtered here before
it is merged, key by key, by the `repo=` each key declares (coder/base/settings.py `Repo`; the reference,
docs/config.md, has a column for it):

- NEVER: only the user's own config, the environment or flags (`[providers]`, whose `base_url` would receive the
  API key; `[pricing]`, where a zero price disarms `max_cost`; allow rules; what widens the sandbox; which language
  servers run);
- TRUSTED: only when the user trusts the workspace (`model`, `[review]`, the sandbox's timeouts, MCP servers,
  each still approved by name at trust time);
- ALWAYS: harmless, trusted or not (`[edit]`, `[context]`, `[instructions]`);
- LOWER: a limit only lowered, a choice only narrowed (`max_cost`, `permission_mode`), against the value the
  user's layers give;
- SAFE: only the safe value (`[lsp] enabled = false`; a hook's `sandbox`);
- ADD, ADD_TRUSTED: a list the repository adds to, never replaces (`[permissions] deny`; hooks run after the
  user's).

A table inside a list or a named table (a hook entry, an MCP server) is one unit: a key of it the repository may
not set drops the whole entry (a hook that asks to run on the host is not run in the sandbox instead: it is not
run). Each ignored key is reported once, in words, so the user knows what the repository wanted.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Literal

from coder.base.settings import Repo
from coder.config.check import Keys, fields_of, hints, label

NOT_TRUSTED = "the workspace is not trusted"
NEVER_WHY = "only your own config, the environment or flags may set it"


def filter_repository(cls: type, data: dict[str, Any], current: Callable[[Keys], Any], trusted: bool,
                      source: str) -> tuple[dict[str, Any], list[str]]:
    """The part of a repository's checked table `data` that may be merged over the layers below it (`current(keys)`
    gives their value of a key), and one line per key that was ignored."""
    ignored: list[str] = []

    def drop(keys: Keys, value: Any, why: str) -> None:
        name = f"[{'.'.join(keys)}]" if isinstance(value, dict) else label(keys)
        ignored.append(f"{source}: {name} ignored ({why})")

    def walk(cls: type, table: dict[str, Any], keys: Keys) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for key, value in table.items():
            at = (*keys, key)
            f = fields_of(cls)[key]
            policy: Repo | None = f.metadata["repo"]
            if policy is None:  # a section: each of its keys says
                part = walk(hints(cls)[key], value, at)
                if part:
                    kept[key] = part
                continue
            why = refusal(policy, value, current(at), trusted, f, hints(cls)[key])
            if why:
                drop(at, value, why)
                continue
            entries = entry_class(hints(cls)[key])
            if entries is not None:  # hooks, MCP servers: each entry whole, or not at all
                value = whole_entries(entries, value, at)
                if not value:
                    continue
            kept[key] = value
        return kept

    def whole_entries(entry: type, value: Any, keys: Keys) -> Any:
        items = [(f"#{i}", v) for i, v in enumerate(value, 1)] if isinstance(value, list) else value.items()
        out: list[Any] | dict[str, Any] = [] if isinstance(value, list) else {}
        for name, item in items:
            bad = [(k, why) for k, v in item.items()
                   if (why := refusal(fields_of(entry)[k].metadata["repo"], v, None, trusted, fields_of(entry)[k],
                                      hints(entry)[k]))]
            if bad:
                k, why = bad[0]
                drop((*keys, str(name), k), item[k], f"{why}; the whole entry is left out")
            elif isinstance(out, list):
                out.append(item)
            else:
                out[str(name)] = item
        return out

    return walk(cls, data, ()), ignored


def refusal(policy: Repo, value: Any, current: Any, trusted: bool, f: dataclasses.Field, hint: Any) -> str:
    """Why a repository may not set this value ("" when it may)."""
    if policy in (Repo.ALWAYS, Repo.ADD):
        return ""
    if policy in (Repo.TRUSTED, Repo.ADD_TRUSTED):
        return "" if trusted else NOT_TRUSTED
    if policy is Repo.NEVER:
        return NEVER_WHY
    if policy is Repo.SAFE:
        safe = f.metadata["safe"]
        return "" if value == safe else f"a repository may only set it to {str(safe).lower()}"
    # Repo.LOWER: a number only lowered, a choice only narrowed (choices are declared narrowest first)
    choices = next((typing.get_args(a) for a in (hint, *typing.get_args(hint)) if typing.get_origin(a) is Literal),
                   None)
    if choices is not None:
        return "" if choices.index(value) <= choices.index(current) else f"{value!r} is broader than your {current!r}"
    return "" if value <= current else f"a repository may lower it, not raise it above {current:g}"


def entry_class(hint: Any) -> type | None:
    """The dataclass of the entries of a list or named table (`list[HookEntry]`, `dict[str, McpServer]`)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, dict) and args and dataclasses.is_dataclass(args[-1]):
        return args[-1]  # type: ignore[return-value]
    return None


def appends(cls: type, keys: Keys) -> bool:
    """Whether a repository's list at `keys` adds to the lists below it (ADD, ADD_TRUSTED) rather than replace."""
    for key in keys[:-1]:
        cls = hints(cls).get(key)  # type: ignore[assignment]
        if not dataclasses.is_dataclass(cls):
            return False
    f = fields_of(cls).get(keys[-1]) if dataclasses.is_dataclass(cls) else None
    return f is not None and f.metadata["repo"] in (Repo.ADD, Repo.ADD_TRUSTED)
