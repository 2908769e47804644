"""`coder config`: the settings a session here would use, and which file and line (or variable, or flag) set each,
for the question "why is this set?". A mistake in any layer is the same one-line error (exit 2) a session gives.

    coder config                 the keys not at their built-in value, each with where it was set
    coder config --all           every key
    coder config sandbox vcs.hooks   those keys or sections
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="show the settings in effect here and where each was set",
                       description="The settings a session in this repository would use, each with the file and line "
                                   "(or the environment variable, or the flag) that set it. docs/config.md lists "
                                   "every key.")
    p.add_argument("keys", nargs="*", metavar="KEY", help="only these keys or sections (e.g. sandbox, vcs.hooks)")
    p.add_argument("--all", action="store_true", help="every key, the built-in ones too")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cwd", default=".", help="the repository to look in (default: the current directory)")
    p.set_defaults(func=config_command)


def config_command(args: Any) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs the config loader
    from coder.base.errors import UsageError
    from coder.base.termsafe import inert_json, visible
    from coder.config.layers import load_config
    from coder.config.reference import values
    from coder.engine.builder import git_root
    from coder.trust.decisions import is_trusted

    cwd = Path(args.cwd).expanduser().resolve()
    workspace = git_root(cwd) or cwd
    config = load_config(workspace, trusted=is_trusted(workspace))
    rows = [(key, value, config.origin(key)) for key, value in values(config)]
    if args.keys:
        rows = [row for row in rows if any(row[0] == k or row[0].startswith(k + ".") for k in args.keys)]
        if not rows:
            raise UsageError(f"coder config: no setting {', '.join(args.keys)} (docs/config.md lists them)")
    elif not args.all:
        rows = [row for row in rows if row[2].layer != "built-in"]
    if args.json:
        print(inert_json(json.dumps({"settings": [{"key": k, "value": v, "from": str(o)} for k, v, o in rows],
                                     "ignored": config.ignored, "trusted": config.trusted}, indent=2, default=str)))
        return 0
    if not rows:
        print("every setting is at its built-in value (`coder config --all` lists them; docs/config.md explains them)")
    width = max((len(k) for k, _, _ in rows), default=0)
    for key, value, origin in rows:
        print(visible(f"{key:<{width}} = {json.dumps(value, default=str)}   # {origin}"))
    for line in [] if args.keys else config.ignored:  # what the repository wanted and did not get
        print(visible(f"ignored: {line}"))
    return 0
