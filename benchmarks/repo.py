"""The Repo object (issue 48, item 5): this checkout against the code before it, in the same run.

Usage: python benchmarks/repo.py [--quick] [--base COMMIT] [--rounds N] [--no-timing] [--write-section]

Both sides are measured from their own copies (the base is `git archive COMMIT` of this repository, default
20d7e44, the commit before the Repo object), each in its own Python processes with PYTHONPATH set to it:

- **shape**, read from the source with `ast` (no import): in `coder/review/` and `coder/vcs/`, the functions and
  methods, and those with a parameter that is a bare repository path (named root, repo_root, work_tree, cwd,
  workspace or repo, annotated as a path, `Any` or not at all); and in the same packages, `coder/engine/finish.py`
  and `coder/commands/git.py`, the call sites that start host git themselves (`run_git(...)`, `hostgit.run(...)`,
  `hostgit.untrusted_drivers(...)`, `hostgit.config_entries(...)`).
- **the walk from review to commit**, traced: `coder run --commit` in a fresh repository (a scripted model creates
  one file; the review runs the model-free stages but the tests), with `sys.setprofile` on from the moment
  `coder.engine.finish.review_and_commit` is called until it returns, in the main thread. The rooms are the modules
  of `coder.engine.finish`, `coder.review.*` and `coder.vcs.*`. The walk is the module of each function the first
  time it is called (comprehensions are part of their function), consecutive repeats merged; a *return* is a step
  into a room the walk had already been in. The same over every call (loops and repeated calls included) gives
  the run-time walk, and the calls of `coder.host.git._git` count the git processes the commit took.
- **timing**, the two sides alternated round by round (the machine is shared): one review round
  (`coder.review.pipeline.review` of a 3-file patch, every model-free stage, the tests in the sandbox) in a
  repository of 300 files, wall seconds and the CPU seconds of coder and the host processes it waits for (git,
  ruff; not the sandboxed tests, which bubblewrap runs apart). Medians; the ratio
  is this/base. Goal: within 1.05. The 1,000-call headless session is `benchmarks/headless.py --against`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from host_door import compiled_sides, measure  # noqa: E402

SECTION = ROOT / "benchmarks" / "sections" / "repo.md"
BASE = "20d7e44"

REPO_PARAMS = {"root", "repo_root", "work_tree", "cwd", "workspace", "repo"}
GIT_STARTERS = {"run", "untrusted_drivers", "config_entries", "program_overrides"}
PACKAGES = ("coder/review", "coder/vcs")
LANES = (*PACKAGES, "coder/engine/finish.py", "coder/commands/git.py")


def _files(tree: Path, where: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for item in where:
        path = tree / item
        found += sorted(path.glob("*.py")) if path.is_dir() else [path]
    return found


def _bare_path(arg: ast.arg) -> bool:
    if arg.arg not in REPO_PARAMS:
        return False
    note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    return "Repo" not in note and (not note or "Path" in note or "Any" in note or note == "str")


def shape(tree: Path) -> dict[str, int]:
    """The static counts of the module docstring, for the checkout at `tree`."""
    functions = bare = starters = 0
    for file in _files(tree, LANES):
        module = ast.parse(file.read_text(encoding="utf-8"))
        in_packages = file.parent.relative_to(tree).as_posix() in PACKAGES
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and in_packages:
                functions += 1
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                bare += any(_bare_path(a) for a in args)
            elif isinstance(node, ast.Call):
                func = node.func
                if (isinstance(func, ast.Name) and func.id == "run_git") or (
                        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                        and func.value.id == "hostgit" and func.attr in GIT_STARTERS):
                    starters += 1
    return {"functions": functions, "bare path": bare, "git call sites": starters}


WALK = r'''
import json, os, subprocess, sys, tempfile, threading, zlib
from pathlib import Path

work = Path(tempfile.mkdtemp(prefix="repo-walk-"))
home = work / "home"
for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
    os.environ[name] = str(home / name.lower())
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
config = home / "xdg_config_home" / "coder"
config.mkdir(parents=True)
config.joinpath("config.toml").write_text('[review]\nstages = ["apply", "parse", "lint", "hygiene", "gaming"]\n')
repo = work / "repo"
repo.mkdir()

def git(*args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

git("init", "-q", "-b", "main")
git("config", "user.name", "walker")
git("config", "user.email", "walker@example.com")
repo.joinpath("app.py").write_text("def add(a, b):\n    return a + b\n")
git("add", "-A")
git("commit", "-q", "-m", "init")
script = work / "turns.json"
script.write_text(json.dumps({"turns": [
    {"text": "Adding.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "create", "path": "mul.py", "file_text": "def mul(a, b):\n    return a * b\n"}}]},
    {"text": "Done."},
    {"when": "Write the git commit message", "repeat": True, "text": "feat: add mul"}]}))
os.chdir(repo)

from coder.cli.main import main

ROOMS = ("coder.engine.finish", "coder.review.", "coder.vcs.")
calls = []
state = {"on": False, "done": False}
main_thread = threading.main_thread()

def profile(frame, event, arg):
    if state["done"] or threading.current_thread() is not main_thread:
        return
    code = frame.f_code
    module = frame.f_globals.get("__name__", "")
    entry = module == "coder.engine.finish" and code.co_name == "review_and_commit"
    if event == "return" and entry and state["on"]:
        state["on"], state["done"] = False, True
    if event != "call" or not (state["on"] or entry):
        return
    state["on"] = True
    if not module.startswith("coder.") or (code.co_name.startswith("<") and code.co_name != "<lambda>"):
        return
    calls.append((module, code.co_filename, code.co_firstlineno, code.co_name))

sys.setprofile(profile)
status = main(["run", "--model", f"scripted:{script}", "--permission-mode", "auto", "--commit", "add mul"])
sys.setprofile(None)
# read without a process: coder's door refuses one started outside coder/host once main() has run
head = (repo / ".git" / "refs" / "heads" / "main").read_text().strip()
committed = b"add mul" in zlib.decompress((repo / ".git" / "objects" / head[:2] / head[2:]).read_bytes())

def walk(modules):
    steps = []
    for m in modules:
        if not steps or steps[-1] != m:
            steps.append(m)
    seen, back = set(), 0
    for m in steps:
        back += m in seen
        seen.add(m)
    return steps, back

rooms = [c for c in calls if c[0] == "coder.engine.finish" or c[0].startswith(ROOMS[1:])]
first, seen = [], set()
for c in rooms:
    if c[1:] not in seen:
        seen.add(c[1:])
        first.append(c[0])
steps, back = walk(first)
all_steps, all_back = walk([c[0] for c in rooms])
print(json.dumps({"status": status, "committed": committed, "functions": len(seen), "hops": len(steps) - 1,
                  "returns": back, "run-time hops": len(all_steps) - 1, "run-time returns": all_back,
                  "git processes": sum(1 for c in calls if c[0] == "coder.host.git" and c[3] == "_git"),
                  "walk": [s.replace("coder.", "") for s in steps]}))
'''


REVIEW = r'''
import json, os, subprocess, sys, tempfile, time
from pathlib import Path

def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, stdin=subprocess.DEVNULL)

work = Path(tempfile.mkdtemp(prefix="repo-review-"))
proj = work / "proj"
proj.mkdir()
git(proj, "init", "-q", "-b", "main")
for i in range(300):
    folder = proj / f"pkg{i % 10}" / f"sub{i % 7}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"m{i}.py").write_text(f"import os\n\n\ndef f{i}(x):\n    \"doc\"\n    return x + {i}\n")
(proj / "tests").mkdir()
(proj / "tests" / "test_m.py").write_text(
    "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'pkg0' / 'sub0'))\n"
    "from m0 import f0\n\n\ndef test_f0():\n    assert f0(1) == 1\n")
git(proj, "add", "-A")
git(proj, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "x")
for i in (0, 1, 2):
    path = proj / f"pkg{i}" / f"sub{i}" / f"m{i}.py"
    path.write_text(path.read_text().replace(f"return x + {i}", f"y = x\n    return y + {i}"))

from coder.review.pipeline import review
try:
    from coder.vcs.repo import Repo
    repo = Repo.open(proj)
    patch = repo.diff()
except ImportError:  # the base: a bare path
    from coder.vcs.repo import diff
    repo, patch = proj, diff(proj)
from coder.config.layers import settings
config = settings({"review": {"stages": ["apply", "parse", "lint", "hygiene", "gaming", "tests"]}})
import resource
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
start, started = time.perf_counter(), cpu()
result = review(repo, patch, "change", None, config)
elapsed, used = time.perf_counter() - start, cpu() - started
assert [s.name for s in result.stages] == config.review.stages, result
print(json.dumps({"review round, wall (s)": elapsed, "review round, CPU of coder and its host processes (s)": used}))
'''


CORPUS = r'''
import json, resource, sys, time
from pathlib import Path
from coder.config.layers import settings
from coder.review.pipeline import review
try:
    from coder.vcs.repo import Repo
    opened = Repo.open
except ImportError:  # the base: a bare path
    opened = Path
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
rows = []
for case in json.loads(Path(sys.argv[1]).read_text()):
    config = settings({"review": {"base": case["base"], "tests": {"timeout": 180},
                                  "stages": ["apply", "parse", "lint", "hygiene", "gaming", "tests"]}})
    start, started = time.perf_counter(), cpu()
    result = review(opened(case["repo"]), case["patch"], "fix the failing test", None, config)
    rows.append({"wall": time.perf_counter() - start, "cpu": cpu() - started, "verdict": result.verdict,
                 "findings": sorted(f"{f.check}:{f.severity}:{f.file}:{f.line}" for f in result.findings)})
print(json.dumps(rows))
'''


def corpus_cases(work: Path) -> Path:
    """The quick corpus of benchmarks/review.py (seeded bugs, gaming patches and good patches of two PyPI
    projects, with their tests), as a JSON file the children read."""
    from review import default_cache
    from review_corpus import QUICK, build

    cases, repos = build(default_cache(), list(QUICK), 2, 7)
    path = work / "corpus.json"
    path.write_text(json.dumps([{"repo": str(repos[c.package]), "base": c.base, "patch": c.patch, "kind": c.kind}
                                for c in cases]))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds (default 5)")
    parser.add_argument("--rounds", type=int, default=None, help="timing rounds of each side")
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--no-timing", action="store_true", help="the shape and the walk only")
    parser.add_argument("--corpus-rounds", type=int, default=1,
                        help="rounds of each side over benchmarks/review.py's quick corpus (0: none)")
    parser.add_argument("--write-section", action="store_true")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory() as tmp:
        sides = compiled_sides(args.base, Path(tmp))
        shapes = {name: shape(side) for name, side in sides.items()}
        walks = {name: measure(side, WALK) for name, side in sides.items()}
        samples: dict[str, dict[str, list[float]]] = {"base": {}, "this": {}}
        for _ in range(0 if args.no_timing else rounds):
            for name, side in sides.items():
                for key, value in measure(side, REVIEW).items():
                    samples[name].setdefault(key, []).append(value)
        corpus: dict[str, list[list[dict]]] = {"base": [], "this": []}
        cases = corpus_cases(Path(tmp)) if args.corpus_rounds and not args.no_timing else None
        for _ in range(args.corpus_rounds if cases else 0):
            for name, side in sides.items():
                corpus[name].append(measure(side, CORPUS, str(cases), timeout=7200))
    text = report(args, started, load, rounds, shapes, walks, samples, corpus)
    print(text)
    if args.write_section:
        SECTION.write_text(text, encoding="utf-8")
    return 0


def report(args: argparse.Namespace, started: str, load: tuple[float, float, float], rounds: int, shapes: dict,
           walks: dict, samples: dict, corpus: dict[str, list[list[dict]]]) -> str:
    command = "python benchmarks/repo.py" + (" --quick" if args.quick else "") + (
        " --no-timing" if args.no_timing else "") + (f" --base {args.base}" if args.base != BASE else "")
    lines = [f"## The Repo object (issue 48, item 5): against {args.base}", "",
             f"`{command}`, {started}, {os.cpu_count()} cores, load average at the start "
             f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.", "",
             "| measurement | before | after |", "| --- | ---: | ---: |"]
    for key in shapes["base"]:
        lines.append(f"| {key} (review, vcs{', finish, /commit' if key == 'git call sites' else ''}) | "
                     f"{shapes['base'][key]} | {shapes['this'][key]} |")
    for key in ("functions", "hops", "returns", "run-time hops", "run-time returns", "git processes"):
        lines.append(f"| walk review -> commit: {key} | {walks['base'][key]} | {walks['this'][key]} |")
    lines += ["", "The walk before: " + " > ".join(walks["base"]["walk"]), "",
              "The walk after: " + " > ".join(walks["this"]["walk"])]
    if samples["base"]:
        lines += ["", f"Timing, {rounds} rounds of each side alternated, medians:", "",
                  "| measurement | before | after | ratio |", "| --- | ---: | ---: | ---: |"]
        for key in samples["base"]:
            b, t = statistics.median(samples["base"][key]), statistics.median(samples["this"][key])
            lines.append(f"| {key} | {b:.2f} | {t:.2f} | {t / b:.3f} |")
        lines += ["", "Per round: " + json.dumps({side: {k: [round(x, 2) for x in v] for k, v in d.items()}
                                                   for side, d in samples.items()})]
    if corpus["base"]:
        n = len(corpus["base"][0])
        same = all(b["verdict"] == t["verdict"] and b["findings"] == t["findings"]
                   for rb, rt in zip(corpus["base"], corpus["this"], strict=True) for b, t in zip(rb, rt, strict=True))
        lines += ["", f"benchmarks/review.py's quick corpus ({n} patches: seeded bugs, gaming and good patches of two "
                  f"PyPI projects, every model-free stage with the tests), {len(corpus['base'])} round(s) of each "
                  "side; the sum over the patches, the median of the rounds:", "",
                  "| measurement | before | after | ratio |", "| --- | ---: | ---: | ---: |"]
        for key in ("wall", "cpu"):
            b = statistics.median(sum(r[key] for r in rnd) for rnd in corpus["base"])
            t = statistics.median(sum(r[key] for r in rnd) for rnd in corpus["this"])
            lines.append(f"| {n} reviews, {key} (s) | {b:.1f} | {t:.1f} | {t / b:.3f} |")
        paired = statistics.median(t["wall"] / b["wall"] for rb, rt in zip(corpus["base"], corpus["this"], strict=True)
                                   for b, t in zip(rb, rt, strict=True))
        lines += ["", f"The median of the patches' own ratios (after/before, wall, each patch against itself in the "
                  f"same round): {paired:.3f}. Verdicts and findings the same on both sides for every patch: "
                  f"{'yes' if same else 'NO'}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
