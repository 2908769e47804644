"""`coder skills list`: the Agent Skills a session here would offer the model, and where each comes from."""

from __future__ import annotations

import json
from pathlib import Path

from coder.base.termsafe import inert_json, visible


def register(sub) -> None:
    p = sub.add_parser("skills", help="Agent Skills: `coder skills list` shows the skills a session here can use")
    p.add_argument("action", choices=("list",), nargs="?", default="list")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cwd", default=".", help="the repository to look in (default: the current directory)")
    p.set_defaults(func=skills_command)


def skills_command(args) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.builder import decide_trust, git_root
    from coder.ext.skills import describe_catalog, discover

    cwd = Path(args.cwd).resolve()
    workspace = git_root(cwd) or cwd
    trusted, request, why = decide_trust(workspace, None, None)
    catalog = discover(workspace, trusted, request.files)
    rows = describe_catalog(catalog)
    if args.json:
        print(inert_json(json.dumps({"skills": rows, "problems": catalog.problems,
                                     "untrusted_repository_skills": catalog.untrusted}, indent=2,
                                    ensure_ascii=False)))
        return 0
    for line in skills_lines(rows, catalog.problems, catalog.untrusted, why):
        print(visible(line))
    return 0


def skills_lines(rows: list[dict], problems: list[str], untrusted: int, why: str = "") -> list[str]:
    """What `coder skills list` and `/skills` say, line by line."""
    lines = [f"{r['name']}  ({r['source']}, {r['folder']})\n    {r['description']}" for r in rows]
    if not rows:
        lines.append("no skills installed (folders with a SKILL.md in ~/.config/coder/skills/, ~/.claude/skills/, "
                     "or .coder/skills/ and .claude/skills/ of a trusted repository)")
    if untrusted:
        lines.append(f"{untrusted} skill folder(s) of this repository are ignored: it is not trusted"
                     + (f" ({why})" if why else "") + "; `coder trust` shows them")
    lines.extend(f"! {p}" for p in problems)
    return lines
