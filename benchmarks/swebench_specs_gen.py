"""Regenerate `coder/batch/data/swebench_specs.json` from the SWE-bench harness itself, never by hand.

The harness publishes what it installs per repository and version in `swebench/harness/constants/python.py`
(MAP_REPO_VERSION_TO_SPECS_PY, MAP_REPO_TO_REQS_PATHS, MAP_REPO_TO_ENV_YML_PATHS) and which log parser grades
each repository in `swebench/harness/log_parsers/python.py` (MAP_REPO_TO_PARSER_PY). swebench 5 moved the specs
out of the package (its dataset rows carry an `eval_script` instead), so the last release that has them,
swebench 4.1.0, is the source. Both modules are read from the PyPI wheel (`pip download --no-deps`), the
constants module executed on its own (it imports nothing): the package itself is not installed, since it pulls
in docker, modal and datasets, none of which coder needs.

    python benchmarks/swebench_specs_gen.py            # downloads swebench==4.1.0 into a temp dir
    python benchmarks/swebench_specs_gen.py --wheel W  # or reads a wheel you have

Our own verdicts and pins (Python the venv may use instead, constraints of the harness's era) live apart, in
`coder/batch/data/swebench_local.json`, so this file stays exactly the harness's data.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = "4.1.0"
OUT = Path(__file__).resolve().parent.parent / "coder" / "batch" / "data" / "swebench_specs.json"
CONSTANTS = "swebench/harness/constants/python.py"
PARSERS = "swebench/harness/log_parsers/python.py"


def _wheel(given: str | None, tmp: Path) -> Path:
    if given:
        return Path(given)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp),
                    f"swebench=={VERSION}"], check=True)
    return next(tmp.glob("swebench-*.whl"))


def _parsers(text: str) -> dict[str, str]:
    """repo -> parser name, from the MAP_REPO_TO_PARSER_PY literal (read, not imported: it imports the package)."""
    block = text.split("MAP_REPO_TO_PARSER_PY = {", 1)[1].split("}", 1)[0]
    return dict(re.findall(r'"([^"]+)":\s*(parse_log_\w+)', block))


def generate(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        constants = zf.read(CONSTANTS).decode()
        parsers = _parsers(zf.read(PARSERS).decode())
    ns: dict = {}
    exec(compile(constants, CONSTANTS, "exec"), ns)  # noqa: S102 - the harness's own data module, no imports
    specs, reqs = ns["MAP_REPO_VERSION_TO_SPECS_PY"], ns["MAP_REPO_TO_REQS_PATHS"]
    ymls = ns["MAP_REPO_TO_ENV_YML_PATHS"]
    repos = {}
    for repo in sorted(specs):
        if repo == "swe-bench/humaneval":
            continue
        entry = {"log_parser": parsers.get(repo, "parse_log_pytest")}
        if repo in reqs:
            entry["requirements_paths"] = reqs[repo]
        if repo in ymls:
            entry["env_yml_paths"] = ymls[repo]
        entry["versions"] = {v: specs[repo][v] for v in sorted(specs[repo], key=_version_key)}
        repos[repo] = entry
    return {
        "_source": f"SWE-bench harness, swebench {VERSION} (PyPI wheel {wheel.name}), {CONSTANTS} "
                   "(MAP_REPO_VERSION_TO_SPECS_PY, MAP_REPO_TO_REQS_PATHS, MAP_REPO_TO_ENV_YML_PATHS) and "
                   f"{PARSERS} (MAP_REPO_TO_PARSER_PY); MIT",
        "_generated_by": "benchmarks/swebench_specs_gen.py",
        "default": {"test_cmd": "pytest -rA", "log_parser": "pytest"},
        "repos": repos,
    }


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.findall(r"\d+", v)) or (0,)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", help="a swebench 4.x wheel (default: pip download it)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table = generate(_wheel(args.wheel, Path(tmp)))
    args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    n = sum(len(e["versions"]) for e in table["repos"].values())
    print(f"{args.out}: {len(table['repos'])} repositories, {n} versions ({table['_source'][:40]}...)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
