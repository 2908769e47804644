"""`/model`: show the model, offer the model table's models as a list, or switch (issue 24: `/model` accepted any
name and the next request failed; a name of a hosted API's model that the table does not know is now refused
with the closest known names, unless `--force`; a local OpenAI-compatible server's names are its own)."""

from __future__ import annotations

import difflib
import os

from coder.commands.base import CommandResult, Ctx
from coder.config.sections import Config
from coder.models.model_table import UNKNOWN, load_table, model_info
from coder.models.registry import create_provider as create
from coder.models.registry import resolve_spec


def known_models() -> list[str]:
    """`provider:family` of every model the model table knows, for `/model` without an argument: each provider's
    newest first (the table lists them in the order they came out)."""
    providers: dict[str, list[str]] = {}
    for info in load_table():
        providers.setdefault(info.provider, []).append(f"{info.provider}:{info.family}")
    return [m for models in providers.values() for m in reversed(models)]


def model_choices(current: str) -> list[tuple[str, str]]:
    """The picker's list: the session's model first, marked, then the others newest first."""
    info = model_info(current)
    mine = f"{info.provider}:{info.family}" if info is not UNKNOWN else current
    others = [(m, m) for m in known_models() if m != mine]
    return [(current, f"● {current}  (current)"), *others]


def _models_text(current: str | None = None) -> str:
    head = f"Model: `{current}`. " if current else ""
    names = ", ".join(f"`{m}`" for m in known_models())
    return f"{head}`/model PROVIDER:NAME` switches; the model table knows {names} (and `scripted:FILE`)."


def _model(ctx: Ctx, arg: str) -> CommandResult:
    provider = ctx.session.parts.provider
    if not arg:
        models = model_choices(provider.spec)
        return CommandResult(f"Model: `{provider.spec}` (context window {provider.context_window:,} tokens). "
                             "`/model PROVIDER:NAME` switches.", model=provider.spec,
                             pick=("model", f"Model (now {provider.spec})", models))

    config = ctx.config
    words = arg.split()
    spec = next((w for w in words if w != "--force"), "")
    problem = None if "--force" in words else unknown_hosted(spec, config)
    if problem:
        return CommandResult(problem, error=True)
    new = create(spec or config.model, config.providers, config.pricing)
    ctx.session.switch_model(new)
    return CommandResult(f"Model switched to `{new.spec}`.", model=new.spec)


def unknown_hosted(spec: str, config: Config) -> str | None:
    """Why `spec` is refused: a model of a hosted API (Anthropic, or OpenAI without a base URL of its own) that
    the model table does not know, most often a typo that would fail on the next request. None: go ahead."""
    resolved = resolve_spec(spec or config.model)
    prefix, _, name = resolved.partition(":")
    own_server = os.environ.get(f"{prefix.upper()}_BASE_URL") or config.provider(prefix).base_url
    if prefix not in ("anthropic", "openai") or own_server or model_info(resolved) is not UNKNOWN:
        return None
    near = difflib.get_close_matches(resolved, known_models(), n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(f'`{m}`' for m in near)}?" if near else ""
    return (f"`{resolved}` is not a model coder knows for the {prefix} API, so the next request would likely fail."
            f"{hint} `/model` lists the known ones; `/model {resolved} --force` uses it anyway.")
