"""The one place a session's options (`SessionOptions`, coder/engine/builder.py) are built from the command line:
`add_session_flags` declares the flags every frontend shares, `options_from_args` reads them back. `coder`,
`coder run` and `coder acp` all go through these two, so a flag means the same in each. `coder --help` imports this
module, so it imports no more than the flags need."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.config.modes import MODES

if TYPE_CHECKING:
    from coder.engine.builder import SessionOptions


def add_session_flags(parser: argparse.ArgumentParser, subcommand: bool = False) -> None:
    """Flags shared by the interactive app and `coder run`. On a subcommand they default to SUPPRESS, so a flag
    given before the subcommand (`coder --deny bash run ...`) is kept rather than reset by the subparser."""
    extra: dict[str, Any] = {"default": argparse.SUPPRESS} if subcommand else {}
    parser.add_argument("--model", "-m", **extra, help="PROVIDER:NAME, e.g. anthropic:claude-sonnet-4-6, "
                        "openai:qwen2.5-coder, scripted:PATH (a bare claude-... name means anthropic)")
    parser.add_argument("--permission-mode", choices=MODES, **extra, help="plan (read only), ask, auto-edit, auto")
    parser.add_argument("--cwd", **(extra or {"default": "."}),
                        help="work in this directory (default: the current one)")
    parser.add_argument("--resume", metavar="ID", **extra, help="go on with session ID (`coder sessions` lists them)")
    parser.add_argument("--continue", dest="continue_last", action="store_true", **extra,
                        help="go on with the latest session of this repository")
    parser.add_argument("--allow", action="append", metavar="RULE", **(extra or {"default": []}),
                        help="allow calls matching RULE, e.g. 'bash(pytest*)' (repeatable)")
    parser.add_argument("--deny", action="append", metavar="RULE", **(extra or {"default": []}),
                        help="deny calls matching RULE")
    parser.add_argument("--no-sandbox", action="store_true", **extra,
                        help="run shell commands without bubblewrap (shown in the status; not recommended)")
    parser.add_argument("--net-allow", action="append", metavar="DOMAIN", **(extra or {"default": []}),
                        help="let the sandbox reach DOMAIN (or *.DOMAIN) through coder's proxy (repeatable)")
    parser.add_argument("--net-deny", action="append", metavar="DOMAIN", **(extra or {"default": []}),
                        help="never let the sandbox reach DOMAIN (wins over every allow; repeatable)")
    parser.add_argument("--net-preset", action="append", metavar="NAME", **(extra or {"default": []}),
                        help="allow a preset's package registries: python, node, rust, go (repeatable)")
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument("--trust", dest="trust", action="store_const", const=True, **(extra or {"default": None}),
                       help="trust this repository's own config, MCP servers, hooks, tools and agents for this "
                            "run (`coder trust` records it)")
    trust.add_argument("--no-trust", dest="trust", action="store_const", const=False, **extra,
                       help="treat the repository as untrusted even if you trusted it before")


def cwd_from_args(args: argparse.Namespace) -> Path:
    """The folder the session works in, as the flags give it (`--cwd`, else the current one): without the
    session's options, whose module loads the engine (a frontend's trust question needs only this)."""
    return Path(getattr(args, "cwd", ".") or ".")


def options_from_args(args: argparse.Namespace, **override: Any) -> SessionOptions:
    """SessionOptions from parsed flags (those of `add_session_flags`, and `coder run`'s limits when it has them);
    `override` wins (the app's `/resume`, the editor's working directory)."""
    values: dict[str, Any] = {
        "cwd": cwd_from_args(args), "model": getattr(args, "model", None),
        "permission_mode": getattr(args, "permission_mode", None), "resume": getattr(args, "resume", None),
        "continue_last": bool(getattr(args, "continue_last", False)), "allow": list(getattr(args, "allow", []) or []),
        "deny": list(getattr(args, "deny", []) or []), "no_sandbox": bool(getattr(args, "no_sandbox", False)),
        "trust": getattr(args, "trust", None),
        "max_turns": getattr(args, "max_turns", None), "max_cost": getattr(args, "max_cost", None),
        "max_wall_time": getattr(args, "max_wall_time", None),
        "checkpoints": not getattr(args, "no_checkpoints", False),
        "allow_domains": list(getattr(args, "net_allow", []) or []),
        "deny_domains": list(getattr(args, "net_deny", []) or []),
        "network_presets": list(getattr(args, "net_preset", []) or []),
    }
    values.update(override)
    from coder.engine.builder import SessionOptions  # start-up time: `coder --help` imports this module

    return SessionOptions(**values)
