"""The `coder` command. Frontends start here; nothing heavy is imported before a subcommand needs it, because
`coder --version` and `coder --help` are the commands people run most."""

from __future__ import annotations

import sys
from typing import Any

#: (module, function) pairs that add subcommands; each area owns its own, imported only to build the parser
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "coder.cli.run",
    "coder.cli.sessions",
    "coder.cli.doctor",
    "coder.cli.trust",
    "coder.codeintel.cli",
    "coder.review.cli",
    "coder.batch.cli",
    "coder.cli.mcp",
    "coder.cli.skills",
    "coder.acp.cli",
)


def build_parser():  # -> argparse.ArgumentParser (argparse imported lazily)
    import argparse
    import importlib

    from coder import __version__

    parser = argparse.ArgumentParser(
        prog="coder",
        description="A terminal coding agent. With no command, opens the interactive app in this repository.",
        epilog="Quick start: `coder doctor` checks the machine; `coder run \"fix the failing test\"` runs headless.",
    )
    parser.add_argument("--version", action="version", version=f"coder {__version__}")
    add_session_flags(parser)
    parser.add_argument("--plain", action="store_true", help="plain prompt-toolkit REPL instead of the full-screen app")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


#: a parser built ahead of time (by the batch's fork server, coder/batch/agent_warm.py); the next main() takes it
_prebuilt: Any = None


def prebuild_parser() -> None:
    """Build the parser now, for the next `main()` of this process (or of a process forked from it): a forked
    batch agent then spends nothing on ten subcommand modules' ~190 arguments."""
    global _prebuilt
    _prebuilt = build_parser()


def add_session_flags(parser, subcommand: bool = False) -> None:
    """Flags shared by the interactive app and `coder run`. On a subcommand they default to SUPPRESS, so a flag
    given before the subcommand (`coder --deny bash run ...`) is kept rather than reset by the subparser."""
    import argparse

    from coder.config.layers import MODES

    extra = {"default": argparse.SUPPRESS} if subcommand else {}
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["--version"], ["-V"]):
        from coder import __version__

        print(f"coder {__version__}")
        return 0
    from coder.base.errors import EXIT_INTERRUPTED, CoderError

    global _prebuilt
    parser, _prebuilt = _prebuilt or build_parser(), None
    args = parser.parse_args(argv)
    try:
        handler = getattr(args, "func", None)
        if handler is None:
            handler = _interactive
        return int(handler(args) or 0)
    except CoderError as exc:
        from coder.base.termsafe import visible  # a message can quote a repository file, a key or a path

        print(f"coder: {visible(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("coder: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `coder sessions list | head -1`: the reader is gone, which is not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _interactive(args) -> int:
    """No subcommand: the Textual app, or the plain REPL for --plain, dumb terminals and pipes."""
    import importlib
    import os

    from coder.base.errors import UsageError

    plain = args.plain or not sys.stdout.isatty() or os.environ.get("TERM", "") in ("", "dumb")
    target = ("coder.tui.repl", "run_repl") if plain else ("coder.tui.app", "run_app")
    try:
        run = getattr(importlib.import_module(target[0]), target[1])
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"the interactive {'REPL' if plain else 'app'} is not available in this build ({exc}); "
                         "use `coder run \"...\"`.") from exc
    return int(run(args) or 0)
