"""`coder index`, `coder map`, `coder find`, `coder outline`: the code index for people and scripts.

Registered by coder/cli/main.py; handlers import the index lazily so `coder --help` stays fast.
`--json` output is a list of {path, line, end_line, kind, name}, stable for scripts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from coder.base.errors import UsageError
from coder.host import register_workspace
from coder.host.git import repo_top


def _safe(handler):
    """Exit quietly when the reader of our output goes away (`coder find x | head`)."""

    def run(args) -> int:
        try:
            return handler(args)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    return run


def register(sub) -> None:
    p = sub.add_parser("index", help="build or update the code index of this repository")
    p.add_argument("--stats", action="store_true", help="print what is indexed (files per language, skipped files)")
    p.add_argument("--json", action="store_true", help="print the stats as JSON")
    p.set_defaults(func=_safe(index_command))

    p = sub.add_parser("map", help="print the ranked repo map (files and their most used definitions)")
    p.add_argument("files", nargs="*", metavar="FILES", help="focus files: rank what they use higher")
    p.add_argument("--tokens", type=int, default=1024, help="token budget, never exceeded (default 1024)")
    p.add_argument("--names", default="", help="comma-separated names to focus on")
    p.set_defaults(func=_safe(map_command))

    p = sub.add_parser("find", help="find where SYMBOL is defined (or used, with --refs)")
    p.add_argument("symbol", metavar="SYMBOL", help="a name, a qualified name (Model.save), or a near miss")
    p.add_argument("--refs", action="store_true", help="list references instead of definitions")
    p.add_argument("--json", action="store_true", help="print a JSON list of {path, line, end_line, kind, name}")
    p.add_argument("--limit", type=int, default=200)
    p.set_defaults(func=_safe(find_command))

    p = sub.add_parser("outline", help="list the classes, functions and methods of FILE")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print a JSON list of {path, line, end_line, kind, name}")
    p.set_defaults(func=_safe(outline_command))


def _root(cwd: str):
    start = Path(cwd).resolve()
    if not start.is_dir():
        raise UsageError(f"{cwd} is not a directory")
    root = repo_top(start) or start  # outside a repository, the folder itself
    register_workspace(root)
    return root


def _open(args, *, quiet: bool = False):
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.codeintel.index import CodeIndex

    index = CodeIndex.open(_root(getattr(args, "cwd", None) or "."))
    show = sys.stderr.isatty() and not quiet

    def progress(done: int, total: int) -> None:
        if show and total >= 200:
            print(f"\rindexing {done}/{total} files", end="" if done < total else "\n", file=sys.stderr)

    stats = index.refresh(progress=progress)
    for note in [*index.notes, *stats.notes]:
        print(f"coder: note: {note}", file=sys.stderr)
    return index, stats


def index_command(args) -> int:
    index, stats = _open(args)
    if args.json:
        print(json.dumps({**index.stats(), "last_refresh": {"parsed": stats.parsed, "unchanged": stats.unchanged,
                                                            "removed": stats.removed, "seconds": stats.seconds}},
                         indent=2, sort_keys=True))
        return 0
    print(f"indexed {stats.files} files in {stats.seconds:.2f}s: {stats.parsed} parsed, {stats.unchanged} unchanged, "
          f"{stats.removed} removed")
    if args.stats:
        info = index.stats()
        print(f"root      {info['root']}\ncache     {info['cache']}\nsymbols   {info['symbols']}")
        for lang, count in sorted(info["languages"].items()):
            print(f"  {lang:<12}{count:>8} files")
        if info["skipped"]:
            print("skipped   " + ", ".join(f"{reason}: {count}" for reason, count in sorted(info["skipped"].items())))
    return 0


def map_command(args) -> int:
    if args.tokens < 1:
        raise UsageError("--tokens must be positive")
    index, _stats = _open(args)
    names = [n.strip() for n in args.names.split(",") if n.strip()]
    text = index.repo_map(args.tokens, args.files, names, refresh_first=False)
    sys.stdout.write(text)
    return 0


def find_command(args) -> int:
    index, _stats = _open(args, quiet=args.json)
    hits = index.references(args.symbol, limit=args.limit) if args.refs else \
        index.definitions(args.symbol, limit=args.limit)
    if args.json:
        print(json.dumps([h.to_json() for h in hits], indent=1))
        return 0 if hits else 1
    if not hits:
        print(f"no {'references to' if args.refs else 'definition of'} {args.symbol}", file=sys.stderr)
        return 1
    for h in hits:
        if args.refs:
            print(f"{h.path}:{h.line}")
        else:
            fuzzy = " (similar name)" if h.score else ""
            print(f"{h.path}:{h.line}-{h.end_line} {h.kind} {h.name}{fuzzy}\n    {h.signature}")
    return 0


def outline_command(args) -> int:
    index, _stats = _open(args, quiet=args.json)
    symbols = index.outline(args.file)
    if args.json:
        print(json.dumps([s.to_json() for s in symbols], indent=1))
        return 0
    if not symbols:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.codeintel.languages import language_name

        why = "no definitions found" if language_name(args.file) else "its language is not indexed (text search only)"
        print(f"{args.file}: {why}", file=sys.stderr)
    for s in symbols:
        print(f"{s.line:>6}-{s.end_line:<6}{'  ' * s.name.count('.')}{s.signature or s.kind + ' ' + s.name}")
    return 0
