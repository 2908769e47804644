"""Evidence on real runs with known outcomes (issue 49): does `verified` predict a resolved instance?

Each labelled mini-swe-agent run (deepseek-chat on SWE-bench Lite, the public artefacts of mini-swe-agent's pull
request 816: the eight copied into the shared data's `trajectories/`, and the rest of the same runs from a fetched
mirror of the repository, labelled by the run's `resolved_ids`) is replayed through coder.evidence.replay: the
record a session would end with, computed by the tracker sessions use from the recorded commands and outputs.
Runs listed in the shared data's heldout-exclude.txt are skipped before their files are read.

Reported per split (dev: the runs the rules were looked at with; test_1-100: not looked at while writing them):
runs, base rate (resolved share), and for `verified` as a prediction of "resolved": precision, recall, lift over the
base rate; the resolved share of failed and unverified; unsupported claims (a claim of success in the closing
messages, the last three of the agent, while the record is not verified) and how often those runs were resolved.
Two variants show what the definitions do: any passing run after the last change (coverage ignored), and test
runners only (scripts the model wrote not counted). Also: the cost of the tree probe after a shell command.

Usage: python benchmarks/evidence.py [--quick] [--data DIR] [--mirror GIT_DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coder.evidence.claims import find_claim  # noqa: E402
from coder.evidence.probe import TreeProbe  # noqa: E402
from coder.evidence.record import VERIFIED, Evidence  # noqa: E402
from coder.evidence.replay import replay_evidence  # noqa: E402
from coder.vcs.repo import Repo  # noqa: E402


def _beside(*parts: str) -> Path:
    """`parts` under the nearest folder above the checkout that has them (a worktree sits one level deeper)."""
    for above in ROOT.parents:
        if (above.joinpath(*parts)).exists():
            return above.joinpath(*parts)
    return ROOT.parent.joinpath(*parts)


DEFAULT_DATA = _beside("shared", "data")
DEFAULT_MIRROR = _beside(".mirror", "SWE-agent+mini-swe-agent", "repo")
FIXTURE = ROOT / "tests" / "evidence" / "data" / "runs"
PR_REF = "refs/pull/816/head"
LABELLED = ("deepseek_chat_dev", "deepseek_chat_dev_rerun", "deepseek_lite_dev_noparallel", "deepseek_chat_test_1-100")
HELD_FOR_CHECK = "deepseek_chat_test_1-100"  # not looked at while the rules were written


@dataclass
class Replayed:
    run: str  # RUN/INSTANCE
    resolved: bool
    record: Evidence | None
    closing_claim: str

    @property
    def split(self) -> str:
        return "test_1-100" if self.run.startswith(HELD_FOR_CHECK) else "dev"

    def state(self, variant: str = "") -> str:
        if self.record is None:
            return "none"
        if not variant:
            return self.record.state
        runs = [r for r in self.record.runs if variant == "any" or (r.covers and r.kind != "script")]
        if any(r.outcome == "failed" for r in runs):
            return "failed"
        return VERIFIED if any(r.outcome == "passed" for r in runs) else "unverified"


def git(mirror: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], capture_output=True, text=True, check=False)


def excluded(data: Path) -> set[str]:
    path = data / "heldout-exclude.txt"
    if not path.is_file():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def shared_runs(data: Path, skip: set[str]) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    index = data / "trajectories" / "index.jsonl"
    if not index.is_file():
        return
    for line in index.read_text().splitlines():
        row = json.loads(line)
        name = f"{row.get('run')}/{row.get('instance_id')}"
        if row.get("resolved") is None or not row["file"].endswith(".traj.json") or name in skip:
            continue
        yield name, bool(row["resolved"]), json.loads((data / "trajectories" / row["file"]).read_text())


def mirror_runs(mirror: Path, skip: set[str], seen: set[str], missing: list[str],
                runs: tuple[str, ...] = LABELLED) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    commit = git(mirror, "rev-parse", PR_REF).stdout.strip()
    if not commit:
        return
    for run in runs:
        labels = git(mirror, "show", f"{commit}:deepseek__deepseek-chat.{run}.json")
        if labels.returncode != 0:
            continue
        report = json.loads(labels.stdout)
        resolved = set(report.get("resolved_ids") or [])
        for instance in sorted(report.get("submitted_ids") or report.get("completed_ids") or []):
            name = f"{run}/{instance}"
            if name in skip or name in seen:  # held out: not even read
                continue
            shown = git(mirror, "show", f"{commit}:output/{run}/{instance}/{instance}.traj.json")
            if shown.returncode != 0:
                missing.append(name)  # a blob the mirror does not hold (large files are left out of snapshots)
                continue
            yield name, instance in resolved, json.loads(shown.stdout)


def fixture_runs() -> Iterator[tuple[str, bool, dict[str, Any]]]:
    for path in sorted(FIXTURE.glob("*.traj.json")):
        data = json.loads(path.read_text())
        yield f"fixture/{path.stem.removesuffix('.traj')}", bool(data["resolved"]), data


def replay(name: str, resolved: bool, data: dict[str, Any]) -> Replayed:
    messages = data.get("messages") or []
    submission = str((data.get("info") or {}).get("submission") or "")
    record = replay_evidence(messages, submission)
    closing = [m.get("content") for m in messages if m.get("role") == "assistant"][-3:]
    claim = next((c for c in (find_claim(t if isinstance(t, str) else "") for t in reversed(closing)) if c), "")
    return Replayed(name, resolved, record, claim)


def table(rows: list[Replayed], variant: str = "") -> dict[str, Any]:
    n = len(rows)
    resolved = sum(r.resolved for r in rows)
    verified = [r for r in rows if r.state(variant) == VERIFIED]
    hits = sum(r.resolved for r in verified)
    unsupported = [r for r in rows if r.closing_claim and r.state(variant) != VERIFIED]
    by_state = {s: [r for r in rows if r.state(variant) == s] for s in ("verified", "failed", "unverified", "none")}
    base = resolved / n if n else 0.0
    precision = hits / len(verified) if verified else 0.0
    return {"runs": n, "resolved": resolved, "base_rate": base, "verified": len(verified), "precision": precision,
            "recall": hits / resolved if resolved else 0.0, "lift": precision / base if base else 0.0,
            "states": {s: (len(v), sum(r.resolved for r in v)) for s, v in by_state.items()},
            "claims": sum(bool(r.closing_claim) for r in rows), "unsupported": len(unsupported),
            "unsupported_resolved": sum(r.resolved for r in unsupported)}


def probe_cost(files: int, rounds: int) -> dict[str, float]:
    """Seconds per snapshot on a fresh repository of `files` files, median of `rounds`, the probe and its peers
    alternated in each round: the probe with nothing changed and with one file changed; the per-call private index
    the checkpoints use (`Repo.worktree_tree`, one file changed); `git status --porcelain` (one file changed: it
    compares with HEAD and the index, which the model's own `git add` and `stash` move, so it cannot stand in)."""
    with tempfile.TemporaryDirectory(prefix="coder-probe-") as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        for i in range(files):
            folder = root / f"pkg{i % 50}"
            folder.mkdir(exist_ok=True)
            (folder / f"mod{i}.py").write_text(f"VALUE = {i}\n")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
                       check=True)
        repo = Repo.open(root)
        probe = TreeProbe(repo)
        probe.changes()
        times: dict[str, list[float]] = {"still": [], "changed": [], "worktree_tree": [], "git status": []}

        def timed(name: str, call: Any) -> Any:
            started = time.perf_counter()
            result = call()
            times[name].append(time.perf_counter() - started)
            return result

        for k in range(rounds):
            timed("still", probe.changes)
            (root / "pkg0" / "mod0.py").write_text(f"VALUE = changed {k}\n")
            assert timed("changed", probe.changes) == ["pkg0/mod0.py"]
            timed("worktree_tree", repo.worktree_tree)
            timed("git status", lambda: subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                                                       check=True, capture_output=True))
        return {name: sorted(v)[len(v) // 2] for name, v in times.items()}


def git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


def load_avg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the shared data's eight runs only, and a smaller probe")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "evidence.md")
    ap.add_argument("--split", choices=("dev", "all"), default="all",
                    help="dev: replay only the runs the rules are written with (while changing them)")
    args = ap.parse_args()
    started = time.monotonic()
    skip = excluded(args.data)
    sources = list(shared_runs(args.data, skip))
    missing: list[str] = []
    if not args.quick and args.mirror.is_dir():
        runs = tuple(r for r in LABELLED if args.split == "all" or r != HELD_FOR_CHECK)
        sources += list(mirror_runs(args.mirror, skip, {n for n, _, _ in sources}, missing, runs))
    origin = "shared data" + ("" if args.quick else " + mirror")
    if not sources:
        sources, origin = list(fixture_runs()), "the committed fixture: no shared data here"
    rows = [replay(*s) for s in sources]
    elapsed = time.monotonic() - started
    cost = probe_cost(2_000 if args.quick else 20_000, 3 if args.quick else 7)
    splits = {"dev": [r for r in rows if r.split == "dev"], "test_1-100": [r for r in rows if r.split != "dev"],
              "all": rows}
    out = ["## Evidence on real runs (issue 49)", "",
           f"Command: `python benchmarks/evidence.py{' --quick' if args.quick else ''}`  ",
           f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} cores, Python "
           f"{platform.python_version()}, git {git_version()}; load average {load_avg()} (shared with other work)  ",
           f"Data: {len(rows)} labelled deepseek-chat runs on SWE-bench Lite ({origin}); "
           f"{len(skip)} held-out runs skipped unread; {len(missing)} not in the mirror; replayed in {elapsed:.1f} s",
           "", "`verified` as a prediction of a resolved instance (dev: the runs the rules were written with; "
           "test_1-100: not looked at while writing them):", "",
           "| split | variant | runs | base rate | verified | precision | recall | lift | resolved when failed | "
           "resolved when unverified | closing claims | unsupported | of those resolved |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for split, chosen in splits.items():
        if not chosen:
            continue
        for variant, label in (("", "as shipped"), ("any", "any passing run"), ("tests", "test runners only")):
            t = table(chosen, variant)
            failed, unverified = t["states"]["failed"], t["states"]["unverified"]
            out.append(f"| {split} | {label} | {t['runs']} | {t['base_rate']:.0%} | {t['verified']} | "
                       f"**{t['precision']:.0%}** | {t['recall']:.0%} | {t['lift']:.2f}x | "
                       f"{failed[1]}/{failed[0]} | {unverified[1]}/{unverified[0]} | {t['claims']} | "
                       f"{t['unsupported']} ({t['unsupported'] / max(t['runs'], 1):.0%}) | "
                       f"{t['unsupported_resolved']}/{t['unsupported']} |")
    out += ["", f"Tree probe after a shell command (`TreeProbe.changes`, median of {3 if args.quick else 7}, "
            f"alternated with its peers in each round): {2_000 if args.quick else 20_000:,} files, nothing changed "
            f"{cost['still'] * 1000:.0f} ms, one file changed {cost['changed'] * 1000:.0f} ms; peers, one file "
            f"changed: a snapshot through a new private index each time (`Repo.worktree_tree`, the checkpoints') "
            f"{cost['worktree_tree'] * 1000:.0f} ms, `git status --porcelain` {cost['git status'] * 1000:.0f} ms.",
            ""]
    if missing:
        out += [f"Not in the mirror (skipped): {', '.join(missing)}.", ""]
    args.out.write_text("\n".join(out), encoding="utf-8")
    print("\n".join(out))


if __name__ == "__main__":
    main()
