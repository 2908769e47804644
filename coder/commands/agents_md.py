"""`/init`: an AGENTS.md drafted from what the repository shows, without asking a model.

Deterministic on purpose: it works offline, costs nothing, and gives the user a factual skeleton (languages,
layout, how to build and test, the main definitions from the code index) to correct, rather than prose a model
guessed. The code index (`coder.codeintel`) is used when present; without it the layout section still stands.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path

from coder.codeintel.index import CodeIndex
from coder.fs.beneath import WorkspaceFS, read_beneath
from coder.host import TimeoutExpired
from coder.host import git as hostgit

EXT_LANG = {".py": "Python", ".js": "JavaScript", ".jsx": "JavaScript", ".ts": "TypeScript", ".tsx": "TypeScript",
            ".go": "Go", ".rs": "Rust", ".java": "Java", ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++",
            ".hpp": "C++", ".rb": "Ruby", ".sh": "Shell", ".kt": "Kotlin", ".swift": "Swift", ".php": "PHP"}
MAP_BUDGET = 1200


def repo_files(root: Path, limit: int = 20_000) -> list[str]:
    try:
        out = hostgit.run(root, ["ls-files", "-co", "--exclude-standard"], timeout=30)
        if out.returncode == 0:
            return out.stdout.splitlines()[:limit]
    except (OSError, TimeoutExpired):
        pass
    files = []
    for path in root.rglob("*"):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.is_file():
            files.append(path.relative_to(root).as_posix())
            if len(files) >= limit:
                break
    return files


def _read(root: Path, name: str) -> str:
    """A project file at the top of `root`, read beneath it: a link out, a FIFO or anything but a regular file
    reads as empty (the checkout may be hostile), and so does text that is not UTF-8."""
    try:
        return (read_beneath(root, name, 1 << 20) or b"").decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _commands(root: Path, files: set[str]) -> list[tuple[str, str]]:
    """(what, command) pairs for building and testing, from the project files that exist."""
    found: list[tuple[str, str]] = []
    if "pyproject.toml" in files:
        try:
            data = tomllib.loads(_read(root, "pyproject.toml"))
        except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # ValueError: a number over 4,300 digits
            data = {}
        project = data.get("project")
        extras = project.get("optional-dependencies") if isinstance(project, dict) else None
        extras = extras if isinstance(extras, dict) else {}
        found.append(("install", "pip install -e '.[dev]'" if "dev" in extras else "pip install -e ."))
        if "pytest" in json.dumps(data) or any(f.startswith("tests/") for f in files):
            found.append(("test", "python -m pytest -q"))
        if "ruff" in json.dumps(data):
            found.append(("lint", "ruff check ."))
    elif "setup.py" in files or "requirements.txt" in files:
        found.append(("install", "pip install -r requirements.txt" if "requirements.txt" in files else
                      "pip install -e ."))
        if any(f.startswith("tests/") or "/test_" in f for f in files):
            found.append(("test", "python -m pytest -q"))
    if "package.json" in files:
        try:
            scripts = json.loads(_read(root, "package.json") or "{}").get("scripts", {})
        except (ValueError, AttributeError):
            scripts = {}
        found.append(("install", "npm install"))
        for name in ("build", "test", "lint"):
            if name in scripts:
                found.append((name, f"npm run {name}" if name != "test" else "npm test"))
    if "Cargo.toml" in files:
        found += [("build", "cargo build"), ("test", "cargo test")]
    if "go.mod" in files:
        found += [("build", "go build ./..."), ("test", "go test ./...")]
    if "Makefile" in files:
        targets = re.findall(r"^([A-Za-z][\w-]*):", _read(root, "Makefile"), re.MULTILINE)
        for name in ("build", "test", "lint", "check"):
            if name in targets:
                found.append((name, f"make {name}"))
    return found


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _layout(files: list[str]) -> list[str]:
    tops: Counter[str] = Counter()
    for f in files:
        tops[f.split("/", 1)[0] + ("/" if "/" in f else "")] += 1
    rows = []
    for name, count in sorted(tops.items(), key=lambda kv: (not kv[0].endswith("/"), kv[0]))[:40]:
        rows.append(f"- `{name}`" + (f" ({_files(count)})" if name.endswith("/") else ""))
    return rows


def _repo_map(root: Path) -> str:
    try:
        index = CodeIndex.open(root)
        try:
            return index.repo_map(MAP_BUDGET)
        finally:
            index.close()
    except Exception:  # noqa: BLE001 - the map is a bonus; /init must still write the file
        return ""


def draft(root: Path) -> str:
    files = repo_files(root)
    fileset = set(files)
    langs = Counter(EXT_LANG[Path(f).suffix] for f in files if Path(f).suffix in EXT_LANG)
    lang_text = ", ".join(f"{name} ({_files(n)})" for name, n in langs.most_common(5)) or "no source files found"
    out = [f"# AGENTS.md: working on {root.name}", "",
           "Drafted by `coder /init` from the repository's files; correct what is wrong and add what a newcomer "
           "must know (conventions, traps, who owns what).", "",
           "## Languages", lang_text, "", "## Build and test"]
    commands = _commands(root, fileset)
    out += [f"- {what}: `{cmd}`" for what, cmd in commands] or ["- (no build or test setup detected)"]
    out += ["", "## Layout"] + _layout(files)
    repo_map = _repo_map(root)
    if repo_map.strip():
        out += ["", "## Main definitions (code index)", "```", repo_map.strip(), "```"]
    out += ["", "## Conventions", "- (style, naming, error handling, test rules: fill in)", ""]
    return "\n".join(out)


def write_agents_md(root: Path, force: bool = False) -> tuple[Path, bool]:
    """Write `root/AGENTS.md`; (path, False) when it exists and `force` is not set."""
    path = root / "AGENTS.md"
    with WorkspaceFS(root) as fs:
        if fs.kind("AGENTS.md") is not None and not force:
            return path, False
        # beneath the workspace: a random temporary name, never through a link (a planted one is replaced)
        fs.write_atomic("AGENTS.md", draft(root).encode("utf-8"))
    return path, True
