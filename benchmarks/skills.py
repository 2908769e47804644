"""Benchmark: what installed Agent Skills cost in the system prompt (issue 19), with 0, 10 and 100 skills.

Only names and descriptions go into the system prompt; bodies load on demand (the `skill` tool). This measures the
system prompt coder really builds (`render_system_prompt` plus `coder.engine.work.open_work`, the code path of
every session) with N copies of the published `webapp-testing` skill of github.com/anthropics/skills (the test
fixture; each copy under its own name) installed in a private user config dir, and the time discovery takes.
Tokens are coder's own estimate (coder.context.tokens, 3.5 characters a token unless calibrated): the Claude
tokenizer is not public and no network is used. The skill list has a budget ([skills] prompt_chars, 4,000
characters): past it descriptions are cut to an equal share, and past that only names are listed.

Usage: python benchmarks/skills.py [--quick] [--out benchmarks/sections/skills.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests" / "ext" / "fixtures" / "skills" / "webapp-testing"
COUNTS = (0, 10, 30, 100)


def description_chars() -> int:
    from coder.ext.skills import parse_skill

    return len(parse_skill((FIXTURE / "SKILL.md").read_bytes(), "SKILL.md", "webapp-testing")[1])


def install(config_home: Path, count: int) -> None:
    folder = config_home / "coder" / "skills"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    text = (FIXTURE / "SKILL.md").read_text(encoding="utf-8")
    for i in range(count):
        target = folder / f"webapp-testing-{i:03d}"
        shutil.copytree(FIXTURE, target)
        (target / "SKILL.md").write_text(text.replace("name: webapp-testing", f"name: webapp-testing-{i:03d}"),
                                         encoding="utf-8")


def measure(count: int, work: Path, repeats: int) -> dict[str, float]:
    from coder.context.tokens import TokenEstimator
    from coder.engine.builder import render_system_prompt
    from coder.engine.work import open_work

    install(work / "config", count)
    repo = work / "repo"
    repo.mkdir(exist_ok=True)
    base = render_system_prompt(repo, repo, True, "bubblewrap", "")
    times = []
    prompt = ""
    for _ in range(repeats):
        config = {"sandbox": {}, "permission_mode": "ask", "_trusted": False}
        started = time.perf_counter()
        parts = open_work(repo, config, None, lambda line: None)
        times.append(time.perf_counter() - started)
        prompt = base + parts.prompt
    estimator = TokenEstimator()
    body = (FIXTURE / "SKILL.md").read_text(encoding="utf-8")
    return {"skills": count, "chars": len(prompt), "tokens": estimator.text(prompt),
            "added": estimator.text(prompt) - estimator.text(base), "ms": 1000 * statistics.median(times),
            "bodies": count * estimator.text(body)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat instead of five")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "skills.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["XDG_CONFIG_HOME"] = str(work / "config")
        os.environ["HOME"] = str(work / "home")  # no ~/.claude/skills of the machine's user
        rows = [measure(n, work, 1 if args.quick else 5) for n in COUNTS]
    lines = ["## Agent Skills in the system prompt (issue 19)", "",
             f"`python benchmarks/skills.py{' --quick' if args.quick else ''}` on {datetime.date.today()}, "
             f"Python {platform.python_version()}, {os.cpu_count()} cores. N copies of the published "
             f"`webapp-testing` skill (anthropics/skills, a {description_chars()}-character description) installed as "
             "user skills; the system prompt is the one a session builds. Tokens: coder's estimate (3.5 characters "
             "a token). The skill list's budget is 4,000 characters ([skills] prompt_chars): 10 skills fit with "
             "their descriptions, 30 get descriptions cut to an equal share, 100 are listed by name.", "",
             "| skills | system prompt chars | ~tokens | added by skills | bodies not sent (~tokens) | discovery ms |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['skills']} | {r['chars']:,} | {r['tokens']:,} | {r['added']:,} | {r['bodies']:,} | "
                     f"{r['ms']:.1f} |")
    full = rows[1]["added"] / max(rows[1]["skills"], 1)
    lines += ["", f"A skill listed with its description costs about {full:.0f} tokens; 100 skills cost "
              f"{rows[-1]['added']:,} tokens in all (names only). A body, about {rows[1]['bodies'] // 10:,} tokens, "
              "is read only when the model loads it."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
