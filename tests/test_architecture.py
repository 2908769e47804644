"""docs/ARCHITECTURE.md is the map of the code as it stands (issue 48, item 7): every package of coder/ has its
row in the packages table, its place in the diagram and in the layers table, the layers table says what the import
contract says (pyproject.toml), and every module a row names is there."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
PACKAGES = sorted(p.name for p in (ROOT / "coder").iterdir() if (p / "__init__.py").is_file())


def rows(header: str) -> list[list[str]]:
    """The cells of the table whose first header cell is `header`."""
    table = re.search(rf"^\| {header} \|.*\n\| ---.*\n((?:\|.*\n)+)", MAP, re.M)
    assert table, f"no table starting with | {header} | in docs/ARCHITECTURE.md"
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table.group(1).splitlines()]


def test_every_package_has_a_row_and_every_module_a_row_names_exists() -> None:
    table = {cells[0].strip("`"): cells[1] for cells in rows("package")}
    assert sorted(table) == PACKAGES, "each package of coder/ has one row in the packages table"
    for package, text in table.items():
        for module in re.findall(r"`([\w/]+\.py)`", text):
            path = ROOT / module if "/" in module else ROOT / "coder" / package / module
            assert path.is_file(), f"docs/ARCHITECTURE.md names {module} in {package}'s row: no such file"


def test_the_layers_table_says_what_the_import_contract_says() -> None:
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c for c in contract["tool"]["importlinter"]["contracts"] if c["id"] == "layers")["layers"]
    declared = [sorted(name.strip("() \n").removeprefix("coder.") for name in re.split(r"[:|]", layer) if name.strip())
                for layer in layers]
    written = [sorted(re.findall(r"`(\w+)`", cells[1])) for cells in rows("layer")]
    assert written == declared


def test_every_package_is_in_the_diagram() -> None:
    diagram = MAP.split("```")[1]
    missing = [p for p in PACKAGES if not re.search(rf"(coder/{p}\b|\s{p}\b)", diagram)]
    assert not missing, f"not in the diagram of docs/ARCHITECTURE.md: {missing}"
