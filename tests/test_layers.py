"""The layers are enforced, not only written down (issue 18): import-linter checks the contracts in
pyproject.toml (`[tool.importlinter]`): imports flow frontends -> commands -> engine -> services -> foundations ->
base, and no package or module imports form a cycle. `lint-imports` runs the same contracts from the command line."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from importlinter.application.use_cases import lint_imports
from importlinter.configuration import configure

configure()  # the readers of pyproject.toml and the graph builder, as the `lint-imports` command sets them up
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _contracts() -> dict[str, dict]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return {c["id"]: c for c in data["tool"]["importlinter"]["contracts"]}


def _layer_names(layer: str) -> list[str]:
    """`coder.x : coder.y : (coder.z)` -> ["coder.x", "coder.y", "(coder.z)"]."""
    return [part.strip() for part in layer.replace("|", ":").split(":") if part.strip()]


def test_the_code_keeps_its_layers_and_has_no_cycles(capsys: pytest.CaptureFixture[str]) -> None:
    kept = lint_imports(config_filename=str(PYPROJECT), cache_dir=None, no_logo=True)
    assert kept, capsys.readouterr().out


def test_every_package_and_top_level_module_has_a_layer() -> None:
    """A new package must be placed (one line in its layer), or its imports would go unchecked."""
    placed = {name.strip("()") for layer in _contracts()["layers"]["layers"] for name in _layer_names(layer)}
    present = {f"coder.{p.stem if p.is_file() else p.name}" for p in (ROOT / "coder").iterdir()
               if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
               or (p.is_dir() and (p / "__init__.py").is_file())}
    assert present - placed == set(), "place these in a layer of [tool.importlinter] (docs/ARCHITECTURE.md, Layers)"


def test_an_upward_import_breaks_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the very layers of pyproject.toml, laid over a package of empty modules named like ours, kept
    while every import points down and broken by one foundation module that imports a frontend."""
    layers = [layer.replace("coder.", "demo.") for layer in _contracts()["layers"]["layers"]]
    names = [name for layer in layers for name in _layer_names(layer) if not name.startswith("(")]
    package = tmp_path / "demo"
    for name in names:
        folder = package / name.removeprefix("demo.")
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    top, bottom = names[0], names[-1]
    (package / top.removeprefix("demo.") / "__init__.py").write_text(f"import {bottom}\n")  # down: fine
    config = tmp_path / "importlinter.toml"
    lines = "\n".join(f"    {json.dumps(layer)}," for layer in layers)  # a TOML basic string
    config.write_text(f'[tool.importlinter]\nroot_package = "demo"\n\n[[tool.importlinter.contracts]]\n'
                      f'name = "demo layers"\ntype = "layers"\nlayers = [\n{lines}\n]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(config_filename=str(config), cache_dir=None, no_logo=True), capsys.readouterr().out
    upward = package / "sandbox" / "shell.py"
    upward.write_text("import demo.cli\n")
    for module in [m for m in sys.modules if m == "demo" or m.startswith("demo.")]:
        del sys.modules[module]
    assert not lint_imports(config_filename=str(config), cache_dir=None, no_logo=True)
    assert "demo.sandbox is not allowed to import demo.cli" in capsys.readouterr().out
