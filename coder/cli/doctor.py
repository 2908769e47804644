"""`coder doctor`: what this machine has and lacks for coder, with the fix for each problem."""

from __future__ import annotations

import json
from pathlib import Path

from coder.engine.doctor import run_checks  # the checks live in the engine (the /doctor command reads them too)


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check Python, git, the sandbox, ripgrep, API keys and config")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=doctor_command)


def doctor_command(args) -> int:
    checks = run_checks(Path(args.cwd if hasattr(args, "cwd") else ".").resolve())
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        for c in checks:
            mark = "-- " if c.info else "ok " if c.ok else "!! "
            print(f"{mark} {c.name:<18} {c.detail}" + (f"\n    fix: {c.fix}" if not c.ok and c.fix else ""))
    return 0 if all(c.ok for c in checks) else 1
