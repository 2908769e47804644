"""Benchmark of the code index (issue 10): ours against Aider's RepoMap and universal-ctags.

    python benchmarks/codeintel.py django            # the Django 5.1.4 sdist from PyPI
    python benchmarks/codeintel.py mixed             # Rust std + Ruby stdlib + rxjs (TypeScript) + bash-completion
    python benchmarks/codeintel.py PATH [--quick]    # any folder; --quick: 300 files, fewer samples, Aider cold only

One run reports: the tree-sitter parse floor (all indexable files, 1 and 2 processes), our cold build, a warm
start in a new process, the update after one changed file, p50/p95 of definition and reference queries, repo
map times (first, cached in a new process, after a change), the accuracy of Python definitions against `ast`,
and side by side Aider's RepoMap (cold, warm from its disk cache, one touched file; from `aider-chat` in its
own venv, offline) and `ctags -R`. Every corpus is copied to a scratch folder first (Aider writes its cache
into the repository, and we modify a file).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_CORPORA = Path("/work/peers/corpora")
DEFAULT_PEER_VENVS = (Path("/work/peers/aider"), Path("/work/peers/aider-codeintel"))

AIDER_SCRIPT = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from aider.io import InputOutput
from aider.repomap import RepoMap
root, tokens, counter = sys.argv[1], int(sys.argv[2]), sys.argv[4]
files = [str(Path(root) / line) for line in Path(sys.argv[3]).read_text().splitlines() if line]
t_setup = time.perf_counter()
if counter.startswith("model:"):  # as a user runs it: the model's own tokenizer (litellm, offline)
    from aider.models import Model
    model = Model(counter[6:])
else:
    class Chars:  # a 4-chars-per-token estimate: cheaper than any tokenizer
        name = "chars"
        def token_count(self, text):
            return len(text) // 4
    model = Chars()
setup = time.perf_counter() - t_setup
io = InputOutput(yes=True, pretty=False)
rm = RepoMap(map_tokens=tokens, root=root, main_model=model, io=io, refresh="auto")
t1 = time.perf_counter()
text = rm.get_repo_map([], files) or ""
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0 - setup, "model_setup": setup, "map": t2 - t1, "total": t2 - t0 - setup,
                  "chars": len(text)}))
"""
#: Aider's token counter by default: that of the model a user would run it with (offline, from litellm's files)
AIDER_MODEL = "claude-sonnet-4-5"


# -- corpora ------------------------------------------------------------------------------------------------
def ensure_corpus(name: str, corpora: Path) -> Path:
    corpora.mkdir(parents=True, exist_ok=True)
    if name == "django":
        folder = corpora / "Django-5.1.4"
        if not folder.is_dir():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            "django==5.1.4", "-d", str(corpora)], check=True)
            with tarfile.open(corpora / "Django-5.1.4.tar.gz") as tar:
                tar.extractall(corpora, filter="data")
        return folder
    if name == "mixed":
        folder = corpora / "mixed"
        if not folder.is_dir():
            _build_mixed(corpora, folder)
        return folder
    path = Path(name)
    if not path.is_dir():
        raise SystemExit(f"corpus {name!r}: not 'django', 'mixed' or a folder")
    return path


def _build_mixed(corpora: Path, folder: Path) -> None:
    """Rust std library + Ruby stdlib + bash-completion (Debian packages) + rxjs sources (npm)."""
    debs, extract = corpora / "debs", corpora / "debs-x"
    debs.mkdir(exist_ok=True)
    subprocess.run(["apt-get", "download", "rust-src", "libruby3.1", "bash-completion"], cwd=debs, check=True)
    for deb in debs.glob("*.deb"):
        subprocess.run(["dpkg", "-x", str(deb), str(extract)], check=True)
    subprocess.run(["npm", "pack", "rxjs@7.8.1", "--silent"], cwd=corpora, check=True)
    with tarfile.open(corpora / "rxjs-7.8.1.tgz") as tar:
        tar.extractall(corpora / "rx", filter="data")
    folder.mkdir()
    shutil.copytree(next((extract / "usr/src").glob("rustc-*")) / "library", folder / "rust-library")
    shutil.copytree(extract / "usr/lib/ruby/3.1.0", folder / "ruby-stdlib")
    shutil.copytree(extract / "usr/share/bash-completion", folder / "bash-completion")
    shutil.copytree(corpora / "rx/package/src", folder / "rxjs-src")
    shutil.rmtree(extract, ignore_errors=True)


def work_copy(corpus: Path, scratch: Path, quick: bool) -> tuple[Path, list[str], list[str]]:
    """A git repository of the whole corpus, as a user's checkout: (root, our indexable files, tracked files).

    Aider gets every tracked file, as its coder passes them (`get_all_abs_files`); it picks what it can parse."""
    from coder.codeintel.files import list_files

    dest = scratch / corpus.name
    if quick:
        files = list_files(corpus).files
        files = files[:: max(1, len(files) // 300)][:300]
        for rel in files:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(corpus / rel, dest / rel)
    else:
        shutil.copytree(corpus, dest, symlinks=True)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    # no `git gc --auto` in the background (6,800 loose objects trigger one) while the timings run
    subprocess.run(["git", "config", "gc.auto", "0"], cwd=dest, check=True)
    subprocess.run(["git", "config", "maintenance.auto", "false"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "corpus"], cwd=dest, check=True)
    tracked = subprocess.run(["git", "ls-files"], cwd=dest, capture_output=True, text=True, check=True).stdout
    tracked = tracked.split("\n")
    return dest, list_files(dest).files, [t for t in tracked if t]


# -- measurements of ours, each in a fresh process --------------------------------------------------------------
def child(mode: str, root: str, extra: str) -> None:
    """Run inside a new process (`--_child`); prints one JSON object."""
    t0 = time.perf_counter()
    from coder.codeintel.index import CodeIndex

    index = CodeIndex.open(Path(root))
    stats = index.refresh()
    t1 = time.perf_counter()
    out: dict = {"open_refresh": t1 - t0, "parsed": stats.parsed, "files": stats.files,
                 "refresh_cpu": cpu_seconds()}  # this process and its parse workers, before any query
    if mode == "warm":
        names = json.loads(extra)
        for kind, fn in (("definition", index.definitions), ("references", index.references)):
            times = []
            for name in names:
                s = time.perf_counter()
                fn(name)
                times.append(time.perf_counter() - s)
            times.sort()
            out[kind] = {"p50": statistics.median(times), "p95": times[int(len(times) * 0.95) - 1]}
        s, c = time.perf_counter(), time.process_time()
        index.repo_map(1024)
        out["map_cached"], out["map_cached_cpu"] = time.perf_counter() - s, time.process_time() - c
        target = Path(root) / index._query(
            "SELECT path FROM files WHERE status='ok' ORDER BY size DESC, path LIMIT 1 OFFSET 20")[0][0]
        original = target.read_bytes()
        try:
            target.write_bytes(original + b"\n")
            s, c = time.perf_counter(), time.process_time()
            upd = index.refresh()
            out["one_file_update"], out["one_file_update_cpu"] = time.perf_counter() - s, time.process_time() - c
            out["one_file_parsed"] = upd.parsed
            target.write_bytes(original + b"\n\n")
            s = time.perf_counter()
            index.refresh(only=[str(target.relative_to(root))])  # what an edit tool that names the file costs
            out["one_file_targeted"] = time.perf_counter() - s
            s, c = time.perf_counter(), time.process_time()
            index.repo_map(1024)
            out["map_after_change"], out["map_after_change_cpu"] = time.perf_counter() - s, time.process_time() - c
            # an edit that changes the reference graph (a new name used): the ranking is recomputed
            target.write_bytes(original + b"\nbench_probe_name\n")
            index.refresh()
            s, c = time.perf_counter(), time.process_time()
            index.repo_map(1024)
            out["map_after_graph_change"] = time.perf_counter() - s
            out["map_after_graph_change_cpu"] = time.process_time() - c
        finally:
            target.write_bytes(original)
    elif mode == "cold":
        s, c = time.perf_counter(), time.process_time()
        index.repo_map(1024, refresh_first=False)  # as `coder map` does: it has just refreshed
        out["map_first"], out["map_first_cpu"] = time.perf_counter() - s, time.process_time() - c
        rows = index._query("SELECT DISTINCT short FROM symbols ORDER BY short")
        out["names"] = [r[0] for r in rows]
    print(json.dumps(out))


def cpu_seconds() -> float:
    """CPU time of this process and its waited-for descendants: robust when other work shares the cores."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_child(mode: str, root: Path, cache: Path, extra: str = "") -> tuple[dict, float]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    start, cpu = time.perf_counter(), cpu_seconds()
    proc = subprocess.run([sys.executable, __file__, "--_child", mode, str(root), extra], env=env,
                          capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout.splitlines()[-1])
    data["cpu"] = cpu_seconds() - cpu
    return data, time.perf_counter() - start


def cli_wall(root: Path, cache: Path) -> float:
    """Wall time of the whole `coder index` command (interpreter start, imports, refresh, exit)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "coder", "index"], cwd=root, env=env, capture_output=True, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def parse_floor(root: Path, files: list[str], procs: int) -> tuple[float, float]:
    import multiprocessing

    from coder.codeintel.languages import language_name

    # regular files only, as the index (a corpus may hold symlinks, some dangling)
    items = [(str(root / f), language_name(f)) for f in files
             if language_name(f) and not (root / f).is_symlink() and (root / f).is_file()]
    start, cpu = time.perf_counter(), cpu_seconds()
    if procs == 1:
        _parse_chunk(items)
    else:
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            pool.map(_parse_chunk, [items[i::procs] for i in range(procs)])
    return time.perf_counter() - start, cpu_seconds() - cpu


def _parse_chunk(items: list[tuple[str, str]]) -> int:
    from coder.codeintel.languages import parser

    parsers: dict = {}
    for path, lang in items:
        p = parsers.get(lang) or parsers.setdefault(lang, parser(lang))
        with open(path, "rb") as fh:
            data = fh.read()
        if len(data) <= 1_000_000:
            p.parse(data)
    return len(items)


def python_accuracy(root: Path, files: list[str]) -> dict | None:
    from coder.codeintel.outline import outline_source

    ours, theirs = set(), set()
    for rel in files:
        if not rel.endswith(".py"):
            continue
        data = (root / rel).read_bytes()
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                theirs.add((rel, node.name, node.lineno))
        for sym in outline_source(rel, data):
            if sym.kind in ("class", "function", "method"):
                ours.add((rel, sym.name.rsplit(".", 1)[-1], sym.line))
    if not theirs:
        return None
    both = len(ours & theirs)
    return {"ast_definitions": len(theirs), "recall": both / len(theirs), "precision": both / max(1, len(ours))}


# -- peers --------------------------------------------------------------------------------------------------
def find_aider(explicit: str | None) -> Path | None:
    for venv in ([Path(explicit)] if explicit else list(DEFAULT_PEER_VENVS)):
        py = venv / "bin" / "python"
        probe = [str(py), "-c", "import aider.repomap"]
        if py.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return py
    return None


def aider_runs(py: Path, root: Path, files: list[str], tokens: int, timeout: float, quick: bool,
               counter: str = "model:" + AIDER_MODEL,
               steps_wanted: tuple[str, ...] = ("cold", "warm", "touched")) -> dict:
    """Aider's RepoMap in a new process per step: cold (no cache), warm (its disk cache), one touched file."""
    listing = root.parent / "aider-files.txt"
    listing.write_text("\n".join(files))
    script = root.parent / "aider_map.py"
    script.write_text(AIDER_SCRIPT)
    shutil.rmtree(root / ".aider.tags.cache.v4", ignore_errors=True)
    home = root.parent / "aider-home"  # Aider caches model data under ~/.aider: never the real home
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "AIDER_ANALYTICS": "false", "HF_HUB_OFFLINE": "1",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    results: dict = {"counter": counter}
    steps = [(step, touch) for step, touch in [("cold", None), ("warm", None), ("touched", files[len(files) // 2])]
             if step in steps_wanted]
    for step, touch in steps[:1] if quick else steps:
        if touch:
            os.utime(root / touch)
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            proc = subprocess.run([str(py), str(script), str(root), str(tokens), str(listing), counter], cwd=root,
                                  env=env, capture_output=True, text=True, timeout=timeout, check=False)
            wall = time.perf_counter() - start
            data = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
            results[step] = {"wall": wall, "cpu": cpu_seconds() - cpu, **data} if data else \
                {"error": proc.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            results[step] = {"error": f"did not finish in {timeout:.0f} s"}
    return results


AIDER_CLI_FLAGS = ["--model", AIDER_MODEL, "--show-repo-map", "--map-multiplier-no-files", "1", "--no-check-update",
                   "--analytics-disable", "--no-show-model-warnings", "--no-pretty", "--no-fancy-input",
                   "--no-gitignore", "--no-show-release-notes", "--yes-always"]


def cli_runs(py: Path | None, root: Path, scratch: Path, tokens: int, timeout: float) -> dict:
    """Each tool's own command, as a user runs it, whole process, cold then warm: `coder map --tokens N` and
    `aider --show-repo-map --map-tokens N` (with no chat files Aider would double the budget; not here)."""
    runs: dict = {}
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "cli-cache"), "PYTHONPATH": str(REPO)}
    for step in ("cold", "warm"):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "coder", "map", "--tokens", str(tokens)], cwd=root, env=env,
                             capture_output=True, text=True, check=True).stdout
        runs[f"coder_{step}"] = {"wall": time.perf_counter() - start, "chars": len(out)}
    aider = py.parent / "aider" if py else None
    if aider is None or not aider.exists():
        return runs
    shutil.rmtree(root / ".aider.tags.cache.v4", ignore_errors=True)
    home = scratch / "aider-cli-home"
    home.mkdir(exist_ok=True)
    aenv = {**os.environ, "HOME": str(home), "AIDER_ANALYTICS": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for step in ("cold", "warm"):
        start = time.perf_counter()
        proc = subprocess.run([str(aider), *AIDER_CLI_FLAGS, "--map-tokens", str(tokens)], cwd=root, env=aenv,
                              capture_output=True, text=True, timeout=timeout, check=False)
        runs[f"aider_{step}"] = {"wall": time.perf_counter() - start, "chars": len(proc.stdout)} \
            if proc.returncode == 0 else {"error": proc.stderr.strip()[-300:]}
    return runs


def ctags_run(root: Path) -> dict:
    exe = shutil.which("ctags")
    if not exe:
        return {"error": "universal-ctags not installed (apt-get install universal-ctags)"}
    out = root.parent / "tags"
    start = time.perf_counter()
    subprocess.run([exe, "-R", "-f", str(out), "."], cwd=root, capture_output=True, check=False)
    wall = time.perf_counter() - start
    tags = sum(1 for line in out.open(errors="replace") if not line.startswith("!_")) if out.exists() else 0
    return {"wall": wall, "tags": tags}


# -- report -------------------------------------------------------------------------------------------------
def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--_child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", help="django, mixed, or a folder")
    ap.add_argument("--quick", action="store_true", help="300 files, 50 query samples, Aider cold only")
    ap.add_argument("--corpora-dir", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--peer-venv", help="venv with aider-chat (default: /work/peers/aider, then aider-codeintel)")
    ap.add_argument("--aider-timeout", type=float, default=900.0)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--json", type=Path, help="also write the raw figures here")
    args = ap.parse_args()

    corpus = ensure_corpus(args.corpus, args.corpora_dir)
    scratch = Path(tempfile.mkdtemp(prefix="codeintel-bench-"))
    try:
        root, files, tracked = work_copy(corpus, scratch, args.quick)
        print(f"corpus {corpus} -> {root}: {len(files)} indexable of {len(tracked)} files", file=sys.stderr)
        res: dict = {"corpus": str(corpus), "files": len(files), "tracked": len(tracked), "quick": args.quick}
        res["parse_floor_1proc"], res["parse_floor_cpu"] = parse_floor(root, files, 1)
        res["parse_floor_2proc"], _cpu = parse_floor(root, files, 2)
        cache = scratch / "cache"
        cold, cold_wall = run_child("cold", root, cache)
        res["cold"] = {"in_process": cold["open_refresh"], "process_wall": cold_wall, "map_first": cold["map_first"],
                       "map_first_cpu": cold["map_first_cpu"],
                       "parsed": cold["parsed"], "cpu": cold["refresh_cpu"]}
        names = sorted(cold.pop("names"))
        sample = random.Random(10).sample(names, min(len(names), 50 if args.quick else 300))
        warm, _wall = run_child("warm", root, cache, json.dumps(sample))
        res["warm"] = {"in_process": warm["open_refresh"], "process_wall": cli_wall(root, cache),
                       "parsed": warm["parsed"]}
        for key in ("definition", "references", "map_cached", "one_file_update", "one_file_parsed", "one_file_targeted",
                    "map_after_change", "map_cached_cpu", "one_file_update_cpu", "map_after_change_cpu",
                    "map_after_graph_change", "map_after_graph_change_cpu"):
            res[key] = warm[key]
        res["accuracy_python"] = python_accuracy(root, files)
        res["ctags"] = ctags_run(root)
        py = find_aider(args.peer_venv)
        if py:
            res["aider"] = aider_runs(py, root, tracked, args.tokens, args.aider_timeout, args.quick)
            # the protocol of earlier runs, for comparison: only our indexable files, a 4-chars-per-token counter
            res["aider_lean"] = aider_runs(py, root, files, args.tokens, args.aider_timeout, args.quick,
                                           counter="chars", steps_wanted=("cold",))
            res["cli"] = cli_runs(py, root, scratch, args.tokens, args.aider_timeout)
        else:
            res["cli"] = cli_runs(None, root, scratch, args.tokens, args.aider_timeout)
            res["aider"] = {"error": "aider-chat not found (python -m venv /work/peers/aider && "
                                     "/work/peers/aider/bin/pip install aider-chat), or pass --peer-venv"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(render(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


def _s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 1e6:.0f} µs" if x < 0.001 else (f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s")


def _ratio(peer: float | None, ours: float) -> str:
    return f"{peer / ours:.1f}x" if peer and ours else "n/a"


def map_comparison(r: dict) -> list[tuple[str, str, str]]:
    """The repo map against Aider's, step by step: ours in process vs Aider's `get_repo_map` call (neither
    counts interpreter start or imports), then whole processes (Aider's without its model set-up)."""
    a, lean = r.get("aider", {}), r.get("aider_lean", {})
    cold_ours = r["cold"]["in_process"] + r["cold"]["map_first"]
    warm_ours = r["warm"]["in_process"] + r["map_cached"]
    touched_ours = r["one_file_update"] + r["map_after_change"]
    rows = []
    for label, ours, step, peer in (("cold: build + first map", cold_ours, "cold", a),
                                    ("warm, new process: re-check + cached map", warm_ours, "warm", a),
                                    ("one touched file: re-check + map", touched_ours, "touched", a),
                                    ("cold, Aider given only our indexable files, 4-chars counter", cold_ours, "cold",
                                     lean)):
        theirs = peer.get(step, {}).get("map") if isinstance(peer.get(step), dict) else None
        rows.append((f"repo map, {label}", _s(ours),
                     f"Aider {_s(theirs)}: {_ratio(theirs, ours)}" if theirs else _aider(peer, step)))
    cli = r.get("cli", {})
    for step in ("cold", "warm"):
        ours, theirs = cli.get(f"coder_{step}", {}), cli.get(f"aider_{step}", {})
        if "wall" in ours:
            peer = (f"`aider --show-repo-map` {_s(theirs['wall'])}: {_ratio(theirs['wall'], ours['wall'])}"
                    if "wall" in theirs else theirs.get("error", "n/a"))
            rows.append((f"each tool's own command, whole process, {step}: `coder map`", _s(ours["wall"]), peer))
    cold_aider = a.get("cold", {})
    if "wall" in cold_aider:
        whole = cold_aider["wall"] - cold_aider.get("model_setup", 0.0)
        rows.append(("repo map, cold, whole process (ours: the benchmark's child; Aider: without model set-up)",
                     _s(r["cold"]["process_wall"]), f"Aider {_s(whole)}: {_ratio(whole, r['cold']['process_wall'])}"))
    return rows


def render(r: dict) -> str:
    a = r["aider"]
    rows = [
        ("tree-sitter parse floor: wall 1 / 2 processes (CPU)",
         f"{_s(r['parse_floor_1proc'])} / {_s(r['parse_floor_2proc'])} (CPU {_s(r['parse_floor_cpu'])})", ""),
        ("cold build: in process / whole process (CPU of all processes); in process / 2-process floor",
         f"{_s(r['cold']['in_process'])} / {_s(r['cold']['process_wall'])} (CPU {_s(r['cold']['cpu'])}); "
         f"{r['cold']['in_process'] / r['parse_floor_2proc']:.2f}x", _aider(a, "cold")),
        ("warm start, new process, nothing changed (in process / whole `coder index`, best of 3)",
         f"{_s(r['warm']['in_process'])} / {_s(r['warm']['process_wall'])}", _aider(a, "warm")),
        ("update after one changed file: full re-check (CPU) / only that file",
         f"{_s(r['one_file_update'])} (CPU {_s(r['one_file_update_cpu'])}) / {_s(r['one_file_targeted'])}",
         _aider(a, "touched")),
        ("definition query p50 / p95", f"{_s(r['definition']['p50'])} / {_s(r['definition']['p95'])}", ""),
        ("references query p50 / p95", f"{_s(r['references']['p50'])} / {_s(r['references']['p95'])}", ""),
        ("repo map (1024 tokens), wall (CPU): first / cached, new process",
         (f"{_s(r['cold']['map_first'])} ({_s(r['cold']['map_first_cpu'])}) / {_s(r['map_cached'])} "
         f"({_s(r['map_cached_cpu'])})"), ""),
        ("repo map after an edit, wall (CPU): same graph (re-render) / new graph (re-rank)",
         (f"{_s(r['map_after_change'])} ({_s(r['map_after_change_cpu'])}) / {_s(r['map_after_graph_change'])} "
         f"({_s(r['map_after_graph_change_cpu'])})"), ""),
        *map_comparison(r),
        ("ctags -R", "", f"{_s(r['ctags'].get('wall'))} ({r['ctags'].get('tags', 0)} tags)"
         if "wall" in r["ctags"] else r["ctags"]["error"]),
    ]
    acc = r.get("accuracy_python")
    if acc:
        rows.append(("Python definitions vs ast: recall / precision",
                     f"{acc['recall'] * 100:.2f}% / {acc['precision'] * 100:.2f}% of {acc['ast_definitions']}", ""))
    lines = [f"corpus: {r['corpus']} ({r['files']} indexable of {r.get('tracked', '?')} tracked files"
             f"{', quick' if r['quick'] else ''}; Aider's counter: {a.get('counter', 'n/a')})", "",
             "| measure | coder | peer (Aider RepoMap / ctags) |", "|---|---|---|"]
    lines += [f"| {m} | {ours} | {peer} |" for m, ours, peer in rows]
    return "\n".join(lines)


def _aider(a: dict, step: str) -> str:
    if "error" in a:
        return a["error"]
    if step not in a:
        return "not run (--quick)"
    if "error" in a[step]:
        return "Aider: " + a[step]["error"]
    return f"Aider: {_s(a[step]['wall'])} (map {_s(a[step]['map'])}, CPU {_s(a[step]['cpu'])})"


if __name__ == "__main__":
    sys.exit(main())
