"""Benchmark: how strict the fake model server is. Every broken body of the rule tests (tests/models/fake_cases_*:
one or more per documented request rule of the Messages API and of Chat Completions) is posted with the real
anthropic / openai SDK clients to a fake server started from a checkout; a body the real API refuses must come
back as a 400 (or the 413 of an oversized body). Counts: refused (400), accepted (200: the fake let a broken
body through), broken (the fake's handler failed: no answer), per API.

Usage: python benchmarks/fake_rules.py [--quick] [--baseline-root DIR]   (DIR: another checkout, e.g. a
       `git worktree` of main, run on the same bodies for a before / after table) [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

import anthropic  # noqa: E402
import fake_cases_chat  # noqa: E402
import fake_cases_media  # noqa: E402
import fake_cases_messages  # noqa: E402
import fake_cases_server  # noqa: E402
import openai  # noqa: E402
from fake_rules_support import SCRIPT  # noqa: E402


def run(checkout: Path) -> dict[str, object]:
    """Post every broken body to the fake server of `checkout`; counts and the rules it let through."""
    with tempfile.TemporaryDirectory(prefix="fake-rules-") as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        proc = subprocess.Popen([sys.executable, "-m", "coder_testkit.fake_server", "--script", str(script)],
                                cwd=checkout, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            return _post_all(url)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _post_all(url: str) -> dict[str, object]:
    claude = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, timeout=300)
    gpt = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=300)
    counts = {api: {"refused": 0, "accepted": 0, "broken": 0} for api in ("messages", "chat")}
    let_through: list[str] = []
    started = time.monotonic()
    for case in fake_cases_messages.CASES + fake_cases_media.CASES + fake_cases_server.CASES:
        path = "/v1/messages/count_tokens" if case.count_tokens else "/v1/messages"
        outcome = _outcome(anthropic, claude.post, path, body=case.body, cast_to=object,
                           options={"headers": case.headers})
        counts["messages"][outcome] += 1
        if outcome != "refused":
            let_through.append(f"{case.rule} ({outcome})")
    wrongly: list[str] = []  # valid bodies the API takes (the documented continuations of server tool turns)
    for n, valid in enumerate(fake_cases_server.VALID):
        if _outcome(anthropic, claude.post, "/v1/messages", body=valid, cast_to=object) != "accepted":
            wrongly.append(f"server-tools valid body {n + 1}")
    for chat in fake_cases_chat.CASES:
        outcome = _outcome(openai, gpt.post, "/chat/completions", cast_to=object, body=chat.request())
        counts["chat"][outcome] += 1
        if outcome != "refused":
            let_through.append(f"{chat.rule} ({outcome})")
    return {"counts": counts, "let_through": let_through, "wrongly_refused": wrongly,
            "seconds": round(time.monotonic() - started, 1)}


def _outcome(sdk: Any, send: Any, *args: Any, **kwargs: Any) -> str:
    try:
        send(*args, **kwargs)
    except sdk.APIStatusError as exc:
        return "refused" if exc.status_code in (400, 413) else "broken"
    except sdk.APIConnectionError:
        return "broken"
    return "accepted"


def section(results: dict[str, dict[str, object]], command: str) -> str:
    lines = ["## Fake server strictness (issues 30 and 46)", "", f"Command: `{command}`  ",
             f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
             f"Machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared)  ",
             "Bodies: every broken body of tests/models/fake_cases_*.py (one or more per rule of the table), posted "
             "with the real SDK clients. refused = 400 / 413; accepted = the fake answered 200 to a body the real "
             "API refuses; broken = the fake's handler failed.", "",
             "| fake server | Messages: refused / accepted / broken | Chat: refused / accepted / broken |",
             "|---|---|---|"]
    for name, result in results.items():
        c = result["counts"]
        assert isinstance(c, dict)
        cells = [" / ".join(str(c[api][k]) for k in ("refused", "accepted", "broken")) for api in ("messages", "chat")]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    for name, result in results.items():
        through, wrongly = result["let_through"], result.get("wrongly_refused", [])
        assert isinstance(through, list) and isinstance(wrongly, list)
        if through:
            lines += ["", f"Let through by {name}: " + ", ".join(f"`{x}`" for x in through) + "."]
        lines += ["", f"Valid bodies refused by {name} (of {len(fake_cases_server.VALID)}: a paused turn sent back, "
                  f"a mixed turn's results, the answer they open, valid domains): {len(wrongly)}"
                  + (" (" + ", ".join(wrongly) + ")" if wrongly else "") + "."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="this checkout only (the default without a baseline)")
    ap.add_argument("--baseline-root", type=Path, help="another checkout to run on the same bodies")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "fake_rules.md")
    args = ap.parse_args()
    results: dict[str, dict[str, object]] = {}
    if args.baseline_root and not args.quick:
        results[f"before ({args.baseline_root})"] = run(args.baseline_root)
    results["this checkout"] = run(ROOT)
    print(json.dumps(results, indent=1))
    args.out.write_text(section(results, "python benchmarks/fake_rules.py " + " ".join(sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
