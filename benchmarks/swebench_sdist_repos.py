"""Rebuild SWE-bench repositories from PyPI source distributions, for checking the local evaluator offline.

GitHub is not reachable on the machines where coder's evaluator was written, so the real repositories of a
SWE-bench dataset cannot be cloned. PyPI is reachable: for every instance this script takes the release of the
package closest to the instance (same `version` series, the last one uploaded before the instance's
`created_at`; the base commit lies between two releases), unpacks its sdist into a git repository
`OUT/repos/owner__name` (one commit per release, tagged `sdist-<release>`), and writes `OUT/dataset.jsonl`: the
records with `base_commit` and `environment_setup_commit` pointing at that commit, everything else kept. It then
checks whether the gold `patch` and the `test_patch` apply (git apply --check; else the evaluator's fallbacks,
3-way and `patch --fuzz=5`) and records per instance what could and could not be reconstructed, and why
(`OUT/reconstruction.json`, and a table on stdout). An sdist is not the base commit: files may be missing
(tests are often left out of sdists) or differ; the report says which.

    python benchmarks/swebench_sdist_repos.py /tmp/swe-sdist \
        --dataset /work/shared/data/swebench/swebench_lite_dev.jsonl
    coder swebench eval PREDS --dataset /tmp/swe-sdist/dataset.jsonl --repos-dir /tmp/swe-sdist/repos --output E
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = "/work/shared/data/swebench/swebench_lite_dev.jsonl"
#: PyPI distribution of each SWE-bench repository (the ones of the Lite dev split and a few others).
PYPI_NAME = {
    "sqlfluff/sqlfluff": "sqlfluff", "marshmallow-code/marshmallow": "marshmallow",
    "pvlib/pvlib-python": "pvlib", "pydicom/pydicom": "pydicom", "pylint-dev/astroid": "astroid",
    "pyvista/pyvista": "pyvista", "pallets/flask": "Flask", "psf/requests": "requests",
    "pylint-dev/pylint": "pylint", "pytest-dev/pytest": "pytest", "sympy/sympy": "sympy",
}


@dataclass
class Release:
    name: str
    version: str
    uploaded: str
    url: str
    filename: str


@dataclass
class Outcome:
    instance_id: str
    repo: str
    release: str = ""
    release_uploaded: str = ""
    created_at: str = ""
    release_after_instance: bool = False
    commit: str = ""
    patch_apply: str = ""          # git apply | git apply --3way | patch --fuzz=5 | "" (fails)
    test_patch_apply: str = ""
    reconstructed: bool = False
    test_coverage: float | None = None  # share of the instance's tests found in the release's test files
    problems: list[str] = field(default_factory=list)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "sdist", "GIT_AUTHOR_EMAIL": "sdist@localhost",
           "GIT_COMMITTER_NAME": "sdist", "GIT_COMMITTER_EMAIL": "sdist@localhost"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


def pypi_releases(name: str, cache: Path) -> list[Release]:
    """Every release of `name` that has an sdist, with its upload time (one PyPI JSON request per package)."""
    path = cache / f"pypi_{name}.json"
    if not path.is_file():
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as resp:
            path.write_bytes(resp.read())
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for version, files in data.get("releases", {}).items():
        for f in files:
            if f.get("packagetype") == "sdist" and not f.get("yanked"):
                url = urllib.parse.urljoin(f"https://pypi.org/pypi/{name}/json", f["url"])  # mirrors: relative
                out.append(Release(name, version, f["upload_time_iso_8601"], url, f["filename"]))
                break
    return sorted(out, key=lambda r: r.uploaded)


def _series(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def choose_release(releases: list[Release], series: str, created_at: str) -> tuple[Release | None, bool]:
    """The last release of the instance's version series uploaded before the instance; else the first after it."""
    same = [r for r in releases if _series(r.version) == _series(series) and re.fullmatch(r"[\d.]+", r.version)]
    before = [r for r in same if r.uploaded <= created_at]
    if before:
        return before[-1], False
    if same:
        return same[0], True
    older = [r for r in releases if r.uploaded <= created_at and re.fullmatch(r"[\d.]+", r.version)]
    return (older[-1], False) if older else (None, False)


def fetch_sdist(rel: Release, dest: Path) -> Path:
    """`pip download --no-deps --no-binary :all:`; the file's PyPI URL when pip cannot prepare an old sdist."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / rel.filename
    if target.is_file():
        return target
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                           "-d", str(dest), f"{rel.name}=={rel.version}"],
                          capture_output=True, text=True, timeout=600)
    if target.is_file():
        return target
    with urllib.request.urlopen(rel.url, timeout=120) as resp:  # same file, fetched directly
        target.write_bytes(resp.read())
    if proc.returncode != 0:
        print(f"  note: pip download {rel.name}=={rel.version} failed ({proc.stderr.strip()[-200:]}); "
              "fetched the sdist by its PyPI URL", file=sys.stderr)
    return target


def unpack(archive: Path, into: Path) -> Path:
    """The sdist's top folder (`name-version/`), unpacked under `into`."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else into


def init_repo(repo_dir: Path) -> None:
    if repo_dir.exists():
        shutil.rmtree(repo_dir)
    repo_dir.mkdir(parents=True)
    git(repo_dir, "init", "-q", "-b", "main")


def add_release(repo_dir: Path, rel: Release, sdists: Path) -> str:
    """A commit on `main` whose tree is exactly the release's sdist, tagged `sdist-<release>`; its sha."""
    tag = f"sdist-{rel.version}"
    existing = git(repo_dir, "rev-parse", "-q", "--verify", f"{tag}^{{commit}}", check=False)
    if existing.returncode == 0:
        return existing.stdout.strip()
    archive = fetch_sdist(rel, sdists)
    for child in repo_dir.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        top = unpack(archive, Path(tmp))
        for child in top.iterdir():
            shutil.move(str(child), repo_dir / child.name)
    git(repo_dir, "add", "-A", "-f")
    env_date = {"GIT_AUTHOR_DATE": rel.uploaded, "GIT_COMMITTER_DATE": rel.uploaded}
    subprocess.run(["git", "-c", "user.name=sdist", "-c", "user.email=sdist@localhost", "commit", "-q",
                    "--allow-empty", "-m", f"{rel.name} {rel.version} sdist ({rel.filename})"],
                   cwd=repo_dir, env={**os.environ, **env_date}, check=True, capture_output=True)
    git(repo_dir, "tag", "-f", tag)
    git(repo_dir, "tag", "-f", f"v{rel.version}")  # setuptools_scm / versioneer read the version from a tag
    return git(repo_dir, "rev-parse", "HEAD").stdout.strip()


def neighbours(releases: list[Release], created_at: str, before: int = 3, after: int = 2) -> list[Release]:
    """Final releases around the instance date, nearest first: other bases to try when the first does not fit."""
    final = [r for r in releases if re.fullmatch(r"[\d.]+", r.version)]
    older = [r for r in final if r.uploaded <= created_at][-before:][::-1]
    newer = [r for r in final if r.uploaded > created_at][:after]
    out: list[Release] = []
    for i in range(max(len(older), len(newer))):
        out += older[i:i + 1] + newer[i:i + 1]
    return out


def patch_files(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/.* b/(.*)$", patch, re.MULTILINE)


def try_apply(repo_dir: Path, commit: str, patches: list[str]) -> list[str]:
    """Apply `patches` in order on a scratch worktree at `commit` with the evaluator's fallbacks; the method of
    each ("" from the first that failed on)."""
    methods = (("git apply", ["git", "apply"]), ("git apply --3way", ["git", "apply", "--3way"]),
               ("patch --fuzz=5", ["patch", "--batch", "--fuzz=5", "-p1", "-i"]))
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        git(repo_dir, "worktree", "add", "-q", "--detach", str(ws), commit)
        try:
            for i, text in enumerate(patches):
                pfile = Path(tmp) / f"p{i}.diff"
                pfile.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
                chosen = ""
                for label, cmd in methods:
                    if subprocess.run([*cmd, str(pfile)], cwd=ws, capture_output=True).returncode == 0:
                        chosen = label
                        break
                    git(ws, "reset", "-q", "--hard", check=False)  # back to the last scratch commit
                    git(ws, "clean", "-fdq", check=False)
                if chosen:  # a scratch commit (detached, unreferenced) so the next patch's resets keep this one
                    git(ws, "add", "-A", "-f")
                    git(ws, "-c", "user.name=sdist", "-c", "user.email=sdist@localhost", "commit", "-q",
                        "--allow-empty", "--no-verify", "-m", f"scratch {i}")
                out.append(chosen)
                if not chosen:
                    break
        finally:
            git(repo_dir, "worktree", "remove", "--force", str(ws), check=False)
    return out


def diagnose(repo_dir: Path, commit: str, patch: str) -> list[str]:
    """Why a patch fails: the files it modifies that the sdist lacks, else git apply's first error."""
    tree = set(git(repo_dir, "ls-tree", "-r", "--name-only", commit).stdout.split("\n"))
    news = set(re.findall(r"^diff --git a/.* b/(.*)\nnew file mode", patch, re.MULTILINE))
    missing = [f for f in patch_files(patch) if f not in tree and f not in news]
    if missing:
        return [f"not in the sdist: {', '.join(missing)}"]
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as fh:
        fh.write(patch if patch.endswith("\n") else patch + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        git(repo_dir, "worktree", "add", "-q", "--detach", str(ws), commit)
        proc = git(ws, "apply", "--check", fh.name, check=False)
        git(repo_dir, "worktree", "remove", "--force", str(ws), check=False)
    os.unlink(fh.name)
    return [line for line in proc.stderr.splitlines() if line.startswith("error")][:3]


def _tests(rec: dict, key: str) -> list[str]:
    value = rec.get(key) or []
    return json.loads(value) if isinstance(value, str) else list(value)


def test_coverage(repo_dir: Path, commit: str, rec: dict) -> float:
    """The share of FAIL_TO_PASS and PASS_TO_PASS test functions that exist in the release's test files (or in
    the test patch): a release older than the base commit lacks tests added since, which then "fail"."""
    tests = _tests(rec, "FAIL_TO_PASS") + _tests(rec, "PASS_TO_PASS")
    if not tests:
        return 1.0
    texts = [rec["test_patch"]]
    for path in {t.split("::")[0] for t in tests if "::" in t}:
        texts.append(git(repo_dir, "show", f"{commit}:{path}", check=False).stdout)
    corpus = "\n".join(texts)
    names = [t.split("::")[-1].split("[")[0] for t in tests]
    return sum(bool(re.search(rf"def {re.escape(n)}\b", corpus)) for n in names) / len(names)


NOOP_PATCH = ("diff --git a/coder_noop.txt b/coder_noop.txt\nnew file mode 100644\n--- /dev/null\n"
              "+++ b/coder_noop.txt\n@@ -0,0 +1 @@\n+noop\n")


def write_predictions(out: Path, records: list[dict]) -> None:
    """preds_gold.json (the gold patches: must be resolved), preds_empty.json (must not) and preds_noop.json (a
    patch that changes nothing tested: the tests do run, FAIL_TO_PASS must fail), in the official format."""
    for kind in ("gold", "empty", "noop"):
        preds = {r["instance_id"]: {"instance_id": r["instance_id"], "model_name_or_path": kind,
                                    "model_patch": {"gold": r["patch"], "empty": "", "noop": NOOP_PATCH}[kind]}
                 for r in records}
        (out / f"preds_{kind}.json").write_text(json.dumps(preds, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for everything made here (outside the coder repository)")
    ap.add_argument("--dataset", default=DEFAULT_DATASET)
    ap.add_argument("--instances", nargs="*", help="only these instance ids")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO_ROOT or REPO_ROOT in out.parents:
        ap.error(f"{out} is inside the coder repository; give a folder outside it")
    out.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in Path(args.dataset).read_text(encoding="utf-8").splitlines() if line]
    if args.instances:
        records = [r for r in records if r["instance_id"] in set(args.instances)]
    outcomes: dict[str, Outcome] = {}
    chosen: dict[str, dict[str, Release]] = {}
    for rec in records:
        oc = Outcome(rec["instance_id"], rec["repo"], created_at=rec["created_at"])
        outcomes[oc.instance_id] = oc
        name = PYPI_NAME.get(rec["repo"])
        if name is None:
            oc.problems.append(f"no PyPI distribution known for {rec['repo']}")
            continue
        try:
            rel, after = choose_release(pypi_releases(name, out), rec["version"], rec["created_at"])
        except OSError as exc:
            oc.problems.append(f"PyPI lookup of {name} failed: {exc}")
            continue
        if rel is None:
            oc.problems.append(f"no sdist of {name} for version {rec['version']}")
            continue
        oc.release, oc.release_uploaded, oc.release_after_instance = rel.version, rel.uploaded, after
        chosen.setdefault(rec["repo"], {})[rel.version] = rel
        print(f"{oc.instance_id}: {name} {rel.version}", file=sys.stderr)
    for repo in chosen:
        init_repo(out / "repos" / repo.replace("/", "__"))
    derived = []
    for rec in records:
        oc = outcomes[rec["instance_id"]]
        if not oc.release:
            continue
        name = PYPI_NAME[rec["repo"]]
        releases = pypi_releases(name, out)
        first = chosen[rec["repo"]][oc.release]
        repo_dir = out / "repos" / rec["repo"].replace("/", "__")
        best: tuple[Release, str, list[str]] | None = None
        best_cov = -1.0
        for rel in [first] + [r for r in neighbours(releases, rec["created_at"]) if r.version != first.version]:
            try:
                sha = add_release(repo_dir, rel, out / "sdists")
            except (OSError, subprocess.SubprocessError, tarfile.TarError, zipfile.BadZipFile) as exc:
                oc.problems.append(f"sdist {name} {rel.version} unusable: {exc}")
                continue
            methods = try_apply(repo_dir, sha, [rec["patch"], rec["test_patch"]]) + ["", ""]
            if best is None:
                best = (rel, sha, methods)
            if methods[0] and methods[1] == "git apply":
                coverage = test_coverage(repo_dir, sha, rec)
                if best_cov < 0 or coverage > best_cov:  # the release with most of the instance's tests
                    best, best_cov = (rel, sha, methods), coverage
                if coverage == 1.0:
                    break
                continue
            failing = rec["patch"] if not methods[0] else rec["test_patch"]
            if rel is first and diagnose(repo_dir, sha, failing)[:1] and \
                    diagnose(repo_dir, sha, failing)[0].startswith("not in the sdist"):
                break  # the sdists of this project leave those files out: no other release has them either
        if best is None:
            continue
        rel, sha, methods = best
        oc.test_coverage = round(max(best_cov, 0.0), 3) if best_cov >= 0 else None
        if 0 <= best_cov < 1:
            oc.problems.append(f"{1 - best_cov:.0%} of the FAIL_TO_PASS/PASS_TO_PASS tests are not in this "
                               "release's test files (added after it, or the sdist leaves files out)")
        if rel.version != first.version:
            oc.problems.append(f"{first.version} did not fit; used the neighbouring release {rel.version}")
            oc.release, oc.release_uploaded = rel.version, rel.uploaded
            oc.release_after_instance = rel.uploaded > rec["created_at"]
        oc.commit = sha
        oc.patch_apply, oc.test_patch_apply = methods[0], methods[1]
        if not oc.patch_apply:
            oc.problems.append("gold patch does not apply: " + "; ".join(diagnose(repo_dir, sha, rec["patch"])))
        elif not oc.test_patch_apply:
            oc.problems.append("test patch does not apply: " + "; ".join(diagnose(repo_dir, sha,
                                                                                  rec["test_patch"])))
        if oc.release_after_instance:
            oc.problems.append(f"release {oc.release} was uploaded after the instance")
        if oc.test_patch_apply not in ("", "git apply"):  # the evaluator (as the harness) applies it plainly
            oc.problems.append(f"test patch applies only with {oc.test_patch_apply}")
        oc.reconstructed = bool(oc.patch_apply and oc.test_patch_apply == "git apply")
        derived.append({**rec, "base_commit": sha, "environment_setup_commit": sha,
                        "original_base_commit": rec["base_commit"], "sdist_release": oc.release})
    with open(out / "dataset.jsonl", "w", encoding="utf-8") as fh:
        for rec in derived:
            fh.write(json.dumps(rec) + "\n")
    with open(out / "dataset_applicable.jsonl", "w", encoding="utf-8") as fh:
        for rec in derived:
            if outcomes[rec["instance_id"]].reconstructed:
                fh.write(json.dumps(rec) + "\n")
    write_predictions(out, [r for r in derived if outcomes[r["instance_id"]].reconstructed])
    (out / "reconstruction.json").write_text(json.dumps({k: asdict(v) for k, v in outcomes.items()}, indent=1),
                                             encoding="utf-8")
    print(f"{'instance':38} {'release':9} {'gold patch':16} {'test patch':16} {'tests':6} problems")
    for oc in outcomes.values():
        cov = "-" if oc.test_coverage is None else f"{oc.test_coverage:.0%}"
        print(f"{oc.instance_id:38} {oc.release or '-':9} {oc.patch_apply or 'FAILS':16} "
              f"{oc.test_patch_apply or ('FAILS' if oc.patch_apply else '-'):16} {cov:6} {' | '.join(oc.problems)}")
    ok = sum(o.reconstructed for o in outcomes.values())
    print(f"\n{ok}/{len(outcomes)} instances reconstructed with both patches applying; "
          f"dataset: {out / 'dataset.jsonl'} ({len(derived)} records), applicable only: "
          f"{out / 'dataset_applicable.jsonl'}; repositories: {out / 'repos'}")
    print(f"evaluate with: cd {out} && coder swebench eval preds_gold.json --dataset dataset_applicable.jsonl "
          "--repos-dir repos --output eval_gold   (also preds_empty.json, preds_noop.json)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
