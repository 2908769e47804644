"""Benchmark: do language-server diagnostics and references help, and what do they cost?

On snapshots of real repositories (the git mirrors under /work/.mirror: requests and flask), with the real
basedpyright (and jedi-language-server as a second opinion), through coder's real edit tool:

  (b) seeded wrong edits: an undefined name (a called name misspelt), a wrong argument count (the last argument of
      a call to a function of the same file dropped), an attribute typo (`self.x` misspelt), each a valid-syntax
      one-line edit; plus an unbalanced parenthesis (a syntax error). Caught = the edit's result carries a
      diagnostic the edit introduced; the syntax guard = the edit is refused before it is written.
      False alarms: the last single-file commits touching the package, applied as edits (the file at the parent,
      then at the commit, checked against the snapshot): any introduced error is counted as a false alarm.
  (c) time from the edit to its diagnostics (through the tool: p50/p95), the first start, the servers' memory.
  (a) references: for sampled functions and methods, the server's references against coder's name-based
      tree-sitter references, with jedi-language-server as the judge (and the reverse); definitions: at call
      sites `x.name(`, whether the index's name lookup gives exactly the definition the server names.

Usage: python benchmarks/lsp.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coder.lsp.hook import install as install_language_servers  # noqa: E402
from coder.lsp.manager import LspManager  # noqa: E402
from coder.tools.base import ToolContext  # noqa: E402
from coder.tools.registry import builtin_tools  # noqa: E402

MIRRORS = Path("/work/.mirror")
REPOS = {"requests": ("psf+requests", "src/requests"), "flask": ("pallets+flask", "src/flask")}
KINDS = ("undefined_name", "wrong_arg_count", "attribute_typo", "syntax_error")


def export(mirror: str, dest: Path, rev: str = "HEAD") -> Path:
    git_dir = MIRRORS / mirror / "repo"
    data = subprocess.run(["git", "--git-dir", str(git_dir), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest


def typo(name: str, rng: random.Random, taken: str) -> str | None:
    for _ in range(10):
        if len(name) < 4:
            return None
        i = rng.randrange(1, len(name) - 2)
        new = name[:i] + name[i + 1] + name[i] + name[i + 2:]
        if new != name and not re.search(rf"\b{re.escape(new)}\b", taken):
            return new
    return None


def mutations(repo: Path, package: str, rng: random.Random, per_kind: int) -> list[tuple[str, str, str, str]]:
    """(kind, rel, old_line, new_line): valid-syntax one-line bugs found with tree-sitter, plus syntax errors."""
    from tree_sitter import Parser

    from coder.codeintel.languages import language

    parser = Parser(language("python"))
    found: dict[str, list] = {k: [] for k in KINDS}
    files = sorted(p for p in (repo / package).rglob("*.py"))
    for path in files:
        text = path.read_text()
        rel = str(path.relative_to(repo))
        lines = text.splitlines()
        tree = parser.parse(text.encode())
        plain_funcs: dict[str, int] = {}
        stack = [tree.root_node]
        calls, attrs = [], []
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if node.type == "function_definition":
                params = [c for c in node.child_by_field_name("parameters").named_children]
                method = node.parent is not None and node.parent.parent is not None \
                    and node.parent.parent.type == "class_definition"
                if method and params and params[0].text == b"self":
                    params = params[1:]
                elif method:
                    params = []
                if params and params[0].type == "typed_parameter" and params[0].text.startswith(b"self"):
                    params = params[1:]
                if params and all(c.type in ("identifier", "typed_parameter") for c in params) \
                        and not any(c.text.startswith(b"*") for c in params):
                    key = ("self." if method else "") + node.child_by_field_name("name").text.decode()
                    plain_funcs[key] = -1 if key in plain_funcs else len(params)  # -1: defined twice
            elif node.type == "call":
                calls.append(node)
            elif node.type == "attribute" and node.child_by_field_name("object").text == b"self":
                attrs.append(node)

        def add(kind: str, row: int, start: int, end: int, replacement: str,
                lines: list[str] = lines, text: str = text, rel: str = rel) -> None:
            line = lines[row]
            new = line[:start] + replacement + line[end:]
            if text.count(line) == 1 and new != line:
                found[kind].append((kind, rel, line, new))

        for call in calls:
            fn = call.child_by_field_name("function")
            args = call.child_by_field_name("arguments")
            row = fn.start_point[0]
            if fn.start_point[0] != call.end_point[0]:
                continue
            name = fn.text.decode()
            if fn.type == "identifier":
                new = typo(name, rng, text)
                if new and name not in dir(__builtins__):
                    add("undefined_name", row, fn.start_point[1], fn.end_point[1], new)
            argv = [a for a in args.named_children if a.type != "comment"] if args is not None else []
            if (plain_funcs.get(name, -1) == len(argv) and argv and args.type == "argument_list"
                    and all(a.type not in ("keyword_argument", "list_splat", "dictionary_splat") for a in argv)):
                cut_from = argv[-2].end_point[1] if len(argv) > 1 else argv[-1].start_point[1]
                add("wrong_arg_count", row, cut_from, argv[-1].end_point[1], "")
            if args is not None and args.end_point[0] == row and args.text.endswith(b")"):
                add("syntax_error", row, args.end_point[1] - 1, args.end_point[1], "")
        for attr in attrs:
            name_node = attr.child_by_field_name("attribute")
            new = typo(name_node.text.decode(), rng, text)
            if new and not name_node.text.startswith(b"__"):
                add("attribute_typo", name_node.start_point[0], name_node.start_point[1], name_node.end_point[1], new)
    out = []
    for kind in KINDS:
        pool = found[kind]
        rng.shuffle(pool)
        out.extend(pool[:per_kind])
    return out


def single_file_commits(mirror: str, package: str, limit: int) -> list[tuple[str, str]]:
    git_dir = str(MIRRORS / mirror / "repo")
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--no-merges", "--format=@%H", "--name-only", "-n",
                          "600", "HEAD", "--", package], capture_output=True, text=True, check=True).stdout
    out = []
    for block in log.split("@")[1:]:
        parts = [p for p in block.split("\n") if p.strip()]
        if len(parts) == 2 and parts[1].endswith(".py"):
            out.append((parts[0], parts[1]))
        if len(out) >= limit:
            break
    return out


def show(mirror: str, rev: str, rel: str) -> str | None:
    git_dir = str(MIRRORS / mirror / "repo")
    got = subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{rel}"], capture_output=True)
    return got.stdout.decode("utf-8", "replace") if got.returncode == 0 else None


def group_rss_mb(pids: list[int]) -> float:
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) in pids:  # process group
                for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1024


def pctl(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_edits(name: str, per_kind: int, commits: int, work: Path) -> dict:
    mirror, package = REPOS[name]
    repo = export(mirror, work / name)
    rng = random.Random(20)
    cases = mutations(repo, package, rng, per_kind)
    ctx = ToolContext(repo, repo, "bench", threading.Event(), work / "state", {"_trusted": True, "lsp": {"wait": 30}})
    manager = LspManager(repo, {"servers": {"jedi-language-server": {"enabled": False}}})
    ctx.services["lsp"] = manager
    install_language_servers(ctx.services)
    edit = builtin_tools(["str_replace_based_edit_tool"])["str_replace_based_edit_tool"]
    t0 = time.monotonic()
    first = edit.run(edit.parse({"command": "view", "path": f"{package}/__init__.py"}), ctx)
    assert not first.is_error
    manager.diagnostics(f"{package}/__init__.py", (repo / package / "__init__.py").read_text(), time.monotonic() + 60)
    start_s = time.monotonic() - t0
    results: dict[str, Counter] = {k: Counter() for k in KINDS}
    latencies: list[float] = []
    examples: dict[str, str] = {}
    for kind, rel, old, new in cases:
        original = (repo / rel).read_text()
        result = edit.run(edit.parse({"command": "str_replace", "path": rel, "old_str": old, "new_str": new}), ctx)
        if result.is_error:
            results[kind]["guard" if "syntax" in result.output.lower() else "refused"] += 1
        else:
            latencies.append(result.data.get("diagnostics_ms", 0))
            caught = bool(result.data.get("diagnostics"))
            results[kind]["caught" if caught else "missed"] += 1
            if not caught and os.environ.get("LSP_BENCH_DEBUG"):
                print(kind, rel, new.strip(), result.output[-300:], file=sys.stderr)
            if caught and kind not in examples:
                d = result.data["diagnostics"][0]
                examples[kind] = f"`{new.strip()[:70]}` → {d['message'].splitlines()[0][:90]} [{d['code']}]"
        (repo / rel).write_text(original)
    alarms, alarm_codes, commit_n = 0, Counter(), 0
    for sha, rel in single_file_commits(mirror, package, commits):
        before, after = show(mirror, f"{sha}^", rel), show(mirror, sha, rel)
        if before is None or after is None:
            continue
        from coder.lsp.diagnostics import introduced

        deadline = time.monotonic() + 30
        try:
            found = introduced(manager.diagnostics(rel, before, deadline), manager.diagnostics(rel, after, deadline))
        except Exception as exc:  # noqa: BLE001 - count it as not measured
            print(f"commit {sha[:8]}: {exc}", file=sys.stderr)
            continue
        commit_n += 1
        if found:
            alarms += 1
            alarm_codes.update(d.code for d in found)
    (repo / "x").unlink(missing_ok=True)
    rss = group_rss_mb(manager.pids())
    edit.close()
    return {"name": name, "results": results, "latencies": latencies, "start_s": start_s, "rss_mb": rss,
            "examples": examples, "commits": commit_n, "alarms": alarms, "alarm_codes": alarm_codes, "repo": repo}


def run_references(name: str, repo: Path, samples: int) -> dict:
    """Server references vs name-based ones; jedi-language-server as the judge."""
    from coder.codeintel.service import service_for
    from coder.lsp.navigate import Anchor, name_column, references

    mirror, package = REPOS[name]
    services: dict = {}
    index, _ = service_for(services, repo).ready(wait=120)
    rng = random.Random(20)
    defs = [d for path in sorted((repo / package).rglob("*.py")) for d in index.outline(str(path.relative_to(repo)))
            if d.kind in ("function", "method") and not d.name.split(".")[-1].startswith("__")]
    rng.shuffle(defs)
    pyright = LspManager(repo, {"servers": {"jedi-language-server": {"enabled": False}}})
    jedi = LspManager(repo, {"servers": {"basedpyright": {"enabled": False}}})
    fs = index.fs
    sums = Counter()
    def_stats = Counter()
    examples: list[str] = []
    for d in defs[: samples]:
        line = fs.read_if_file(d.path).decode().splitlines()[d.line - 1]
        col = name_column(line, d.name.split(".")[-1])
        if col is None:
            continue
        anchor = Anchor(d.path, d.line, col, d.name)
        try:
            # the definition's own line is not a reference (jedi lists it even when asked not to)
            p = {(h.path, h.line) for h in references(pyright, fs, anchor, time.monotonic() + 60)[1]
                 if h.inside and (h.path, h.line) != (d.path, d.line)}
            j = {(h.path, h.line) for h in references(jedi, fs, anchor, time.monotonic() + 60)[1]
                 if h.inside and (h.path, h.line) != (d.path, d.line)}
        except Exception as exc:  # noqa: BLE001
            print(f"{d.name}: {exc}", file=sys.stderr)
            continue
        t = {(h.path, h.line) for h in index.references(d.name, limit=5000)
             if (h.path, h.line) != (d.path, d.line)}
        sums["symbols"] += 1
        for label, got in (("ts", t), ("pyright", p), ("jedi", j)):
            sums[f"{label}_n"] += len(got)
        if p != j and len(examples) < 6:
            examples.append(f"`{d.name}`: only basedpyright {sorted(p - j)[:3]}, only jedi {sorted(j - p)[:3]}")
        sums["ts_in_either"] += len(t & (p | j))
        sums["ts_in_pyright"] += len(t & p)
        sums["ts_in_jedi"] += len(t & j)
        sums["pyright_in_jedi"] += len(p & j)
        sums["pyright_in_ts"] += len(p & t)
        # definitions at the first use site the server found: index by name vs the server
        if p:
            use_path, use_line = sorted(p)[0]
            use_text = fs.read_if_file(use_path).decode().splitlines()[use_line - 1]
            ucol = name_column(use_text, d.name.split(".")[-1])
            if ucol is not None:
                from coder.lsp.navigate import definition

                _, hits = definition(pyright, fs, Anchor(use_path, use_line, ucol, ""), time.monotonic() + 60)
                candidates = index.definitions(d.name.split(".")[-1], fuzzy=False, limit=50)
                def_stats["sites"] += 1
                def_stats["server_right"] += any((h.path, h.line) == (d.path, d.line) for h in hits)
                def_stats["index_unique_right"] += len(candidates) == 1 and candidates[0].line == d.line
                def_stats["index_candidates"] += len(candidates)
    pyright.close()
    jedi.close()
    services["code_index"].close()
    return {"name": name, "sums": sums, "defs": def_stats, "examples": examples}


def ratio(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "n/a"


def markdown(edits: list[dict], refs: list[dict], command: str, per_kind: int) -> str:
    out = ["## Language servers: do diagnostics and references help?", "",
           f"Command: `{command}`  ", f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
           f"Machine: {os.cpu_count()} cores, loaded by parallel work  ",
           "Server: basedpyright (typeCheckingMode basic, errors only, missing-import codes ignored); judge for "
           "references: jedi-language-server. Snapshots: requests and flask at the mirrors' HEAD.", "",
           "### Seeded wrong edits (one line, through the edit tool)", "",
           "| repo | kind | edits | refused by the syntax guard | caught by diagnostics | missed |",
           "|---|---|---|---|---|---|"]
    for e in edits:
        for kind in KINDS:
            c = e["results"][kind]
            n = sum(c.values())
            out.append(f"| {e['name']} | {kind} | {n} | {c['guard']} | {c['caught']} ({ratio(c['caught'], n)}) | "
                       f"{c['missed']} |")
    out += ["", "Examples: " + "; ".join(f"{k}: {v}" for k, v in edits[0]["examples"].items()), "",
            "### Real commits as edits (false alarms)", "",
            "| repo | single-file commits | with an introduced error (false alarm) | codes |", "|---|---|---|---|"]
    for e in edits:
        codes = ", ".join(f"{k} {v}" for k, v in e["alarm_codes"].most_common(5)) or "-"
        out.append(f"| {e['name']} | {e['commits']} | {e['alarms']} ({ratio(e['alarms'], e['commits'])}) | {codes} |")
    out += ["", "### Cost", "", "| repo | first start + first check | edit → diagnostics p50 | p95 | max | "
            "server RSS |", "|---|---|---|---|---|---|"]
    for e in edits:
        lat = e["latencies"]
        out.append(f"| {e['name']} | {e['start_s']:.1f} s | {pctl(lat, 0.5):.0f} ms | {pctl(lat, 0.95):.0f} ms | "
                   f"{max(lat) if lat else 0:.0f} ms | {e['rss_mb']:.0f} MB |")
    out += ["", "### References and definitions: server vs name-based index", "",
            "Precision of X judged by Y = |X ∩ Y| / |X| (per line, summed over symbols).", "",
            "| repo | symbols | refs: index / basedpyright / jedi | index precision (judge basedpyright) | "
            "index precision (judge jedi) | index precision (judge either server) | basedpyright precision "
            "(judge jedi) | index recall of basedpyright |",
            "|---|---|---|---|---|---|---|---|"]
    for r in refs:
        s = r["sums"]
        out.append(f"| {r['name']} | {s['symbols']} | {s['ts_n']} / {s['pyright_n']} / {s['jedi_n']} | "
                   f"{ratio(s['ts_in_pyright'], s['ts_n'])} | {ratio(s['ts_in_jedi'], s['ts_n'])} | "
                   f"{ratio(s['ts_in_either'], s['ts_n'])} | "
                   f"{ratio(s['pyright_in_jedi'], s['pyright_n'])} | {ratio(s['pyright_in_ts'], s['pyright_n'])} |")
    out += ["", "Where the two servers disagree (first symbols of each repo, path:line):", ""]
    out += [f"- {r['name']} {line}" for r in refs for line in r["examples"][:3]]
    out += ["", "| repo | use sites | server's definition right | index by name: exactly the right one | "
            "index candidates per site |", "|---|---|---|---|---|"]
    for r in refs:
        d = r["defs"]
        out.append(f"| {r['name']} | {d['sites']} | {ratio(d['server_right'], d['sites'])} | "
                   f"{ratio(d['index_unique_right'], d['sites'])} | "
                   f"{d['index_candidates'] / d['sites'] if d['sites'] else 0:.1f} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="requests only, fewer samples")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "lsp.md")
    args = parser.parse_args()
    names = ["requests"] if args.quick else ["requests", "flask"]
    per_kind, commits, samples = (8, 10, 10) if args.quick else (30, 40, 40)
    edits, refs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "state").mkdir()
        for name in names:
            e = run_edits(name, per_kind, commits, work)
            print(name, {k: dict(v) for k, v in e["results"].items()}, e["alarms"], "/", e["commits"], file=sys.stderr)
            edits.append(e)
            refs.append(run_references(name, e["repo"], samples))
            print(name, dict(refs[-1]["sums"]), dict(refs[-1]["defs"]), file=sys.stderr)
    command = "python benchmarks/lsp.py" + (" --quick" if args.quick else "")
    text = markdown(edits, refs, command, per_kind)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
