"""Loading and filtering instances; workspaces from mirrors; the patch taken from a workspace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from batch_fixtures import git

from coder.base.errors import UsageError
from coder.batch.instances import filter_instances, load_instances, load_issue_list
from coder.batch.workspace import (
    IncompleteMirror,
    WorkspaceError,
    create_workspace,
    ensure_mirror,
    find_mirror,
    workspace_patch,
)


def test_jsonl_json_and_dict_forms_agree(swe, tmp_path):
    from_jsonl = load_instances(swe.dataset)
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    (tmp_path / "list.json").write_text(json.dumps(rows))
    (tmp_path / "dict.json").write_text(json.dumps({r["instance_id"]: r for r in rows}))
    for other in (load_instances(tmp_path / "list.json"), load_instances(tmp_path / "dict.json")):
        assert [i.to_record() for i in other] == [i.to_record() for i in from_jsonl]
    inst = from_jsonl[0]
    assert inst.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]  # JSON-encoded string decoded
    assert inst.mirror_name == "acme__calc" and inst.version == "1.0"


def test_real_lite_dev_split_loads_with_every_field():
    path = Path(__file__).with_name("data") / "swebench_lite_dev.jsonl"  # a copy: no ../shared needed
    insts = load_instances(path)
    assert len(insts) == 23
    one = next(i for i in insts if i.instance_id == "sqlfluff__sqlfluff-1625")
    assert one.repo == "sqlfluff/sqlfluff" and len(one.base_commit) == 40 and one.environment_setup_commit
    assert one.FAIL_TO_PASS and len(one.PASS_TO_PASS) == 64 and one.eval_script.startswith("#!/bin/bash")
    assert one.extra["image"].startswith("swebench/")


def test_filters(swe):
    insts = load_instances(swe.dataset)
    assert [i.instance_id for i in filter_instances(insts, ids=["acme__calc-3,acme__calc-1"])] == \
        ["acme__calc-3", "acme__calc-1"]
    assert [i.instance_id for i in filter_instances(insts, pattern=r"-[23]$")] == ["acme__calc-2", "acme__calc-3"]
    assert [i.instance_id for i in filter_instances(insts, slice_spec="1:")] == ["acme__calc-2", "acme__calc-3"]
    a = [i.instance_id for i in filter_instances(insts, shuffle=True, seed=7)]
    b = [i.instance_id for i in filter_instances(list(reversed(insts)), shuffle=True, seed=7)]
    assert a == b and sorted(a) == swe.ids  # deterministic whatever the input order
    with pytest.raises(UsageError, match="not in the dataset"):
        filter_instances(insts, ids=["nope"])
    with pytest.raises(UsageError, match="invalid regular expression"):
        filter_instances(insts, pattern="(")
    with pytest.raises(UsageError, match="start:stop"):
        filter_instances(insts, slice_spec="3")


def test_bad_dataset_lines_are_named(tmp_path):
    bad = tmp_path / "d.jsonl"
    bad.write_text('{"instance_id": "a"}\n{oops\n')
    with pytest.raises(UsageError, match=r"d.jsonl:2"):
        load_instances(bad)
    with pytest.raises(UsageError, match="does not exist"):
        load_instances(tmp_path / "missing.jsonl")


def test_issue_lists(tmp_path):
    jl = tmp_path / "issues.jsonl"
    jl.write_text(json.dumps({"id": 12, "title": "Crash on empty input", "body": "Steps: ..."}) + "\n" +
                  json.dumps({"key": "ui/bad name", "text": "Button is misaligned"}) + "\n")
    insts = load_issue_list(jl, "abc123", "demo")
    assert [i.instance_id for i in insts] == ["12", "ui-bad-name"]
    assert insts[0].problem_statement.startswith("Crash on empty input\n\nSteps")
    assert insts[0].base_commit == "abc123"
    md = tmp_path / "issues.md"
    md.write_text("First issue\n---\nSecond issue\n")
    assert [i.problem_statement for i in load_issue_list(md, "x", "demo")] == ["First issue", "Second issue"]


def test_workspace_holds_the_base_and_its_past_only(swe, tmp_path):
    mirror = find_mirror(swe.repos_dir, "acme/calc")
    assert mirror == swe.mirror
    ws = create_workspace(mirror, swe.base_commit, tmp_path / "ws" / "one")
    assert ws.base_commit == swe.base_commit
    assert not (ws.path / ".git" / "objects" / "info" / "alternates").exists()  # its own objects, no borrowing
    assert not (ws.path / "README.md").exists()  # the later commit on main is not there
    later = git(swe.mirror, "rev-parse", "main").strip()
    assert subprocess.run(["git", "cat-file", "-e", later], cwd=ws.path).returncode != 0  # nor its objects
    assert git(ws.path, "for-each-ref") == "" and git(ws.path, "rev-parse", "HEAD").strip() == swe.base_commit
    # a bare mirror works too
    bare = tmp_path / "bare" / "acme__calc.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(swe.mirror), str(bare)], check=True)
    ws2 = create_workspace(find_mirror(tmp_path / "bare", "acme/calc"), swe.base_commit, tmp_path / "ws" / "two")
    assert (ws2.path / "calc.py").read_text().startswith("def add")


def test_missing_mirror_and_commit_are_clear(swe, tmp_path):
    with pytest.raises(WorkspaceError, match=r"no local mirror of other/repo.*git clone --mirror"):
        ensure_mirror("other/repo", swe.repos_dir, tmp_path / "cache", allow_network=False)
    with pytest.raises(WorkspaceError, match="not in the mirror"):
        create_workspace(swe.mirror, "0" * 40, tmp_path / "ws")


def test_patch_covers_edits_new_files_and_commits(swe, tmp_path):
    ws = create_workspace(swe.mirror, swe.base_commit, tmp_path / "ws").path
    (ws / "calc.py").write_text((ws / "calc.py").read_text().replace("a - b", "a + b"))
    (ws / "helpers.py").write_text("X = 1\n")
    (ws / "tests" / "test_new.py").write_text("def test_x():\n    pass\n")
    (ws / "reproduce.py").write_text("print(1)\n")
    git(ws, "add", "calc.py")
    git(ws, "commit", "-q", "-m", "agent committed")  # committed work is part of the patch too
    full = workspace_patch(ws, swe.base_commit)
    for name in ("calc.py", "helpers.py", "tests/test_new.py", "reproduce.py"):
        assert f"diff --git a/{name} b/{name}" in full
    lean = workspace_patch(ws, swe.base_commit, exclude_new_tests=True)
    assert "calc.py" in lean and "helpers.py" in lean
    assert "test_new.py" not in lean and "reproduce.py" not in lean
    # the patch applies to a fresh checkout of the base commit
    fresh = create_workspace(swe.mirror, swe.base_commit, tmp_path / "fresh").path
    subprocess.run(["git", "apply", "-"], input=lean, text=True, cwd=fresh, check=True)
    assert "a + b" in (fresh / "calc.py").read_text()


def _add_github_submodule(swe, tmp_path) -> str:
    """A commit on the calc mirror with `helpers/` a submodule of https://github.com/acme/helpers.git (as
    astropy 1.x has astropy_helpers); the helpers repository lives in a directory of its own."""
    helpers = tmp_path / "src" / "helpers"
    helpers.mkdir(parents=True)
    git(helpers, "init", "-q")
    (helpers / "ah.py").write_text("HELPERS = 1\n")
    git(helpers, "add", ".")
    git(helpers, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "helpers")
    work = tmp_path / "src" / "calc"
    subprocess.run(["git", "clone", "-q", str(swe.mirror), str(work)], check=True)
    git(work, "checkout", "-q", swe.base_commit)
    git(work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(helpers), "helpers")
    git(work, "config", "-f", ".gitmodules", "submodule.helpers.url", "https://github.com/acme/helpers.git")
    git(work, "add", ".gitmodules")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "add helpers")
    git(work, "push", "-q", str(swe.mirror), "HEAD:refs/heads/with-helpers")
    return git(work, "rev-parse", "HEAD").strip()


def test_github_submodules_come_from_a_local_mirror_beside_the_main_one(swe, tmp_path):
    commit = _add_github_submodule(swe, tmp_path)
    ws = create_workspace(swe.mirror, commit, tmp_path / "ws" / "none")
    assert ws.unfilled == ("acme/helpers",)  # no mirror: left empty and named, for the build's error
    assert not any((ws.path / "helpers").iterdir())
    mirror = swe.repos_dir / "acme__helpers.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(tmp_path / "src" / "helpers"), str(mirror)], check=True)
    ws = create_workspace(swe.mirror, commit, tmp_path / "ws" / "filled")
    assert ws.unfilled == ()
    assert (ws.path / "helpers" / "ah.py").read_text() == "HELPERS = 1\n"
    status = git(ws.path, "submodule", "status")
    assert status.startswith(" ") and "helpers" in status  # initialised: a build's `git submodule` finds it so
    # cloned over file://, so no object file is a hard link into the shared mirror the sandbox must not reach
    objects = [p for p in (ws.path / ".git" / "modules").rglob("*") if p.is_file() and "objects" in p.parts]
    assert objects and all(p.stat().st_nlink == 1 for p in objects)
    assert workspace_patch(ws.path, commit) == ""  # the filled submodule is no change of the agent's


def _partial_mirror(src: Path, dest: Path) -> None:
    """A partial clone, as the fetched snapshots are: blobs over 1 kB left out, packs marked promisor."""
    git(src, "config", "uploadpack.allowFilter", "true")
    subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:limit=1k", src.as_uri(), str(dest)], check=True)


def test_a_checkout_with_blobs_missing_from_the_mirror_is_refused_by_name(swe, tmp_path):
    work = tmp_path / "src"
    subprocess.run(["git", "clone", "-q", str(swe.mirror), str(work)], check=True)
    (work / "table.dat").write_text("x" * 5000)  # a large data file, like astropy's IERS tables
    git(work, "add", "table.dat")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "data")
    commit = git(work, "rev-parse", "HEAD").strip()
    _partial_mirror(work, tmp_path / "partial" / "acme__calc.git")
    mirror = find_mirror(tmp_path / "partial", "acme/calc")
    # git's own checkout skips the missing blob and succeeds: the workspace would silently lack the file
    with pytest.raises(IncompleteMirror, match=r"lacks the content of 1 file\(s\).*partial snapshot\): table\.dat"):
        create_workspace(mirror, commit, tmp_path / "ws")
    assert not (tmp_path / "ws").exists()
    assert create_workspace(mirror, swe.base_commit, tmp_path / "ws2").path.is_dir()  # small blobs all there


def test_a_submodule_url_cannot_name_a_folder_outside_the_mirrors(swe, tmp_path):
    """.gitmodules is the repository's text: `https://github.com/../secret` must not pick `DIR/../secret`."""
    secret = swe.repos_dir.parent / "secret"
    secret.mkdir()
    git(secret, "init", "-q")
    (secret / "key.txt").write_text("TOKEN\n")
    git(secret, "add", ".")
    git(secret, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "s")
    _add_github_submodule(swe, tmp_path)
    work = tmp_path / "src" / "calc"
    git(work, "config", "-f", ".gitmodules", "submodule.helpers.url", "https://github.com/../secret")
    git(work, "add", ".gitmodules")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "point outside")
    git(work, "push", "-q", str(swe.mirror), "HEAD:refs/heads/outside")
    commit = git(work, "rev-parse", "HEAD").strip()
    ws = create_workspace(swe.mirror, commit, tmp_path / "ws")
    assert not (ws.path / "helpers" / "key.txt").exists() and not any((ws.path / "helpers").iterdir())
