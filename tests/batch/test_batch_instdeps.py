"""What the instance's own commit adds to the environment's dependencies (coder/batch/instdeps.py), for real:
the environment is built at the setup commit, the base commit later requires a package the environment lacks
(as pytest 5.0 began to import `importlib_metadata`), and the workspace installed offline in the sandbox must
still import it, because it was resolved and fetched into the environment's wheelhouse while preparing.

Offline: the "index" is a folder of wheels served on loopback (PIP_FIND_LINKS; the build steps run in the sandbox
with network, where a host folder would not be seen), and the project builds with an in-tree PEP 517 backend
that needs nothing from any index."""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_fixtures import git

from coder.batch.envprep import READY, prepare_envs
from coder.batch.envs import load_spec_table
from coder.batch.instances import load_instances
from coder.batch.instdeps import DEPS_DIR
from coder.batch.specs import spec_for
from coder.batch.testbed import install_workspace, open_testbed
from coder.batch.workspace import create_workspace

BACKEND = '''import os, tomllib, zipfile
DI = "acme_calc-0.1.dist-info"
def _meta():
    proj = tomllib.load(open("pyproject.toml", "rb"))["project"]
    return ("Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (proj["name"], proj["version"])
            + "".join("Requires-Dist: %s\\n" % d for d in proj.get("dependencies", [])))
def get_requires_for_build_wheel(config_settings=None):
    return []
get_requires_for_build_editable = get_requires_for_build_wheel
def prepare_metadata_for_build_wheel(d, config_settings=None):
    os.makedirs(os.path.join(d, DI), exist_ok=True)
    open(os.path.join(d, DI, "METADATA"), "w").write(_meta())
    return DI
prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
def _wheel(d, files):
    files = dict(files)
    files[DI + "/METADATA"] = _meta()
    files[DI + "/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: acme\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    files[DI + "/RECORD"] = "".join(f + ",,\\n" for f in list(files) + [DI + "/RECORD"])
    with zipfile.ZipFile(os.path.join(d, "acme_calc-0.1-py3-none-any.whl"), "w") as z:
        for f, t in files.items():
            z.writestr(f, t)
    return "acme_calc-0.1-py3-none-any.whl"
def build_wheel(d, config_settings=None, metadata_directory=None):
    return _wheel(d, {"calc.py": open("calc.py").read()})
def build_editable(d, config_settings=None, metadata_directory=None):
    return _wheel(d, {"acme_calc.pth": os.getcwd() + "\\n"})
'''

PYPROJECT = ('[build-system]\nrequires = []\nbuild-backend = "acme_backend"\nbackend-path = ["."]\n\n'
             '[project]\nname = "acme-calc"\nversion = "0.1"\ndependencies = [{deps}]\n')


def dependency_wheel(folder: Path, name: str, module: str, source: str, version: str = "1.0") -> None:
    """A wheel of `name` `version` holding `module.py` (what a package index would serve)."""
    di = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {f"{module}.py": source, f"{di}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{di}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{di}/RECORD"] = "".join(f"{f},,\n" for f in [*files, f"{di}/RECORD"])
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder of wheels and its address on loopback (a find-links page: the directory listing)."""
    folder = tmp_path / "index"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *_a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def commit(mirror: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (mirror / rel).write_text(text)
    git(mirror, "add", "-A")
    git(mirror, "commit", "-q", "-m", message)
    return git(mirror, "rev-parse", "HEAD").strip()


@pytest.mark.slow  # builds venvs and a wheel index
def test_a_dependency_the_base_commit_adds_is_fetched_once_and_installed_offline(swe, tmp_path, monkeypatch, index):
    folder, url = index
    dependency_wheel(folder, "acme-extra", "acme_extra", "VALUE = 42\n")
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": url}.items():
        monkeypatch.setenv(key, value)
    setup = commit(swe.mirror, {"acme_backend.py": BACKEND, "pyproject.toml": PYPROJECT.format(deps=""),
                                ".gitignore": "__pycache__/\n"}, "calc as a package")
    calc = (swe.mirror / "calc.py").read_text()
    base = commit(swe.mirror, {"pyproject.toml": PYPROJECT.format(deps='"acme-extra>=1.0"'),
                               "calc.py": "import acme_extra\n\n" + calc}, "calc needs acme-extra")
    missing = commit(swe.mirror, {"pyproject.toml": PYPROJECT.format(deps='"acme-extra>=1.0", "acme-gone"')},
                     "and a package no index has")
    rows = [swe.record(iid) | {"environment_setup_commit": setup, "base_commit": commit_, "version": "2.0"}
            for iid, commit_ in zip(swe.ids, (base, base, missing), strict=True)]
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"python": "3.11", "install": "python -m pip install -e .", "system_site_packages": True, "local": "ok",
            "test_cmd": "python -m pytest -rA -p no:cacheprovider"}
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"2.0": spec}}}}))
    table = load_spec_table(swe.specs)
    insts = load_instances(swe.dataset)
    cache = tmp_path / "cache"
    states = prepare_envs(insts, table, cache, build=True, repos_dir=swe.repos_dir, scratch=tmp_path / "setup")
    (state,) = states.values()
    assert state.status == READY, state.error
    env_dir = Path(state.env_dir)
    # the setup commit's environment does not have it; two instances share one set of dependency files
    markers = [json.loads(p.read_text()) for p in sorted((env_dir / DEPS_DIR).glob("*.json"))]
    assert len(markers) == 2, markers
    found = {m["commit"]: m for m in markers}
    assert found[base]["added"] == ["acme-extra==1.0"] and "error" not in found[base]
    assert "acme-gone" in found[missing]["error"]
    assert (env_dir / "wheelhouse" / "acme_extra-1.0-py3-none-any.whl").is_file()
    assert not list((env_dir / "lib").glob("python*/site-packages/acme_extra.py"))  # the environment is unchanged

    for key in ("PIP_FIND_LINKS", "PIP_NO_INDEX"):  # from here on no index at all: only the wheelhouse
        monkeypatch.delenv(key)
    spec_obj = spec_for(insts[0], table)
    probe = "cd / && python -c 'import calc, acme_extra; print(\"VALUE\", acme_extra.VALUE, calc.__file__)'"
    ws = create_workspace(swe.mirror, base, tmp_path / "ws-base")
    tb = open_testbed(spec_obj, env_dir, ws.path)
    ok, output = install_workspace(tb)
    assert ok, output
    code, out = tb.run(probe, 120)
    assert code == 0 and f"VALUE 42 {ws.path}/calc.py" in out, out
    # what cannot resolve offline installs without dependencies, as before: the project itself still imports
    ws2 = create_workspace(swe.mirror, missing, tmp_path / "ws-missing")
    tb2 = open_testbed(spec_obj, env_dir, ws2.path)
    ok2, output2 = install_workspace(tb2)
    assert ok2 and "installing without them" in output2, output2
    assert list(tb2.layer.glob("lib/python*/site-packages/acme_calc.pth"))


def test_the_base_commits_own_build_requirements_get_a_layer_of_their_own(swe, tmp_path, monkeypatch, index):
    """Issue 31, item 1: the setup commit builds with acme-build 1.0 (into the environment's wheelhouse); the base
    commit pins acme-build==2.0 in its [build-system] (as pylint 3.0 pins setuptools~=66.1). The isolated offline
    build of the base commit needs 2.0: it goes into `<env>/build-wheels/<key>`, which only that commit's
    workspaces use. A commit the wheelhouse serves gets no layer and builds exactly as before."""
    folder, url = index
    for version in ("1.0", "2.0"):
        dependency_wheel(folder, "acme-build", "acme_build", f"VERSION = {version!r}\n", version)
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": url}.items():
        monkeypatch.setenv(key, value)
    # the backend imports the build requirement and writes its version into what it builds
    backend = "import acme_build\n" + BACKEND.replace("    files = dict(files)\n",
                                                      "    files = dict(files, **{'built.txt': acme_build.VERSION})\n")
    assert "acme_build.VERSION" in backend
    pins = ('[build-system]\nrequires = ["acme-build=={v}"]\nbuild-backend = "acme_backend"\nbackend-path = ["."]\n\n'
            '[project]\nname = "acme-calc"\nversion = "0.1"\ndependencies = []\n')
    setup = commit(swe.mirror, {"acme_backend.py": backend, "pyproject.toml": pins.format(v="1.0"),
                                ".gitignore": "__pycache__/\n"}, "calc builds with acme-build 1.0")
    old = commit(swe.mirror, {"calc.py": (swe.mirror / "calc.py").read_text() + "\n# a later change\n"},
                 "a commit the wheelhouse serves")
    new = commit(swe.mirror, {"pyproject.toml": pins.format(v="2.0")}, "calc builds with acme-build 2.0")
    rows = [swe.record(iid) | {"environment_setup_commit": setup, "base_commit": commit_, "version": "2.0"}
            for iid, commit_ in zip(swe.ids[:2], (old, new), strict=True)]
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"python": "3.11", "install": "python -m pip install -e .", "system_site_packages": True, "local": "ok",
            "test_cmd": "python -m pytest -rA -p no:cacheprovider"}
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"2.0": spec}}}}))
    table = load_spec_table(swe.specs)
    insts = load_instances(swe.dataset)
    states = prepare_envs(insts, table, tmp_path / "cache", build=True, repos_dir=swe.repos_dir,
                          scratch=tmp_path / "setup")
    (state,) = states.values()
    assert state.status == READY, state.error
    env_dir = Path(state.env_dir)
    assert [p.name for p in (env_dir / "wheelhouse").glob("acme_build-*")] == ["acme_build-1.0-py3-none-any.whl"]
    builds = {m["commit"]: m["build"] for m in map(json.loads, map(Path.read_text, (env_dir / DEPS_DIR).glob("*.json")))
              if "commit" in m}
    assert builds[old] == {"requires": ["acme-build==1.0"], "layer": None}
    assert builds[new]["requires"] == ["acme-build==2.0"] and builds[new]["layer"]
    assert [p.name for p in Path(builds[new]["layer"]).iterdir()] == ["acme_build-2.0-py3-none-any.whl"]

    for key in ("PIP_FIND_LINKS", "PIP_NO_INDEX"):  # offline from here on
        monkeypatch.delenv(key)
    spec_obj = spec_for(insts[0], table)
    built = "cat $VIRTUAL_ENV/lib/python3.11/site-packages/built.txt"
    for name, commit_, version in (("old", old, "1.0"), ("new", new, "2.0")):
        ws = create_workspace(swe.mirror, commit_, tmp_path / f"ws-{name}")
        tb = open_testbed(spec_obj, env_dir, ws.path)
        assert (tb.build_layer is None) == (name == "old")
        ok, output = install_workspace(tb)
        assert ok and "installing without them" not in output, output
        assert tb.run(built, 60)[1].strip() == version
    # control: without its layer the new commit cannot build offline (what issue 31 saw for pylint and astropy)
    ws = create_workspace(swe.mirror, new, tmp_path / "ws-control")
    tb = open_testbed(spec_obj, env_dir, ws.path)
    tb.build_layer = None
    ok, output = install_workspace(tb)
    assert not ok and "acme-build==2.0" in output, output


SETUP_PY_COMPUTED = """from setuptools import setup

# what the build needs, computed (astropy_helpers extends setup.cfg's list in code): no literal list to read
needs = ["acme-" + "build==2.0"]
setup(name="acme-calc", version="0.1", setup_requires=needs)
"""


def test_a_setup_requires_computed_by_setup_py_gets_its_layer(swe, tmp_path, monkeypatch, index):
    """astropy 3.1's setup.py extends its setup_requires with cython in code, and setuptools fetches it during the
    install: the build layer must hold it. The base commit's setup.py computes `acme-build==2.0`; setup.py runs in
    the sandbox with setuptools' fetching replaced by a recorder, and the layer gets the wheel, as for the same
    requirement written out as a literal list (which the static reading already saw)."""
    folder, url = index
    dependency_wheel(folder, "acme-build", "acme_build", "VERSION = '2.0'\n", "2.0")
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": url}.items():
        monkeypatch.setenv(key, value)
    setup = commit(swe.mirror, {"acme_backend.py": BACKEND, "pyproject.toml": PYPROJECT.format(deps=""),
                                ".gitignore": "__pycache__/\n"}, "calc as a package")
    computed = commit(swe.mirror, {"setup.py": SETUP_PY_COMPUTED}, "setup.py computes its setup_requires")
    literal = commit(swe.mirror, {"setup.py": SETUP_PY_COMPUTED.replace('["acme-" + "build==2.0"]',
                                                                        '["acme-build==2.0"]')}, "written out")
    rows = [swe.record(iid) | {"environment_setup_commit": setup, "base_commit": commit_, "version": "2.0"}
            for iid, commit_ in zip(swe.ids[:2], (computed, literal), strict=True)]
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"python": "3.11", "install": "python -m pip install -e .", "system_site_packages": True, "local": "ok",
            "test_cmd": "python -m pytest -rA -p no:cacheprovider"}
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"2.0": spec}}}}))
    states = prepare_envs(load_instances(swe.dataset), load_spec_table(swe.specs), tmp_path / "cache", build=True,
                          repos_dir=swe.repos_dir, scratch=tmp_path / "setup")
    (state,) = states.values()
    assert state.status == READY, state.error
    markers = {m["commit"]: m for m in map(json.loads, map(Path.read_text,
                                                            (Path(state.env_dir) / DEPS_DIR).glob("*.json")))}
    for commit_ in (computed, literal):
        build = markers[commit_]["build"]
        assert "acme-build==2.0" in build["requires"] and build["layer"], build
        assert [p.name for p in Path(build["layer"]).glob("acme_build-*")] == ["acme_build-2.0-py3-none-any.whl"]


def test_a_dependency_the_patch_adds_is_fetched_for_its_evaluation(swe, tmp_path, monkeypatch, index):
    """The gold patch itself adds a dependency and starts importing it (pylint-dev__pylint-4661 adds appdirs to
    setup.cfg): the harness's install fetches it; the evaluator resolves the patched workspace in the sandbox with
    the index and installs offline from what that brought. The control evaluates the same patch with the
    resolution turned off: the package is missing and the instance does not resolve."""
    from coder.batch import evaluate as evaluate_module
    from coder.batch.evaluate import EvalConfig, evaluate

    folder, url = index
    dependency_wheel(folder, "acme-extra", "acme_extra", "def plus(a, b):\n    return a + b\n")
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": url}.items():
        monkeypatch.setenv(key, value)
    base = commit(swe.mirror, {"acme_backend.py": BACKEND, "pyproject.toml": PYPROJECT.format(deps=""),
                               ".gitignore": "__pycache__/\n"}, "calc as a package")
    gold = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,5 @@\n+import acme_extra\n+\n+\n"
            " def add(a, b):\n-    return a - b\n+    return acme_extra.plus(a, b)\n"
            "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n+++ b/pyproject.toml\n"
            "@@ -7,1 +7,1 @@\n-dependencies = []\n+dependencies = [\"acme-extra>=1.0\"]\n")
    row = swe.record(swe.ids[0]) | {"environment_setup_commit": base, "base_commit": base, "version": "2.0",
                                    "patch": gold}
    swe.dataset.write_text(json.dumps(row) + "\n")
    spec = {"python": "3.11", "install": "python -m pip install -e .", "system_site_packages": True, "local": "ok",
            "test_cmd": "python -m pytest -rA -p no:cacheprovider"}
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"2.0": spec}}}}))
    insts = load_instances(swe.dataset)
    preds = {insts[0].instance_id: {"instance_id": insts[0].instance_id, "model_name_or_path": "gold",
                                    "model_patch": gold}}

    def run(out: str) -> dict:
        cfg = EvalConfig(output=tmp_path / out, repos_dir=swe.repos_dir, cache_dir=tmp_path / "cache",
                         specs=load_spec_table(swe.specs), dataset_path=str(swe.dataset))
        return evaluate(insts, preds, cfg)["instances"][insts[0].instance_id]

    got = run("eval")
    assert got["status"] == "resolved", got
    install = (tmp_path / "eval" / "instances" / insts[0].instance_id / "install.log").read_text()
    assert "acme_extra-1.0" in install or "acme-extra" in install
    monkeypatch.setattr(evaluate_module, "patch_requirements", lambda *_a, **_k: (None, ""))
    control = run("control")
    assert control["status"] != "resolved" and "acme_extra" in (
        tmp_path / "control" / "instances" / insts[0].instance_id / "test_output.txt").read_text()
