"""Benchmark: wrong edits on UNSEEN data. Real single-hunk commits of repositories the matcher was never tuned
on, sent to the editor with the mistakes models make, drawn with seeds no one tuned on.

Corpus: for each repository (bare git mirrors under /work/.mirror/<owner>+<name>/repo: sympy, sphinx, pylint,
astropy, seaborn, xarray), the newest non-merge commits that change exactly one .py file in exactly one hunk.
The edit is the hunk itself: old_str = its context and removed lines, new_str = its context and added lines,
the file before the commit is the file, the file after the commit is what the model meant (checked byte for
byte). Hunks whose old side is not unique in the file are left out (their intent is not unique).

Each edit is sent as-is ("exact") and with every mistake of tests/edit/edit_mistakes.py alone, plus random
combinations of two to four; each case's file is written LF or CRLF, with or without a BOM (drawn). The file
is named .txt so the syntax guard cannot turn a wrong merge into a refusal and hide it. A result is
"intended" (byte-identical to the commit, or to the literal replacement when the damaged old_str happens to
occur exactly once), "refused" (file untouched) or "wrong" (anything else).

Usage: python benchmarks/edits_commits.py [--quick] [--seeds 101,202] [--per-repo 40]
         [--baseline-root DIR]   also run the coder package found in DIR (e.g. `git archive` of an older
                                 commit) on the same cases, for a before/after table
         [--out FILE]            write the Markdown section (benchmarks/sections/edits_commits.md)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "edit"))
import edit_mistakes as mk  # noqa: E402

MIRRORS = Path("/work/.mirror")
REPOS = ["sympy+sympy", "sphinx-doc+sphinx", "pylint-dev+pylint", "astropy+astropy", "mwaskom+seaborn",
         "pydata+xarray"]
MAX_FILE_LINES = 6000
MAX_BLOCK = 40


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={MIRRORS / repo / 'repo'}", *args], capture_output=True,
                          text=True, errors="replace", check=True).stdout


@dataclass
class Commit:
    repo: str
    sha: str
    path: str
    before: str
    first: int
    end: int
    meant: list[str]


def commits(repo: str, limit: int) -> list[Commit]:
    """The newest `limit` single-file, single-hunk .py commits of `repo` whose hunk is unique in the file."""
    log = git(repo, "log", "--no-merges", "-n", str(limit * 40), "--format=@%H", "--numstat", "HEAD")
    found: list[Commit] = []
    for entry in log.split("@")[1:]:
        rows = [r for r in entry.strip().split("\n")[1:] if r.strip()]
        sha = entry.split("\n", 1)[0].strip()
        if len(rows) != 1 or not rows[0].endswith(".py") or rows[0].startswith("-"):
            continue
        path = rows[0].split("\t")[2]
        try:
            diff = git(repo, "show", "-U3", "--format=", sha, "--", path)
            before = git(repo, "show", f"{sha}^:{path}")
            after = git(repo, "show", f"{sha}:{path}")
        except subprocess.CalledProcessError:
            continue
        hunk = _one_hunk(diff)
        if hunk is None or before.count("\n") > MAX_FILE_LINES or "\r" in before:
            continue
        start, old, new = hunk
        lines = before.split("\n")
        first = max(0, start - 1) if old else start
        if lines[first: first + len(old)] != old or not any(x.strip() for x in old) or len(old) > MAX_BLOCK:
            continue
        if before.count("\n".join(old)) != 1:
            continue
        edit = mk.Edit(lines, first, first + len(old), new)
        if edit.intended() != after:
            continue
        found.append(Commit(repo, sha, path, before, first, first + len(old), new))
        if len(found) >= limit:
            break
    return found


def _one_hunk(diff: str) -> tuple[int, list[str], list[str]] | None:
    if diff.count("\n@@ ") + diff.startswith("@@ ") != 1 or "\\ No newline" in diff or "Binary" in diff:
        return None
    body = diff[diff.index("@@ "):].split("\n")
    start = int(body[0].split()[1].split(",")[0][1:])
    old, new = [], []
    for line in body[1:]:
        if line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line == "":
            continue
        else:
            return None
    return start, old, new


def make_cases(found: list[Commit], seeds: list[int]) -> list[dict]:
    cases = []
    for seed in seeds:
        for c in found:
            rng = random.Random(f"{seed}:{c.repo}:{c.sha}")
            edit = mk.Edit(c.before.split("\n"), c.first, c.end, c.meant)
            plans = [["exact"]] + [[k] for k in mk.KINDS] + [rng.sample(mk.KINDS, rng.randint(2, 4))
                                                          for _ in range(3)]
            for kinds in plans:
                old, new, done = mk.damage(edit, [k for k in kinds if k != "exact"], rng)
                if kinds != ["exact"] and not done:
                    continue  # the mistake does not apply to this hunk
                if old == new or not old.strip():
                    continue
                label = "exact" if kinds == ["exact"] else ("+".join(done) if len(kinds) == 1 else "combined")
                cases.append({"id": f"{seed}:{c.repo}:{c.sha[:10]}:{'+'.join(kinds)}", "repo": c.repo,
                              "kind": label, "old": old, "new": new, "text": c.before,
                              "want": mk.expected(c.before, edit, old, new),
                              "crlf": rng.random() < 0.25, "bom": rng.random() < 0.1})
    return cases


def run(cases: list[dict]) -> dict[str, str]:
    """case id -> "intended" / "refused" / "wrong", with the coder package first on sys.path."""
    from coder.edit.errors import EditError
    from coder.edit.ops import Editor

    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="edits-commits-") as tmp:
        ws = Path(tmp)
        path = ws / "mod.txt"
        for case in cases:
            before = mk.encode(case["text"], case["crlf"], case["bom"])
            path.write_bytes(before)
            try:
                Editor(ws).str_replace("mod.txt", case["old"], case["new"])
            except EditError as exc:
                out[case["id"]] = "refused" if path.read_bytes() == before else "wrong"
                case["error"] = str(exc)
                continue
            out[case["id"]] = "intended" if path.read_bytes() == mk.encode(case["want"], case["crlf"], case["bom"]) \
                else "wrong"
    return out


def table(cases: list[dict], verdicts: dict[str, dict[str, str]]) -> list[str]:
    systems = list(verdicts)
    rows = ["| kind | cases | " + " | ".join(f"{s}: intended / refused / **wrong**" for s in systems) + " |",
            "|---|---:|" + "---|" * len(systems)]
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        by_kind[case["kind"]].append(case)
    order = ["exact"] + mk.KINDS + ["combined"]
    for kind in sorted(by_kind, key=lambda k: order.index(k) if k in order else len(order)):
        group = by_kind[kind]
        cells = []
        for s in systems:
            n = Counter(verdicts[s][c["id"]] for c in group)
            cells.append(f"{n['intended']} / {n['refused']} / **{n['wrong']}**")
        rows.append(f"| {kind} | {len(group)} | " + " | ".join(cells) + " |")
    cells = []
    for s in systems:
        n = Counter(verdicts[s].values())
        cells.append(f"{n['intended']} ({100 * n['intended'] / len(cases):.1f}%) / {n['refused']} / **{n['wrong']}**")
    rows.append(f"| all | {len(cases)} | " + " | ".join(cells) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Wrong edits on unseen commits (see module docstring)")
    ap.add_argument("--quick", action="store_true", help="15 commits per repository, one seed")
    ap.add_argument("--per-repo", type=int, default=40)
    ap.add_argument("--seeds", default="101,202")
    ap.add_argument("--root", type=Path, default=ROOT, help="where the coder package under test lives")
    ap.add_argument("--baseline-root", type=Path, help="also run the coder package in DIR on the same cases")
    ap.add_argument("--cases", type=Path, help=argparse.SUPPRESS)  # internal: run these cases, print verdicts
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dump", type=Path, help="write the cases coder refused or applied wrongly here (JSON)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.root))
    if args.cases:
        print(json.dumps(run(json.loads(args.cases.read_text()))))
        return 0
    per_repo = 15 if args.quick else args.per_repo
    seeds = [int(s) for s in args.seeds.split(",")][: 1 if args.quick else None]
    started = time.time()
    found = [c for repo in REPOS for c in commits(repo, per_repo)]
    cases = make_cases(found, seeds)
    print(f"{len(found)} commits, {len(cases)} cases ({time.time() - started:.0f} s to build)", file=sys.stderr)
    verdicts: dict[str, dict[str, str]] = {}
    if args.baseline_root:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(cases, fh)
        proc = subprocess.run([sys.executable, __file__, "--root", str(args.baseline_root), "--cases", fh.name],
                              capture_output=True, text=True, check=True)
        Path(fh.name).unlink()
        verdicts[f"before ({args.baseline_root.name})"] = json.loads(proc.stdout)
    started = time.time()
    verdicts["coder"] = run(cases)
    elapsed = time.time() - started
    if args.dump:
        base = next((v for k, v in verdicts.items() if k != "coder"), {})
        args.dump.write_text(json.dumps([dict(c, verdict=verdicts["coder"][c["id"]], before=base.get(c["id"]))
                                         for c in cases if verdicts["coder"][c["id"]] != "intended"]))
    per_repo_found = Counter(c.repo for c in found)
    command = "python benchmarks/edits_commits.py" + (" --quick" if args.quick else f" --seeds {args.seeds}") + (
        f" --baseline-root {args.baseline_root}" if args.baseline_root else "")
    lines = ["## Edits on unseen commits (issue 17)", "",
             f"Command: `{command}`  ", f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
             "Machine: 2 cores, loaded by parallel work  ",
             f"Corpus: {len(found)} single-hunk .py commits ("
             + ", ".join(f"{r.split('+')[1]} {n}" for r, n in per_repo_found.items())
             + f"), seeds {', '.join(map(str, seeds))}: {len(cases)} edits, each sent exact, with every mistake kind "
             "alone and in random combinations (LF/CRLF, BOM drawn). coder ran them in "
             f"{elapsed:.0f} s.", ""]
    lines += table(cases, verdicts)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 1 if Counter(verdicts["coder"].values())["wrong"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
