"""The declarations are complete: every key says what it means and what a repository may do with it, its default
passes its own checks, and each environment variable sets one key. A key added without these fails here."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

import pytest

from coder.base.schema import bounded, convert
from coder.base.settings import Repo, setting
from coder.config.check import Layer, build, check_all, fields_of, hints
from coder.config.layers import env_fields
from coder.config.repository import entry_class
from coder.config.sections import Config


def declared(cls: type = Config, keys: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dataclasses.Field, object]]:
    """(keys, field, type) of every key of every section and entry table, walked from Config."""
    out = []
    for name, f in fields_of(cls).items():
        hint = hints(cls)[name]
        out.append(((*keys, name), f, hint))
        inner = hint if dataclasses.is_dataclass(hint) else entry_class(hint)
        if inner is not None:
            out += declared(inner, (*keys, name))  # type: ignore[arg-type]
    return out


def test_every_key_says_what_it_is_and_what_a_repository_may_do() -> None:
    rows = declared()
    assert len(rows) > 100
    for keys, f, hint in rows:
        where = ".".join(keys)
        assert f.metadata["doc"].strip().endswith((".", ")")), where
        repo = f.metadata["repo"]
        if repo is None:  # only a section: its keys say it one by one
            assert dataclasses.is_dataclass(hint), where
        else:
            assert isinstance(repo, Repo), where
            assert (repo is Repo.SAFE) == (f.metadata["safe"] is not None), where


def test_every_default_passes_its_own_checks() -> None:
    layer = Layer("built-in", {})
    for keys, f, hint in declared():
        if f.metadata["repo"] is None:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore
        if default is dataclasses.MISSING or default is None:
            continue
        bounded(convert(default, hint, layer, keys), dict(f.metadata), keys, layer, default)
    built = build(Config, {})
    assert built == Config()
    check_all(built, lambda keys: "built-in")


def test_each_environment_variable_sets_one_key() -> None:
    names = [var for _, var, _, _ in env_fields()]
    # OTEL_LOG_USER_PROMPTS: the OpenTelemetry variable Claude Code reads, honoured as it is ([telemetry] log_prompts)
    assert len(names) == len(set(names)) and all(n.startswith("CODER_") or n == "OTEL_LOG_USER_PROMPTS" for n in names)
    assert {"CODER_MODEL", "CODER_MAX_TURNS", "CODER_MAX_COST", "CODER_PERMISSION_MODE", "CODER_SANDBOX_EXTRA_RO",
            "CODER_NETWORK_PRESETS"} <= set(names)


def test_a_key_cannot_be_declared_without_a_repository_policy() -> None:
    with pytest.raises(TypeError, match="repo"):
        @dataclass
        class Forgot:
            value: int = setting(3, doc="A key.")  # type: ignore[call-arg]


def test_a_type_the_checks_do_not_know_is_a_declaration_mistake() -> None:
    with pytest.raises(TypeError, match="cannot check the type"):
        convert(1, typing.Callable, Layer("x", {}), ("odd",))
