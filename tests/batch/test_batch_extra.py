"""The SWE-bench and batch harness is an optional extra at the product's edge (issue 34, item 4).

- The core install does not pull `datasets`: pyproject's dependencies, followed through the installed packages'
  own requirements, never reach it; the `swebench` extra (and `ray`, which runs the harness on a cluster) does.
- In an interpreter where `datasets` cannot be imported (a meta-path finder planted with sitecustomize refuses
  it, as a core-only install would), `coder batch` and `coder swebench ...` exit 2 with how to install the extra,
  no traceback; `coder --help` still works. The control runs the same commands without the plant.
- Nothing in coder imports coder.batch but the CLI, for its subcommands' register().
- The instance prompt and the environment note use the one strict `{{name}}` syntax; a user's template in the
  old `{name}` syntax, or with an unknown variable, is refused before anything runs.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from coder.base.errors import PromptError
from coder.batch.instance_run import instance_template, render_prompt
from coder.batch.instances import Instance

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

BLOCK = '''
import sys

class _NoDatasets:
    """As if `datasets` were not installed: what `pip install coder` without the extra leaves."""

    def find_spec(self, name, path=None, target=None):
        if name == "datasets" or name.startswith("datasets."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoDatasets())
'''


def _name(req: str) -> str:
    return Requirement(req).name.lower().replace("_", "-")


def _pulled(reqs: list[str]) -> set[str]:
    """Every distribution `reqs` bring in, following the installed packages' own requirements (extras' and other
    platforms' requirements left out, as pip leaves them out)."""
    seen: set[str] = set()
    todo = [r for r in reqs]
    while todo:
        req = Requirement(todo.pop())
        name = req.name.lower().replace("_", "-")
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo += md.requires(name) or []
        except md.PackageNotFoundError:
            continue
    return seen


def test_the_core_install_does_not_pull_datasets_and_the_extra_does() -> None:
    core = PYPROJECT["dependencies"]
    assert "datasets" not in {_name(r) for r in core}
    pulled = _pulled(core)
    assert "anthropic" in pulled and "pydantic" in pulled  # the walk follows requirements (control)
    assert "datasets" not in pulled and "pyarrow" not in pulled
    extras = PYPROJECT["optional-dependencies"]
    assert "datasets" in {_name(r) for r in extras["swebench"]}
    assert "coder[swebench]" in extras["ray"]  # a Ray run is a harness run
    install = (ROOT / "install.sh").read_text(encoding="utf-8")
    assert re.search(r'-e "\.\[[^"]*swebench[^"]*\]"', install)  # install.sh (and so CI) installs everything


@pytest.fixture
def no_datasets(tmp_path: Path) -> dict[str, str]:
    """The environment of an interpreter that cannot import `datasets`."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCK, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(block), str(ROOT)])}
    probe = subprocess.run([sys.executable, "-c", "import datasets"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'datasets'" in probe.stderr  # the plant is live
    return env


def _coder(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coder", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


COMMANDS = (["swebench", "run", "--dataset", "missing.jsonl", "--model", "scripted:x", "--no-env"],
            ["swebench", "eval", "preds.json", "--dataset", "missing.jsonl"],
            ["swebench", "envs", "--dataset", "missing.jsonl"],
            ["swebench", "report", "run"],
            ["swebench"],
            ["batch", "issues.jsonl", "--model", "scripted:x"])


def test_without_the_extra_the_harness_says_how_to_install_it(no_datasets, tmp_path):
    for args in COMMANDS:
        proc = _coder(no_datasets, tmp_path, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "pip install 'coder[swebench]'" in proc.stderr and "datasets missing" in proc.stderr, proc.stderr
        assert f"`coder {' '.join(a for a in args[:2] if not a.endswith('.jsonl'))}`" in proc.stderr
    helped = _coder(no_datasets, tmp_path, "--help")
    assert helped.returncode == 0 and "swebench" in helped.stdout and "optional swebench extra" in helped.stdout
    # control: with `datasets` importable the same command gets past the check (to the missing dataset file)
    control = _coder({**no_datasets, "PYTHONPATH": str(ROOT)}, tmp_path, *COMMANDS[0])
    assert control.returncode == 2 and "coder[swebench]" not in control.stderr
    assert "missing.jsonl does not exist" in control.stderr


def _imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_only_the_cli_imports_the_harness():
    """The harness stands at the edge: the CLI registers its subcommands, and nothing else in coder imports it."""
    importers = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "coder").rglob("*.py"))
                 if "batch" not in p.relative_to(ROOT / "coder").parts
                 and any(n == "coder.batch" or n.startswith("coder.batch.") for n in _imports_of(p))]
    assert importers == ["coder/cli/main.py"]
    assert _imports_of(ROOT / "coder" / "cli" / "main.py") & {"coder.batch.cli"}  # its register(), nothing more
    assert not {n for n in _imports_of(ROOT / "coder" / "cli" / "main.py") if n.startswith("coder.batch")} - {
        "coder.batch.cli"}


INST = Instance(instance_id="acme__calc-1", repo="acme/calc", base_commit="abc123",
                problem_statement="add() {subtracts}\n", hints_text="see {{x}} in the diff")


def test_the_instance_prompt_has_one_strict_syntax(tmp_path):
    text = render_prompt(INST, None, include_hints=True)
    assert "add() {subtracts}" in text and "acme/calc (instance acme__calc-1, base commit abc123)" in text
    assert "<hints>\nsee {{x}} in the diff\n</hints>" in text  # values are put in once, never expanded again
    assert "{{" not in text.replace("{{x}}", "")
    mine = tmp_path / "mine.md"
    mine.write_text("Fix {{repo}}: {{problem_statement}} {json: 1}\n", encoding="utf-8")  # a subset is fine
    assert render_prompt(INST, mine) == "Fix acme/calc: add() {subtracts} {json: 1}\n"
    for body, message in (("Fix {problem_statement}", r"\{problem_statement\} is the old syntax; write "
                                                       r"\{\{problem_statement\}\}"),
                          ("Fix {{problem}}", "unknown variable problem"),
                          ("Fix {{ two words }}", "malformed placeholder")):
        mine.write_text(body, encoding="utf-8")
        with pytest.raises(PromptError, match=message):
            instance_template(mine)
    with pytest.raises(PromptError, match="cannot be read"):
        instance_template(tmp_path / "absent.md")


def test_a_bad_template_stops_the_run_before_anything_starts(swe, tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("Fix {problem_statement} in {repo}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = _coder(env, tmp_path, "swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir),
                  "--model", "scripted:x", "--prompt-template", str(bad), "--output", str(tmp_path / "run"),
                  "--cache-dir", str(tmp_path / "cache"), "--no-progress")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "{problem_statement} is the old syntax; write {{problem_statement}}" in proc.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()  # no environment, no instance
