"""`coder trust [--revoke | --status] [PATH]`: decide whether a repository's own configuration may run.

Trusting is what the app and the REPL ask on first open; this command is the same decision for scripts, CI and
anyone who prefers to read first. It prints what the repository defines (MCP servers with their command lines,
hooks, custom tools, commands, agents, config keys) before recording anything, and `--status` shows which layer
set each configuration value (built-in, user, repository, environment) and what of the repository's was ignored.
"""

from __future__ import annotations

from pathlib import Path

from coder.base.errors import UsageError
from coder.base.termsafe import visible as neutralize


def register(sub) -> None:
    p = sub.add_parser("trust", help="trust a repository's own config, MCP servers, hooks, tools and agents "
                                     "(--revoke to undo, --status to look)")
    p.add_argument("path", nargs="?", default=None, help="the repository (default: the current one, or --cwd)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--revoke", action="store_true", help="forget the decision: the repository is untrusted")
    group.add_argument("--status", action="store_true", help="show the decision and where each setting comes from")
    p.set_defaults(func=trust_command)


def trust_command(args) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.builder import git_root
    from coder.trust import decisions as trust

    start = Path(args.path or getattr(args, "cwd", ".") or ".").expanduser().resolve()
    if not start.is_dir():
        raise UsageError(f"{start}: not a directory.")
    workspace = git_root(start) or start
    if args.revoke:
        removed = trust.revoke(workspace)
        print(f"{workspace}: {'no longer trusted' if removed else 'was not trusted'}")
        return 0
    request = trust.inspect(workspace)
    state = trust.status(request)
    if args.status:
        print(neutralize(request.describe() if request.wants_anything else f"{workspace} defines nothing to run"))
        print(f"status: {'trusted' if state.trusted else 'not trusted'} ({state.reason})")
        _print_provenance(workspace, state.trusted)
        return 0
    if not request.wants_anything:
        print(f"{workspace} defines no servers, hooks, tools, commands, agents or config: nothing to trust.")
        return 0
    print(neutralize(request.describe()))
    trust.grant(request)
    print(f"trusted: {workspace}. A change to any of these files asks again; `coder trust --revoke` undoes this.")
    return 0


def _print_provenance(workspace: Path, trusted: bool) -> None:
    # start-up time: `coder --help` imports this module, and only this command needs the config loader
    from coder.config.layers import load_config

    config = load_config(workspace, trusted=trusted)
    rows = sorted(config.provenance.items())
    if rows:
        print("settings not at their built-in value:")
        for key, origin in rows:
            print(neutralize(f"  {key}  <- {origin}"))
    for line in config.ignored:
        print(neutralize(f"ignored: {line}"))
