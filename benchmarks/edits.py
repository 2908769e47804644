"""Benchmark: do edits land? coder's str_replace vs a plain exact str.replace vs Aider's matcher.

Runs every case of the corpus (benchmarks/edits_corpus.py: real files of requests, flask, rxjs, axios and
go-jsonnet, with the mistakes models make) through three systems on real files, byte for byte:

  coder        coder.edit.ops.Editor.str_replace on a temp workspace (reads, matches, syntax guard, writes)
  plain exact  Claude Code's rule: replace when old_str occurs exactly once, else refuse
  aider        aider.coders.editblock_coder.replace_most_similar_chunk, run in Aider's own venv through a
               subprocess shim, with Aider's file handling (universal newlines in, platform newlines out)

Each result is one of: applied as intended (the file is byte-identical to the intended edit), applied
with whitespace drift (same code, different trailing spaces / blank lines / line endings), refused, or
applied wrongly. For cases without a unique intent (ambiguous or absent text) a refusal is the right
answer and any change is wrong.

Usage: python benchmarks/edits.py [--quick] [--peer-venv /work/peers/aider] [--install-peer] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import edits_corpus as corpus  # noqa: E402

AIDER_SHIM = r'''
import json, sys
from aider.coders.editblock_coder import replace_most_similar_chunk
for line in sys.stdin:
    case = json.loads(line)
    try:
        result = replace_most_similar_chunk(case["content"], case["old"], case["new"])
    except Exception as exc:  # aider raises on some inputs; that is a refusal
        result = None
    print(json.dumps({"id": case["id"], "result": result}), flush=True)
'''

DEFAULT_PEER = Path("/work/peers/aider")


def to_bytes(text: str, crlf: bool) -> bytes:
    return (text.replace("\n", "\r\n") if crlf else text).encode("utf-8")


def normalise(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    return [line.rstrip() for line in text.split("\n") if line.strip()]


def classify(case: corpus.Case, result: bytes | None, original: bytes, expected: bytes | None) -> str:
    if case.expect == "refuse":
        return "refused_ok" if result is None or result == original else "wrong"
    if result is None or result == original:
        return "refused"
    if result == expected:
        return "intended"
    if expected is not None and normalise(result) == normalise(expected):
        return "drift"
    return "wrong"


Outcome = dict[str, bytes | None]


def run_coder(cases: list[corpus.Case], texts: dict[str, str]) -> tuple[Outcome, dict[str, str], list[float]]:
    from coder.edit.errors import EditError, MatchError
    from coder.edit.ops import Editor

    results: dict[str, bytes | None] = {}
    errors: dict[str, str] = {}
    timings: list[float] = []
    with tempfile.TemporaryDirectory(prefix="edits-bench-") as tmp:
        ws = Path(tmp)
        for case in cases:
            name = f"{case.id}{Path(case.file).suffix}"
            target = ws / name
            target.write_bytes(to_bytes(texts[case.file], case.crlf))
            editor = Editor(ws)
            start = time.perf_counter()
            try:
                editor.str_replace(name, case.old_str, case.new_str)
                results[case.id] = target.read_bytes()
            except MatchError as exc:
                results[case.id] = None
                errors[case.id] = exc.kind
            except EditError as exc:
                results[case.id] = None
                errors[case.id] = type(exc).__name__
            timings.append(time.perf_counter() - start)
            target.unlink()
    return results, errors, timings


def run_plain(cases: list[corpus.Case], texts: dict[str, str]) -> tuple[dict[str, bytes | None], dict[str, str]]:
    results: dict[str, bytes | None] = {}
    errors: dict[str, str] = {}
    for case in cases:
        content = to_bytes(texts[case.file], case.crlf).decode("utf-8")
        count = content.count(case.old_str)
        if count == 1:
            results[case.id] = content.replace(case.old_str, case.new_str).encode("utf-8")
        else:
            results[case.id] = None
            errors[case.id] = "no-match" if count == 0 else "multiple"
    return results, errors


def find_aider(venv: Path, install: bool) -> Path | None:
    python = venv / "bin" / "python"
    if not python.exists() and install:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "aider-chat"], check=True)
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", "import aider.coders.editblock_coder"], capture_output=True)
    return python if probe.returncode == 0 else None


def run_aider(python: Path, cases: list[corpus.Case], texts: dict[str, str]) -> dict[str, bytes | None]:
    lines = []
    for case in cases:
        # Aider reads with universal newlines; its SEARCH/REPLACE parser keeps each line's newline
        content = to_bytes(texts[case.file], case.crlf).decode("utf-8").replace("\r\n", "\n")
        lines.append(json.dumps({"id": case.id, "content": content, "old": case.old_str + "\n",
                                 "new": case.new_str + "\n"}))
    proc = subprocess.run([str(python), "-c", AIDER_SHIM], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"aider shim failed: {proc.stderr[-2000:]}")
    out: dict[str, bytes | None] = {}
    for line in proc.stdout.splitlines():
        item = json.loads(line)
        # Aider writes with platform newlines ("\n" here) in UTF-8
        out[item["id"]] = item["result"].encode("utf-8") if item["result"] is not None else None
    return out


def summarise(name: str, cases: list[corpus.Case], results: dict[str, bytes | None], texts: dict[str, str],
              errors: dict[str, str] | None = None, lf_only: bool = False) -> dict:
    counts: Counter[str] = Counter()
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    right_error = 0
    for case in cases:
        text = texts[case.file]
        crlf = case.crlf and not lf_only
        original = to_bytes(text, crlf)
        expected = to_bytes(case.expected_text(text), crlf) if case.expect == "apply" else None
        result = results.get(case.id)
        if lf_only and result is not None:
            result = result.replace(b"\r\n", b"\n")
        verdict = classify(case, result, original, expected)
        counts[verdict] += 1
        per_kind[case.kind][verdict] += 1
        if errors is not None and verdict == "refused_ok":
            want = "multiple" if case.kind.startswith("ambiguous") else "no-match"
            right_error += errors.get(case.id) == want
    unique = sum(1 for c in cases if c.expect == "apply")
    return {"system": name, "counts": dict(counts), "per_kind": {k: dict(v) for k, v in per_kind.items()},
            "unique": unique, "no_intent": len(cases) - unique,
            "right_error": right_error if errors is not None else None}


def pct(n: int, d: int) -> str:
    return f"{n} ({100 * n / d:.1f}%)" if d else "0"


def markdown(summaries: list[dict], cases: list[corpus.Case], timings: list[float], command: str) -> str:
    langs = Counter(c.lang for c in cases)
    out = ["## Edits: do they land?", "",
           f"Command: `{command}`  ", f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
           "Machine: 2 cores, 24 GiB, loaded by parallel work  ",
           f"Corpus: {len(cases)} edits on real files ({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))}) "
           "from requests 2.32.3 + flask 3.0.3 + rich 13.9.4 (Python) and orjson 3.10.12 (Rust) (PyPI sdists), "
           "rxjs 7.8.1 (TS) + axios 1.7.7 (JS) (npm), "
           "go-jsonnet Go sources shipped in the gojsonnet 0.20.0 PyPI sdist.", "",
           "| system | applied as intended (unique intent) | whitespace drift | refused (unique intent) | "
           "refused correctly (no unique intent) | applied wrongly |",
           "|---|---|---|---|---|---|"]
    for s in summaries:
        c = s["counts"]
        right = f" ({s['right_error']} with the right error kind)" if s["right_error"] is not None else ""
        out.append(f"| {s['system']} | {pct(c.get('intended', 0), s['unique'])} | {c.get('drift', 0)} | "
                   f"{c.get('refused', 0)} | {pct(c.get('refused_ok', 0), s['no_intent'])}{right} | "
                   f"**{c.get('wrong', 0)}** |")
    kinds = list(dict.fromkeys(c.kind for c in cases))
    out += ["", "Applied as intended (apply kinds) / refused correctly (refuse kinds), per mistake kind:", "",
            "| kind | cases | " + " | ".join(s["system"] for s in summaries) + " |",
            "|---|---|" + "---|" * len(summaries)]
    for kind in kinds:
        n = sum(1 for c in cases if c.kind == kind)
        cells = []
        for s in summaries:
            k = s["per_kind"].get(kind, {})
            good = k.get("intended", 0) + k.get("refused_ok", 0)
            bad = k.get("wrong", 0)
            cells.append(f"{good}/{n}" + (f" ({bad} wrong)" if bad else ""))
        out.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    if timings:
        ms = sorted(t * 1000 for t in timings)
        out += ["", f"coder time per edit (read, match, syntax check, atomic write): median "
                f"{statistics.median(ms):.1f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, max {ms[-1]:.1f} ms."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Edit-landing benchmark (see module docstring)")
    parser.add_argument("--quick", action="store_true", help="about 330 cases instead of about 800")
    parser.add_argument("--cache", type=Path, default=corpus.default_cache())
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--peer-venv", type=Path, default=DEFAULT_PEER, help="Aider's venv (default %(default)s)")
    parser.add_argument("--install-peer", action="store_true", help="create the Aider venv when it is missing")
    parser.add_argument("--out", type=Path, help="write the Markdown section here")
    parser.add_argument("--json", type=Path, help="write raw per-case verdicts here")
    args = parser.parse_args(argv)
    count = 330 if args.quick else 800
    path = corpus.build(args.cache, count, args.seed)
    cases = corpus.load_corpus(path)
    src = args.cache / "src"
    texts = {c.file: (src / c.file).read_text(encoding="utf-8") for c in cases}
    print(f"{len(cases)} cases from {path}", file=sys.stderr)
    ours, our_errors, timings = run_coder(cases, texts)
    plain, plain_errors = run_plain(cases, texts)
    summaries = [summarise("coder", cases, ours, texts, our_errors),
                 summarise("plain exact str.replace", cases, plain, texts, plain_errors)]
    python = find_aider(args.peer_venv, args.install_peer)
    if python is None:
        print(f"aider: not available (no venv with aider-chat at {args.peer_venv}; use --install-peer)",
              file=sys.stderr)
        summaries.append({"system": "aider (not available)", "counts": {}, "per_kind": {}, "unique": 0,
                          "no_intent": 0, "right_error": None})
    else:
        aider = run_aider(python, cases, texts)
        summaries.append(summarise("aider (its file handling: CRLF written as LF)", cases, aider, texts))
        summaries.append(summarise("aider (matcher only, line endings ignored)", cases, aider, texts, lf_only=True))
    command = "python benchmarks/edits.py" + (" --quick" if args.quick else "")
    text = markdown(summaries, cases, timings, command)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        rows = []
        for case in cases:
            rows.append({"id": case.id, "kind": case.kind, "ours": classify(
                case, ours[case.id], to_bytes(texts[case.file], case.crlf),
                to_bytes(case.expected_text(texts[case.file]), case.crlf) if case.expect == "apply" else None),
                "error": our_errors.get(case.id)})
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    wrong = summaries[0]["counts"].get("wrong", 0)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
