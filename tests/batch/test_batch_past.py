"""Issue 44: the agent sees the repository as it was at the base commit, and nothing more.

A mirror is built for real with everything git keeps of the future: commits after the base on main, a branch,
annotated and lightweight tags, a stash, notes, a commit only the reflog holds, a dangling commit and a loose blob,
a remote-tracking branch, FETCH_HEAD and ORIG_HEAD, packed refs, a commit-graph, a multi-pack index and a
bitmap; the mirror is a shared clone (alternates) of the upstream, and the base has a GitHub submodule whose own
mirror has commits and a tag after the gitlink. Each future object carries the marker; a probe run by the real
bash tool in a scripted `coder swebench run` tries every git command we know for it, and must find none, while
`git log` and `git blame` of the past still work. The same probe on the mirror itself finds them all (the
control that the plant is live)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from batch_fixtures import git

from coder.batch.reach import future_in_reach, git_reach, scan_trajectory
from coder.batch.workspace import create_workspace, find_mirror

MARK = "FUTURE" + secrets.token_hex(4)
ID = {"user.name": "t", "user.email": "t@t"}

#: every way we know to look past HEAD; its output must never hold MARK in a workspace
PROBE = " ; ".join((
    "git log --all --reflog --oneline --decorate -p", "git log --all -S " + MARK,
    "git rev-list --all --reflog --objects",
    "git reflog --all", "git show-ref", "git stash list -p", "git notes list", "git log --notes --all -p",
    "git tag -n", "git branch -a", "git for-each-ref",
    "git fsck --unreachable --lost-found --no-reflogs 2>&1", "cat .git/lost-found/*/* 2>/dev/null",
    "git cat-file --batch-all-objects --batch | grep -a -c " + MARK,
    "cat .git/objects/info/alternates .git/FETCH_HEAD .git/ORIG_HEAD .git/packed-refs 2>&1",
    # the pack files read directly, without the repository's index: every object they hold, decompressed
    "rm -rf /tmp/unpacked && git init -q /tmp/unpacked && for p in .git/objects/pack/*.pack; do "
    "git -C /tmp/unpacked unpack-objects -q < $p; done; "
    "git -C /tmp/unpacked cat-file --batch-all-objects --batch | grep -a -c " + MARK,
    "echo UNPACKED $(git -C /tmp/unpacked cat-file --batch-all-objects --batch-check | wc -l)",
    "git submodule status", "git -C helpers log --all --oneline -p", "git -C helpers tag -n",
    "git -C helpers cat-file --batch-all-objects --batch | grep -a -c " + MARK,
    "echo PAST-LOG $(git log --oneline | wc -l)", "git blame -s src/mod.py", "git log -S base_fn --format=PICKAXE-%s",
))


def _g(repo: Path, *args: str) -> str:
    return git(repo, *[a for k, v in ID.items() for a in ("-c", f"{k}={v}")], *args)


def _commit(repo: Path, rel: str, text: str, message: str) -> str:
    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo / rel).write_text(text)
    _g(repo, "add", rel)
    _g(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _leaky(tmp: Path) -> tuple[Path, str]:
    """repos/acme__leaky.git (a shared mirror of the upstream) and the base commit; repos/acme__helpers.git."""
    helpers = tmp / "up" / "helpers"
    helpers.mkdir(parents=True)
    git(helpers, "init", "-q", "-b", "main")
    h1 = _commit(helpers, "ah.py", "HELPERS = 1\n", "helpers 1")
    up = tmp / "up" / "leaky"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _commit(up, "src/mod.py", "def old():\n    return 1\n", "first")
    _commit(up, "README.md", "leaky\n", "second")
    git(up, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(helpers), "helpers")
    git(up, "config", "-f", ".gitmodules", "submodule.helpers.url", "https://github.com/acme/helpers.git")
    _g(up, "add", ".gitmodules", "helpers")
    base = _commit(up, "src/mod.py", "def old():\n    return 1\n\n\ndef base_fn():\n    return 2\n", "base")
    _commit(helpers, "ah.py", f"HELPERS = 2  # {MARK}-sub\n", "helpers future")
    _g(helpers, "tag", "-a", "v9", "-m", f"{MARK}-subtag")
    future = _commit(up, "src/mod.py", f"def fix():  # {MARK}-main\n    return 3\n", f"fix {MARK}")
    _g(up, "tag", "-a", "v2.0", "-m", f"{MARK}-tag")
    _g(up, "tag", "light")
    _g(up, "checkout", "-q", "-b", "feature", base)
    _commit(up, "feature.py", f"# {MARK}-feature\n", "feature")
    _g(up, "checkout", "-q", "main")
    _g(up, "notes", "add", "-m", f"{MARK}-note-on-base", base)
    (up / "src" / "mod.py").write_text(f"# {MARK}-stash\n")
    _g(up, "stash", "-q")
    _commit(up, "lost.py", f"# {MARK}-reflog\n", "only the reflog keeps this")
    _g(up, "reset", "-q", "--hard", "HEAD~1")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=up, input=f"{MARK}-loose\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=up, input=f"100644 blob {blob}\tdangling.txt\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    _g(up, "commit-tree", tree, "-p", future, "-m", f"{MARK}-dangling")
    git(up, "update-ref", "refs/remotes/origin/next", future)
    for name in ("FETCH_HEAD", "ORIG_HEAD"):
        (up / ".git" / name).write_text(f"{future}\n")
    git(up, "pack-refs", "--all")
    git(up, "repack", "-a", "-d", "-b", "-q")
    git(up, "commit-graph", "write", "--reachable")
    git(up, "multi-pack-index", "write")
    repos = tmp / "repos"
    repos.mkdir()
    subprocess.run(["git", "clone", "-q", "--mirror", "--shared", str(up), str(repos / "acme__leaky.git")],
                   check=True)  # borrows the upstream's objects through alternates
    subprocess.run(["git", "clone", "-q", "--mirror", str(helpers), str(repos / "acme__helpers.git")], check=True)
    assert git(helpers, "rev-parse", "HEAD~1").strip() == h1
    return repos, base


def _probe(cwd: Path) -> str:
    return subprocess.run(["bash", "-c", PROBE], cwd=cwd, capture_output=True, text=True).stdout


def test_the_probe_finds_the_future_in_the_mirror_itself(tmp_path):
    """The control: every plant is live, and the probe's commands find it."""
    repos, base = _leaky(tmp_path)
    up = tmp_path / "up" / "leaky"
    seen = _probe(up)
    for plant in ("main", "tag", "feature", "note-on-base", "stash", "reflog"):
        assert f"{MARK}-{plant}" in seen, plant
    assert (up / ".git" / "objects" / "pack").glob("*.bitmap") and (up / ".git" / "packed-refs").is_file()
    record = git_reach(repos / "acme__leaky.git", base)
    assert record["after_base"] > 5 and record["alternates"]  # the record sees it too
    # the old workspace, a shared clone of the mirror: what issue 44 found in pallets__flask-4992
    old = tmp_path / "old"
    subprocess.run(["git", "clone", "-q", "--shared", str(repos / "acme__leaky.git"), str(old)], check=True)
    git(old, "checkout", "-q", "--detach", base)
    assert future_in_reach(git_reach(old, base)) > 5 and MARK in _probe(old)


def _run(tmp_path: Path, repos: Path, base: str) -> tuple[Path, subprocess.CompletedProcess]:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    turns = [{"text": "Looking around.", "tool_calls": [{"name": "bash", "input": {"command": PROBE}}]},
             {"text": "Done."}]
    (scripts / "acme__leaky-1.json").write_text(json.dumps({"turns": turns}))
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps({
        "instance_id": "acme__leaky-1", "repo": "acme/leaky", "base_commit": base, "problem_statement": "fix it",
        "hints_text": "", "patch": "", "test_patch": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
        "version": "1.0", "environment_setup_commit": base}) + "\n")
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(dataset),
                           "--repos-dir", str(repos), "--output", str(run_dir), "--model", f"scripted:{scripts}",
                           "--no-env", "--keep-workspaces"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CODER_SANDBOX_MAX_OUTPUT_CHARS": "200000"})
    return run_dir, proc


def test_a_fresh_workspace_holds_no_commit_after_the_base(tmp_path):
    repos, base = _leaky(tmp_path)
    run_dir, proc = _run(tmp_path, repos, base)
    assert proc.returncode == 0, proc.stderr
    inst = run_dir / "instances" / "acme__leaky-1"
    events = [json.loads(line) for line in (inst / "events.jsonl").read_text().splitlines()]
    output = next(e for e in events if e["type"] == "tool_call_finished")["output"]
    output = output if isinstance(output, str) else json.dumps(output)
    assert "PAST-LOG" in output and "Traceback" not in output, output[-3000:]
    assert MARK not in output.replace(f"grep -a -c {MARK}", ""), output  # nothing of the future, by any command
    assert "PAST-LOG 3" in output  # the past is all there: git log ...
    assert "def base_fn" in output and "PICKAXE-base" in output  # ... git blame and the pickaxe too
    assert [line for line in output.splitlines() if line == "0"] == ["0"] * 3  # the greps of every object store
    ws = run_dir / "workspaces" / "acme__leaky-1"
    status = json.loads((inst / "status.json").read_text())
    record = status["reach"]["git"]
    assert record["after_base"] == 0 and record["alternates"] == [] and record["refs"] == []
    assert record["submodules"]["helpers"]["after_base"] == 0 and record["submodules"]["helpers"]["commits"] == 1
    assert record["newest_commit_date"] == record["base_date"]
    assert f"UNPACKED {record['objects']}" in output  # the pack files read directly hold just these
    assert str(repos.resolve()) in status["reach"]["hidden"] and status["reach"]["visible"] == []
    flags = {f["flag"] for f in status["flags"]}
    assert {"git: every ref", "git: reflog", "git: unreachable objects", "git: every object", "git: refs",
            "git: internals"} <= flags  # the probe is what a history-mining agent runs: its trajectory is flagged
    assert MARK not in json.dumps(git_reach(ws, base))
    assert (ws / "helpers" / "ah.py").read_text() == "HELPERS = 1\n"
    rep = subprocess.run([sys.executable, "-m", "coder", "swebench", "report", str(run_dir)], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0 and "Clean runs: 0/1" in rep.stdout and "acme__leaky-1" in rep.stdout, rep.stdout


def test_a_trajectory_that_stays_home_is_not_flagged(tmp_path):
    events = [{"type": "assistant_message", "message": {"content": [
        {"type": "tool_use", "id": "a", "name": "x", "input": {"command": "git log --oneline -5 && git blame x.py"}},
        {"type": "tool_use", "id": "b", "name": "y", "input": {"command": f"cat {tmp_path}/run/workspaces/i/x.py"}},
        {"type": "tool_use", "id": "c", "name": "z", "input": {"command": f"ls {tmp_path}/run/instances"}},
        {"type": "tool_use", "id": "d", "name": "z", "input": {"command": "curl https://github.com/a/b/commits"}},
    ]}}, {"type": "tool_call_finished", "tool_use_id": "a",
          "output": f"rootdir: {tmp_path}/run/workspaces/i, configfile: x\n{tmp_path}/run.scripts/i.json\n"}]
    flags = scan_trajectory(events, [str(tmp_path / "run")], [str(tmp_path / "run" / "workspaces" / "i")])
    assert [(f["flag"], f["turn"]) for f in flags] == [(f"outside path: {tmp_path / 'run'}", 1),
                                                      ("host: github.com", 1)]


@pytest.mark.parametrize("bare", [True, False])
def test_a_workspace_from_the_users_own_repository_at_a_past_ref(tmp_path, bare):
    """`coder batch --hide-future REF`'s workspace: from a non-bare repository too, REF's past only."""
    repos, base = _leaky(tmp_path)
    source = find_mirror(repos, "acme/leaky") if bare else tmp_path / "up" / "leaky"
    ws = create_workspace(source, base, tmp_path / "ws")
    assert future_in_reach(git_reach(ws.path, base)) == 0 and MARK not in _probe(ws.path)


def test_coder_batch_hide_future_replays_an_issue_at_a_past_ref(tmp_path):
    """`coder batch --hide-future REF` on one's own repository: the workspace is REF with its past only, and the
    run records so; without the flag the same repository's workspace starts at HEAD."""
    _repos, base = _leaky(tmp_path)
    up = tmp_path / "up" / "leaky"
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"id": "old-1", "title": "base_fn returns 2", "body": "make it 3"}) + "\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    turns = [{"text": "Look.", "tool_calls": [{"name": "bash", "input": {"command": PROBE}}]},
             {"text": "Fix.", "tool_calls": [{"name": "bash", "input": {"command": "sed -i s/2/3/ src/mod.py"}}]},
             {"text": "Done."}]
    (scripts / "old-1.json").write_text(json.dumps({"turns": turns}))
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "coder", "batch", str(issues), "--repo", str(up), "--hide-future",
                           "HEAD~1", "--model", f"scripted:{scripts}", "--output", str(run_dir), "--no-progress"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CODER_SANDBOX_MAX_OUTPUT_CHARS": "200000"})
    assert proc.returncode == 0, proc.stderr
    assert f"at {base[:12]}" in proc.stderr  # HEAD~1 of main is the base; HEAD is the future
    status = json.loads((run_dir / "instances" / "old-1" / "status.json").read_text())
    assert status["reach"]["git"]["base"] == base and future_in_reach(status["reach"]["git"]) == 0
    assert str(up) in status["reach"]["hidden"] and status["reach"]["visible"] == []
    events = (run_dir / "instances" / "old-1" / "events.jsonl").read_text()
    assert MARK not in events.replace(f"grep -a -c {MARK}", "").replace(f"-S {MARK}", "")
    assert "+    return 3" in (run_dir / "patches" / "old-1.patch").read_text()
    bad = subprocess.run([sys.executable, "-m", "coder", "batch", str(issues), "--repo", str(up), "--hide-future",
                          "no-such-ref", "--model", f"scripted:{scripts}", "--output", str(tmp_path / "r2")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no commit named 'no-such-ref'" in bad.stderr


def test_a_checkpoint_store_holds_the_past_of_every_workspace_that_borrows_it(tmp_path, monkeypatch):
    """Long histories: a workspace borrows its older history from the store of a checkpoint on its first-parent
    chain, shared with the other bases of that stretch; the store is past for all of them, and git works in the
    sandbox with the store read-only, nothing more."""
    from coder.batch import workspace
    from coder.sandbox.exec import run_sandboxed
    from coder.sandbox.profile import SandboxConfig

    monkeypatch.setattr(workspace, "CHECKPOINT_EVERY", 2)
    repos, base = _leaky(tmp_path)
    mirror = find_mirror(repos, "acme/leaky")
    older = git(mirror, "rev-parse", f"{base}~1").strip()
    one = create_workspace(mirror, base, tmp_path / "one")
    two = create_workspace(mirror, older, tmp_path / "two")
    stores = [workspace.borrowed_objects(ws.path) for ws in (one, two)]
    assert stores[0] == stores[1] and len(stores[0]) == 1  # depth 3 and 2: one checkpoint, the older base itself
    for ws, commit in ((one, base), (two, older)):
        record = git_reach(ws.path, commit)
        assert record["alternates"] and record["after_base"] == 0 and future_in_reach(record) == 0
        assert MARK not in _probe(ws.path)
    inside = run_sandboxed(PROBE, one.path, SandboxConfig(extra_ro=stores[0], max_output_chars=10**6), 120).output
    assert "PAST-LOG 3" in inside and MARK not in inside.replace(f"grep -a -c {MARK}", "").replace(f"-S {MARK}", "")
    blind = run_sandboxed("git log --oneline | wc -l", one.path, SandboxConfig(), 60).output
    assert "bad object" in blind or "unable" in blind or blind.strip() != "3"  # control: the store is what it reads


def test_the_checkpoint_stores_share_one_copy_of_the_history(tmp_path, monkeypatch):
    """A ladder: each checkpoint's store links the rungs below it (one pack per stretch of history), so the stores
    of three bases in three stretches hold the history once; each workspace is its base's past, nothing newer."""
    from coder.batch import workspace

    monkeypatch.setattr(workspace, "CHECKPOINT_EVERY", 2)
    repo = tmp_path / "linear"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    chain = [_commit(repo, "f.txt", f"{n}\n", f"c{n}") for n in range(1, 8)]
    _commit(repo, "f.txt", f"{MARK}\n", "future")
    made = {depth: create_workspace(repo, chain[depth - 1], tmp_path / f"ws{depth}") for depth in (7, 5, 4)}
    stores = {depth: workspace.borrowed_objects(ws.path)[0] for depth, ws in made.items()}
    assert stores[5] == stores[4] != stores[7]  # depths 4 and 5 share the checkpoint at 4; 7 has the one at 6
    packs = {depth: sorted(Path(store, "pack").glob("*.pack")) for depth, store in stores.items()}
    assert len(packs[7]) == 3 and len(packs[4]) == 2  # rungs (6, 4], (4, 2], (2, root]
    assert {p.name for p in packs[4]} < {p.name for p in packs[7]}
    assert all(os.path.samefile(p, Path(stores[7], "pack", p.name)) for p in packs[4])  # links, not copies
    for depth, ws in made.items():
        assert git(ws.path, "log", "--format=%s").split() == [f"c{n}" for n in range(depth, 0, -1)]
        assert future_in_reach(git_reach(ws.path, chain[depth - 1])) == 0 and MARK not in _probe(ws.path)


def test_a_release_of_the_project_in_a_toolchain_the_sandbox_binds_is_hidden(tmp_path, monkeypatch):
    """A newer release of the project installed where the sandbox shows it (here a Python prefix bound through
    its PATH entry outside HOME, as pyenv's shims bring pyenv) is found and hidden; the control: it is readable in
    a sandbox without the hide, and another package beside it stays readable with it."""
    from coder.batch.reach import project_releases
    from coder.sandbox.exec import run_sandboxed
    from coder.sandbox.profile import SandboxConfig

    site = tmp_path / "tool" / "lib" / "python3.11" / "site-packages"
    for rel, text in (("flask/config.py", f"# {MARK} flask 9.9\n"), ("flask-9.9.dist-info/top_level.txt", "flask\n"),
                      ("other/x.py", "OTHER\n"), ("../../../wheels/Flask-9.9-py3-none-any.whl", f"{MARK} wheel\n"),
                      ("../../../wheels/flask_cors-9.9-py3-none-any.whl", "OTHER wheel\n")):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    wheel = tmp_path / "tool" / "wheels" / "Flask-9.9-py3-none-any.whl"  # a local index's file
    (tmp_path / "tool" / "bin").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'tool' / 'bin'}:{os.environ['PATH']}")
    found = project_releases("flask", [])
    assert {str(site / "flask-9.9.dist-info"), str(site / "flask"), str(wheel)} <= set(found)  # (and the machine's)
    assert not any("flask_cors" in f for f in found)
    repo = tmp_path / "ws"
    repo.mkdir()
    show = f"cat {site}/flask/config.py {site}/other/x.py {wheel}"
    assert MARK in run_sandboxed(show, repo, SandboxConfig(), 60).output  # the control: in reach without the hide
    hidden = run_sandboxed(show, repo, SandboxConfig(hide=found), 60).output
    assert MARK not in hidden and "OTHER" in hidden
