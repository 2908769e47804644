"""The `coder` command. Frontends start here; nothing heavy is imported before a subcommand needs it, because
`coder --version` and `coder --help` are the commands people run most."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # argparse itself loads only when a parser is built: `coder --version` never does
    import argparse


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand. Each area owns its subcommand (`register(sub)`); they are imported here,
    not at the top, for start-up time: `coder --version` answers before any of them loads."""
    # start-up time: `coder --version` answers before the parser and the subcommands load
    import argparse

    from coder import __version__
    from coder.acp.cli import register as register_acp
    from coder.batch.cli import register as register_batch
    from coder.cli.config import register as register_config
    from coder.cli.doctor import register as register_doctor
    from coder.cli.mcp import register as register_mcp
    from coder.cli.plugin import register as register_plugin
    from coder.cli.run import register as register_run
    from coder.cli.sessions import register as register_sessions
    from coder.cli.skills import register as register_skills
    from coder.cli.trust import register as register_trust
    from coder.codeintel.cli import register as register_codeintel
    from coder.engine.options import add_session_flags
    from coder.review.cli import register as register_review

    parser = argparse.ArgumentParser(
        prog="coder",
        description="A terminal coding agent. With no command, opens the interactive app in this repository.",
        epilog="Quick start: `coder doctor` checks the machine; `coder run \"fix the failing test\"` runs headless.",
    )
    parser.add_argument("--version", action="version", version=f"coder {__version__}")
    add_session_flags(parser)
    parser.add_argument("--plain", action="store_true", help="plain prompt-toolkit REPL instead of the full-screen app")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in (register_run, register_sessions, register_doctor, register_trust, register_config,
                     register_codeintel, register_review, register_batch, register_mcp, register_skills,
                     register_plugin, register_acp):
        register(sub)
    return parser


#: a parser built ahead of time (by the batch's fork server, coder/batch/agent_warm.py); the next main() takes it
_prebuilt: Any = None


def prebuild_parser() -> None:
    """Build the parser now, for the next `main()` of this process (or of a process forked from it): a forked
    batch agent then spends nothing on ten subcommand modules' ~190 arguments."""
    global _prebuilt
    _prebuilt = build_parser()


#: the subcommands' names (build_parser registers them; tests/cli checks the two agree): a command line with none
#: of them opens a frontend, which is known before the parser is built
SUBCOMMANDS = frozenset({"acp", "batch", "config", "doctor", "find", "index", "map", "mcp", "outline", "plugin",
                         "review", "run", "sessions", "skills", "swebench", "trust"})


def opens_frontend(argv: list[str]) -> bool:
    """Whether this command line opens the app or the REPL (no subcommand, no --help): told without the parser,
    so that the terminal keeps what is typed from the first moment (coder/frontend/typeahead.py)."""
    return not SUBCOMMANDS.intersection(argv) and "-h" not in argv and "--help" not in argv


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["--version"], ["-V"]):
        from coder import __version__  # start-up time: the one import --version needs

        print(f"coder {__version__}")
        return 0
    from coder.host.audit import install  # start-up time: after the --version answer

    install()  # from here on, a process start that does not come through coder/host fails (coder/host/audit.py)
    if not opens_frontend(argv) or not on_terminal():
        return _main(argv)
    from coder.frontend.typeahead import keys_as_typed  # start-up time: after the --version answer

    with keys_as_typed(sys.stdin):  # what is typed while the frontend loads waits for it, as typed
        return _main(argv)


def _main(argv: list[str]) -> int:
    from coder.base.errors import EXIT_INTERRUPTED, CoderError  # start-up time: after the --version answer

    global _prebuilt
    parser, _prebuilt = _prebuilt or build_parser(), None
    args = parser.parse_args(argv)
    _register_workspace(getattr(args, "cwd", None))
    try:
        handler = getattr(args, "func", None)
        if handler is None:
            handler = _interactive
        if getattr(args, "command", None) in CONFIG_FIRST and not (handler is _interactive and on_terminal()):
            check_config(args)
        return int(handler(args) or 0)
    except CoderError as exc:
        # start-up time: loaded for an error only; a message can quote a repository file, a key or a path
        from coder.base.termsafe import visible

        print(f"coder: {visible(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("coder: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `coder sessions list | head -1`: the reader is gone, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _register_workspace(cwd: str | None) -> None:
    """The folder coder works in may be a workspace: before any host process starts, the door (coder/host) is told,
    so that no program is found on a PATH entry inside it (an activated `.venv/bin`). Not a home folder: no
    session runs there (the sandbox refuses it), and the toolchains on PATH live there."""
    from pathlib import Path  # start-up time: after the --version answer

    from coder.host import register_workspace  # start-up time: after the --version answer

    folder = Path(os.path.expanduser(cwd or ".")).resolve()
    if folder.is_dir() and folder != Path.home().resolve() and folder != Path("/"):
        register_workspace(folder)


#: commands that open sessions later (an editor's come over ACP; a batch runs many; the REPL reading a pipe): a
#: mistake in the configuration stops them here, in one line with exit code 2, before anything starts. `coder run`
#: checks it when it opens its session, before it is stored; so do the app and the REPL on a terminal, which open
#: theirs once their first screen takes keys (issue 47: the check imports most of what a session needs, 0.1 s and
#: more): the app then says it on its screen, the REPL in the same one line and exit code.
CONFIG_FIRST = (None, "acp", "batch", "swebench")


def check_config(args: argparse.Namespace) -> None:
    """Read every layer of the configuration once (the repository's where the session would run), for its errors."""
    # start-up time: `coder --version` and `--help` never load the configuration
    from pathlib import Path

    from coder.config.layers import load_config
    from coder.host.git import repo_top

    if getattr(args, "command", None) in ("batch", "swebench"):
        load_config(None)  # the user's config and the environment: the instances' repositories are checked each
        return
    cwd = Path(getattr(args, "cwd", None) or ".").expanduser().resolve()
    load_config((repo_top(cwd) or cwd) if cwd.is_dir() else None, {"model": getattr(args, "model", None)})


def on_terminal() -> bool:
    """The frontend runs on a terminal: it reads keys, and opens its session behind its first screen."""
    return sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM", "") not in ("", "dumb")


def _interactive(args: argparse.Namespace) -> int:
    """No subcommand: the Textual app, or the plain REPL for --plain, dumb terminals and pipes."""
    from coder.base.errors import UsageError  # start-up time: after the --version answer

    plain = args.plain or not sys.stdout.isatty() or os.environ.get("TERM", "") in ("", "dumb")
    try:  # imported here for start-up time: Textual and prompt-toolkit load only for the frontend that runs
        if plain:
            from coder.repl.repl import run_repl as run  # start-up time: prompt-toolkit loads only here
        else:
            from coder.tui.app import run_app as run  # start-up time: Textual loads only here
    except ImportError as exc:
        raise UsageError(f"the interactive {'REPL' if plain else 'app'} is not available in this build ({exc}); "
                         "use `coder run \"...\"`.") from exc
    return int(run(args) or 0)
