"""coder's own process never imports code the sandbox wrote since it started (coder/host/imports.py; decision 43).

The red team's F2: with coder's Python environment inside the project (coder installed into the project's `.venv`),
the model's shell appended a line to `PIL/PngImagePlugin.py`, and coder's host process ran it, with the API key,
when a picture was next viewed (Pillow is imported late). Here the environment inside the workspace is a copy of
the real Pillow at `site/` first on coder's import path; the plant writes the API key into a folder the test owns.
The control makes the same plant before coder starts: coder then imports it (the copy is the Pillow it uses, late).
Bytecode is the other way in: a `.pyc` whose header matches its untouched source is loaded without the source.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import PIL
import pytest
from PIL import Image
from repo_support import git
from security_run_support import BASH_MODES, MODE_IDS

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-host-imports-marker"


def _copy_pillow(repo: Path) -> Path:
    """Pillow as a wheel installs it (the package and its bundled libraries) into `repo/site`."""
    site, installed = repo / "site", Path(PIL.__file__).parent.parent
    for name in ("PIL", "pillow.libs"):
        if (installed / name).is_dir():
            shutil.copytree(installed / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _plant(outside: Path) -> str:
    return f"\nopen({str(outside / 'ran')!r}, 'w').write(__import__('os').environ.get('ANTHROPIC_API_KEY', ''))\n"


def _coder_run(repo: Path, site: Path, turns: list[dict[str, object]], *flags: str) -> list[dict[str, object]]:
    """`coder run` with `site` first on its import path (an environment inside the workspace), as a console script
    starts it."""
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    start = (f"import sys; sys.path[:0] = [{str(site)!r}, {str(REPO)!r}]; sys.argv[0] = 'coder'; "
             "from coder.cli.main import main; sys.exit(main())")
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    proc = subprocess.run([sys.executable, "-I", "-c", start, "run", "--model", f"scripted:{script}",
                           "--output-format", "stream-json", *flags, "go"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert events, proc.stderr
    return events


@pytest.fixture
def workspace(git_repo: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    Image.new("RGB", (4, 4), "red").save(git_repo / "x.png")
    (git_repo / ".gitignore").write_text("site/\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "picture")
    return git_repo, _copy_pillow(git_repo), outside


VIEW = {"tool_calls": [{"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "x.png"}}]}


@pytest.mark.parametrize(("mode", "flags"), BASH_MODES, ids=MODE_IDS)
def test_a_library_the_sandbox_edits_is_not_imported_by_coder(workspace: tuple[Path, Path, Path], mode: str,
                                                              flags: tuple[str, ...]) -> None:
    repo, site, outside = workspace
    plugin = "site/PIL/PngImagePlugin.py"
    command = f"printf %s {json.dumps(_plant(outside))} >> {plugin}"
    events = _coder_run(repo, site, [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, VIEW,
                        {"text": "done"}], "--permission-mode", mode, *flags)
    assert "ran" in (repo / plugin).read_text() and "environ" in (repo / plugin).read_text()  # the plant is there
    assert not (outside / "ran").exists(), "coder's process imported the module the sandbox wrote"
    text = json.dumps(events)
    assert "changed after coder started" in text, text[-3000:]


def test_control_the_same_plant_made_before_start_runs_in_coder(workspace: tuple[Path, Path, Path]) -> None:
    """The plant is live: made before coder starts (the guard's rule is "changed since start"), coder imports it
    late, from the workspace's copy, with its key."""
    repo, site, outside = workspace
    with (site / "PIL" / "PngImagePlugin.py").open("a") as handle:
        handle.write(_plant(outside))
    _coder_run(repo, site, [VIEW, {"text": "done"}], "--permission-mode", "plan")
    assert (outside / "ran").read_text() == KEY


BYTECODE = textwrap.dedent("""
    import importlib.util, os, sys, time
    workspace, guarded = sys.argv[1], sys.argv[2] == "guarded"
    sys.path.insert(0, os.path.join(workspace, "lib"))
    from coder.host.imports import guard
    if guarded:
        guard(workspace)
    time.sleep(0.02)  # the plant's ctime after the start (ctime has ns precision)
    source = os.path.join(workspace, "lib", "late.py")
    st = os.stat(source)
    evil = compile("open(%r, 'w').close()" % os.path.join(sys.argv[3], "ran"), source, "exec")
    data = importlib._bootstrap_external._code_to_timestamp_pyc(evil, st.st_mtime, st.st_size)
    beside = os.path.join(os.path.dirname(source), "__pycache__", "late.%s.pyc" % sys.implementation.cache_tag)
    os.makedirs(os.path.dirname(beside), exist_ok=True)
    with open(beside, "wb") as f:
        f.write(data)
    import late
    print("imported", late.__file__)
""")


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "control"])
def test_bytecode_planted_beside_an_untouched_source_is_not_loaded(tmp_path: Path, guarded: bool) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "lib").mkdir(parents=True)
    outside.mkdir()
    (workspace / "lib" / "late.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", BYTECODE, str(workspace), "guarded" if guarded else "plain",
                           str(outside)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (outside / "ran").exists() is not guarded  # the control loads the planted bytecode
    assert importlib.util.find_spec("coder.host.imports") is not None


def test_nothing_is_guarded_when_no_import_root_is_in_the_workspace(tmp_path: Path) -> None:
    """The usual case (coder installed outside the project) pays nothing: no finder, no bytecode folder moved."""
    probe = ("import sys; from coder.host.imports import guard, guarded_roots; before = list(sys.meta_path); "
             f"guard({str(tmp_path)!r}); print(guarded_roots() == () and sys.meta_path == before "
             "and sys.pycache_prefix is None)")
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); {probe}"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.stdout.strip() == "True", proc.stderr
    # control: the same process guards a workspace that holds its import path (here, coder's own checkout)
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                           + probe.replace(repr(str(tmp_path)), repr(str(REPO)))],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.stdout.strip() == "False", proc.stderr


PLACES = textwrap.dedent("""
    import importlib._bootstrap_external as ext, importlib.util, os, sys
    workspace, library = sys.argv[1], sys.argv[2]
    sys.path[:0] = [workspace, library]  # an import root inside the workspace: the guard is on
    source = os.path.join(library, "beyond.py")
    st = os.stat(source)
    beside = importlib.util.cache_from_source(source)
    os.makedirs(os.path.dirname(beside), exist_ok=True)
    with open(beside, "wb") as f:  # the library's own bytecode, told apart from its source
        f.write(ext._code_to_timestamp_pyc(compile("VALUE = 'bytecode'", source, "exec"), st.st_mtime, st.st_size))
    from coder.host.imports import guard, guarded_roots
    guard(workspace)
    import beyond, inner
    print(bool(guarded_roots()), beyond.VALUE, inner.VALUE)
""")


def test_only_the_guarded_modules_bytecode_moves(tmp_path: Path) -> None:
    """A library outside the workspace keeps its own `__pycache__` (moving every module's bytecode made each
    `coder run` compile the SDKs it imports late from source: seconds of CPU per start); a module inside the
    workspace has its bytecode written to coder's cache folder, never beside it."""
    workspace, library, cache = tmp_path / "ws", tmp_path / "library", tmp_path / "cache"
    workspace.mkdir()
    library.mkdir()
    (workspace / "inner.py").write_text("VALUE = 'inner'\n")
    (library / "beyond.py").write_text("VALUE = 'source'\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-c", PLACES, str(workspace), str(library)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "bytecode", "inner"], proc.stderr
    assert not (workspace / "__pycache__").exists()
    moved = cache / "coder" / "pycache" / str(workspace.resolve()).lstrip("/") / importlib.util.cache_from_source(
        "inner.py").removeprefix("__pycache__/")
    assert moved.is_file(), sorted(p.relative_to(cache) for p in cache.rglob("*"))
