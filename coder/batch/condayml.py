"""The harness's `environment.yml` step, as pip requirements where that is faithful.

For `packages: environment.yml` the harness writes the repository's environment file (the first of its
`env_yml_paths` at the setup commit, renamed to the testbed environment) and runs `conda env update -f` on it
(`no_use_env`) or creates the environment from it, from conda-forge, unpinned; `pip_packages` then pin the core.
A venv gets the same packages from PyPI under their PyPI names. What is not a Python package there is left
out, by name and with the reason, as data (`environment_yml` in data/swebench_local.json): C libraries the
wheels bundle (hdf5), packages that exist only on conda-forge (cdms2), the installer itself. Everything else
must have the same name on PyPI, or the build fails and says so; nothing is guessed.

The conda entries and `pip_packages` go to pip in one resolution, so the pins hold and the unpinned rest
resolves to versions compatible with them (conda, run first, resolved the unpinned rest to its newest, which
pip then downgraded under its feet; one resolution gives the same pins without the breakage).

"Its newest" was the newest when the harness built its images, not today's: with `uploaded_prior_to` in the
record, that one resolution runs with pip's `--uploaded-prior-to` (pip 26, for that step only), so aiobotocore is
2.13 as in 2024 and not 3.x. A package no index has under its name stops the build naming it (envs.py
`missing_distribution`), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from coder.batch.specs import EnvUnavailable


@dataclass
class YmlRequirements:
    """What the environment file asks for, as pip requirement lines, and what was left out and why."""

    source: str
    lines: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    uploaded_prior_to: str = ""  # the harness's era for what the file leaves unpinned (ISO 8601), or none


def _split(dep: str) -> tuple[str, str]:
    """`numpy>=1.17`, `numpy=1.17` or `numpy 1.17.*` (conda's `=V` and bare `V` are a version prefix; `=V=build`
    pins a build) -> (name, pip specifier)."""
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", dep.strip())
    if not m:
        raise EnvUnavailable(f"environment.yml: cannot read the dependency {dep!r}")
    name, rest = m.group(1), m.group(2).strip()
    if rest.startswith("=") and not rest.startswith("=="):
        rest = rest[1:].split("=", 1)[0]
    if rest[:1].isdigit():
        rest = rest.rstrip("*").rstrip(".")
        return name, f"=={rest}.*"
    return name, rest


def yml_requirements(text: str, source: str, table: dict[str, Any]) -> YmlRequirements:
    """Pip requirement lines for an environment file's `dependencies` (conda entries and its `pip:` list).

    `table`: `{"pypi": {conda name: PyPI name}, "leave_out": {conda name: why}}`."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise EnvUnavailable(f"{source} is not valid YAML: {exc}") from None
    pypi = {k.lower(): v for k, v in (table.get("pypi") or {}).items()}
    leave_out = {k.lower(): v for k, v in (table.get("leave_out") or {}).items()}
    out = YmlRequirements(source, uploaded_prior_to=str(table.get("uploaded_prior_to") or ""))
    for dep in data.get("dependencies") or []:
        if isinstance(dep, dict):
            out.lines += [str(p) for p in dep.get("pip") or []]  # already PyPI requirements
            continue
        name, spec = _split(str(dep))
        if name.lower() == "python":
            continue  # the venv's interpreter is the harness's Python already
        if name.lower() in leave_out:
            out.left_out[name] = leave_out[name.lower()]
            continue
        out.lines.append(pypi.get(name.lower(), name) + spec)
    return out


def read_yml_requirements(paths: list[str], checkout: Path, table: dict[str, Any]) -> YmlRequirements:
    """The first of the repository's environment files that exists at the setup commit, as the harness reads it."""
    for rel in paths:
        path = checkout / rel
        if path.is_file():
            return yml_requirements(path.read_text(encoding="utf-8", errors="replace"), rel, table)
    raise EnvUnavailable(f"none of the environment files {', '.join(paths) or '(none named)'} is in the checkout")
