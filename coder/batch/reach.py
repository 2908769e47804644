"""What an instance's agent could reach, and whether its trajectory reached for more (issue 44).

Three parts, each recorded in the instance's status (`reach`, `flags`) and shown by `coder swebench report`:

- **The workspace's git**, measured on the host right after the workspace is made (before the agent): every
  object of its store (`cat-file --batch-all-objects`, which sees loose and packed objects, reachable or not),
  how many of its commits are not ancestors of the base (must be 0; the objects of its alternates, a checkpoint's
  store, are listed and checked too), the newest commit date against the base's, its refs and alternates, and
  the same for each submodule at its gitlink commit (coder/batch/workspace.py makes them past-only; this checks
  it where it matters).
- **The sandbox's view**: the paths hidden from the agent (`[sandbox] hide`: the mirrors, the dataset, the run
  folder with the other instances and the predictions, the caches, local package indexes, and every installed
  release of the project found in a site-packages the sandbox shows, such as a toolchain's `flask-3.1.3`), then
  a probe in a sandbox of the agent's configuration that tries entries of each and lists what it still sees; and
  the network the agent's shell was granted.
- **The trajectory**: the agent's tool inputs scanned for git commands that look past HEAD (`--all`, `reflog`,
  `fsck`, `--batch-all-objects`, pack files, fetches), URLs of other hosts, package-index options, and hidden
  paths (in inputs and outputs). Flags are advisory: a flagged run that found nothing is still clean by the git
  record; the pair says whether the number can be trusted.

What it cannot see: files outside the patterns above that hold the project's future (a copy of the repository
somewhere under /opt), and a sandbox configured by the user beyond what the batch gives the agent.
"""

from __future__ import annotations

import configparser
import glob
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from coder.batch.trajectory import text_of
from coder.batch.workspace import git
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig, home_binds, outside_home_binds


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def git_reach(repo: Path, base: str) -> dict[str, Any]:
    """The git record of a workspace (or a submodule) whose commit is `base`; `after_base` must be 0."""
    listing = git(repo, "cat-file", "--batch-all-objects", "--unordered",
                  "--batch-check=%(objecttype) %(objectname)")
    kinds: Counter[str] = Counter()
    commits: list[str] = []
    for line in listing.splitlines():
        kind, _, oid = line.partition(" ")
        kinds[kind] += 1
        if kind == "commit":
            commits.append(oid)
    listed = "".join(c + "\n" for c in commits)
    after = git(repo, "rev-list", "--stdin", input=f"{listed}^{base}\n").split() if commits else []
    dates = [int(d) for d in git(repo, "log", "--no-walk=unsorted", "--stdin", "--format=%ct",
                                 input=listed).split()] if commits else []
    base_date = int(git(repo, "log", "-1", "--format=%ct", base).strip() or 0)
    alternates_file = Path(git(repo, "rev-parse", "--git-path", "objects/info/alternates").strip())
    alternates = (repo / alternates_file).read_text(encoding="utf-8").split() if (repo / alternates_file).is_file() \
        else []
    submodules = {}
    for line in git(repo, "ls-files", "-s").splitlines():
        mode, oid, _stage_path = line.split(" ", 2)
        path = _stage_path.split("\t", 1)[1]
        if mode == "160000" and (repo / path / ".git").exists():
            submodules[path] = git_reach(repo / path, oid)
    return {"base": base, "base_date": _iso(base_date), "newest_commit_date": _iso(max(dates, default=base_date)),
            "commits": len(commits), "objects": sum(kinds.values()), "after_base": len(after),
            "refs": git(repo, "for-each-ref", "--format=%(refname)").split(), "alternates": alternates,
            "submodules": submodules}


def future_in_reach(record: dict[str, Any]) -> int:
    """Commits after the base in the record, submodules included (the objects of alternates are counted in
    `after_base`: `--batch-all-objects` lists them, so a checkpoint's store passes and a mirror does not)."""
    own = int(record.get("after_base", 0))
    return own + sum(future_in_reach(sub) for sub in (record.get("submodules") or {}).values())


# -- what the sandbox shows -----------------------------------------------------------------------------------------

#: pip's configuration files, system to user (pip's own order); PIP_CONFIG_FILE comes on top
PIP_CONFIGS = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "~/.config/pip/pip.conf", "~/.pip/pip.conf")
PIP_KEYS = ("find-links", "index-url", "extra-index-url")


def local_indexes() -> list[str]:
    """Folders of the package indexes pip is configured with that are local (a path or file:// URL): a
    `file:///opt/pypi/simple` index hides `/opt/pypi`, where its `../files` are."""
    values: list[str] = []
    parser = configparser.ConfigParser(interpolation=None)
    parser.read([os.path.expanduser(p) for p in (*PIP_CONFIGS, os.environ.get("PIP_CONFIG_FILE", ""))
                 if p and p != os.devnull])
    for section in parser.sections():
        values += [parser.get(section, key) for key in PIP_KEYS if parser.has_option(section, key)]
    values += [os.environ.get(f"PIP_{key.upper().replace('-', '_')}", "") for key in PIP_KEYS]
    found: list[str] = []
    for value in values:
        for item in value.split():
            path = unquote(urlparse(item).path) if item.startswith("file:") else item
            if not path.startswith("/") or not os.path.exists(path):
                continue
            folder = Path(path) if os.path.isdir(path) else Path(path).parent
            found.append(str(folder.parent if folder.name == "simple" else folder))
    return list(dict.fromkeys(found))


def dataset_paths(dataset: str) -> list[str]:
    """What holds a dataset's answers (test patches, the hidden tests' names): the file or folder named, and the
    Hugging Face caches `datasets` reads a dataset named by the Hub from."""
    named = Path(dataset).expanduser()
    hub = [os.environ.get("HF_DATASETS_CACHE"), os.environ.get("HF_HOME"),
           os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")]
    return ([str(named.resolve())] if named.exists() else []) + [p for p in hub if p]


#: where an installed Python package may sit in what the sandbox binds (the system, toolchains, /opt prefixes)
SITE_GLOBS = ("/usr/lib/python*/*-packages", "/usr/local/lib/python*/*-packages", "/opt/*/lib/python*/site-packages",
              "/opt/*/*/lib/python*/site-packages", "~/.pyenv/versions/*/lib/python*/site-packages",
              "~/.local/lib/python*/site-packages", "~/.local/share/uv/python/*/lib/python*/site-packages")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(repo: str) -> str:
    """The distribution a repository publishes, as PyPI normalizes names (`pallets/flask` -> `flask`)."""
    return _normal(repo.rsplit("/", 1)[-1])


#: where a site-packages sits inside a folder the sandbox binds (a prefix, pyenv's root, a folder of prefixes)
PREFIX_GLOBS = ("lib/python*/*-packages", "versions/*/lib/python*/site-packages", "*/lib/python*/site-packages")


def project_releases(project: str, roots: list[str]) -> list[str]:
    """Paths of installed distributions of `project` (the metadata folder and its top-level packages) in every
    site-packages of SITE_GLOBS, of `roots` (the environment) and of the toolchains the sandbox binds from HOME
    and from PATH (coder/sandbox/profile.py: a pyenv outside HOME is bound by its shims' PATH entry), and its
    wheels and sdists in the system's folders (a local index pip's configuration may not name): a release newer
    than the base in reach."""
    home, path = Path(os.environ.get("HOME") or os.path.expanduser("~")), os.environ.get("PATH", "")
    bound = [str(p) for p in (*home_binds(home, path), *outside_home_binds(home, path))]
    sites = [s for pattern in SITE_GLOBS for s in glob.glob(os.path.expanduser(pattern))]
    sites += [s for root in [*roots, *bound] for pattern in PREFIX_GLOBS
              for s in glob.glob(os.path.join(root, pattern))]
    found: list[str] = _archives(project, [*ARCHIVE_ROOTS, *bound])
    for site in dict.fromkeys(sites):
        for meta in glob.glob(os.path.join(site, "*.dist-info")) + glob.glob(os.path.join(site, "*.egg-info")):
            if _normal(os.path.basename(meta).split("-", 1)[0].removesuffix(".egg")) != project:
                continue
            top = Path(meta) / "top_level.txt"
            names = top.read_text(encoding="utf-8", errors="replace").split() if top.is_file() else [project]
            found.append(meta)
            for name in names:
                found += [p for p in (os.path.join(site, name), os.path.join(site, name + ".py")) if os.path.exists(p)]
    return found


#: system folders where wheels and sdists are kept (a local index's files, Debian's python-wheels), searched a few
#: levels down with the bound toolchains for archives of the project, whatever pip's configuration says
ARCHIVE_ROOTS = ("/opt", "/srv", "/usr/local/share", "/usr/share/python-wheels")
_ARCHIVE = re.compile(r"^(.+?)-\d[^/]*\.(whl|tar\.gz|tar\.bz2|zip|egg)$", re.IGNORECASE)


def _archives(project: str, roots: list[str], depth: int = 4) -> list[str]:
    """Wheels and sdists of `project` under `roots` (at most `depth` folders down)."""
    found: list[str] = []
    for root in roots:
        base = root.rstrip("/").count("/")
        for folder, dirs, files in os.walk(root):
            if folder.count("/") - base >= depth:
                dirs.clear()
            found += [os.path.join(folder, f) for f in files
                      if (m := _ARCHIVE.match(f)) and _normal(m.group(1)) == project]
    return found


def sandbox_view(hidden: list[str], exposed: list[str], extra_ro: list[str], workspace: Path) -> list[str]:
    """What of `hidden` a sandbox of the agent's configuration still shows: up to five entries of each hidden
    folder (not on the way to a path bound again on purpose, `exposed`) and each hidden file, tried inside."""
    tries: list[str] = []
    keep = [Path(p) for p in exposed]
    for path in hidden:
        p = Path(os.path.realpath(path))
        if p.is_dir():
            entries = sorted(p.iterdir())[:50]
            tries += [str(e) for e in entries if not any(e == k or e in k.parents for k in keep)][:5]
        elif p.exists():
            tries.append(str(p))
    if not tries:
        return []
    script = "for p in " + " ".join(_quote(t) for t in tries) + '; do [ -e "$p" ] && [ -s "$p" -o -d "$p" ] && ' \
             '{ [ ! -d "$p" ] || [ -n "$(ls -A "$p" 2>/dev/null)" ]; } && echo "SEEN $p"; done; true'
    result = run_sandboxed(script, workspace, SandboxConfig(hide=hidden, extra_ro=extra_ro), 60)
    return [line[5:] for line in result.output.splitlines() if line.startswith("SEEN ")]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- the trajectory -------------------------------------------------------------------------------------------------

_GIT = r"\bgit\b[^\n;|&]*?"
#: (flag, pattern) over the agent's tool inputs: reaching past HEAD's history, other hosts, package indexes
INPUT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((flag, re.compile(pattern)) for flag, pattern in (
    ("git: every ref", _GIT + r"\s--(all|branches|tags|remotes|glob|reflog)\b"),
    ("git: reflog", _GIT + r"\b(reflog|log\s+(-\S+\s+)*-g)\b"),
    ("git: unreachable objects", _GIT + r"\b(fsck|lost-found|unpack-objects|verify-pack|show-index)\b"),
    ("git: every object", r"--batch-all-objects|" + _GIT + r"\brev-list\b[^\n;|&]*--objects"),
    ("git: refs", _GIT + r"\b(show-ref|for-each-ref|ls-remote|notes|stash\s+list|branch\s+(-a|-r|--all))\b"),
    ("git: fetch", _GIT + r"\b(fetch|pull|clone|remote\s+add)\b"),
    ("git: internals", r"\.git/(objects|packed-refs|refs/|logs|FETCH_HEAD|ORIG_HEAD|modules/|shallow)"),
    ("package index", r"\bpip3?\b[^\n;|&]*\s(-i|--index-url|--extra-index-url|-f|--find-links)\b"),
))
_URL = re.compile(r"\b(?:https?|ftp|git|ssh)://([A-Za-z0-9.-]+)")
_LOCAL = {"localhost", "127.0.0.1", "0.0.0.0"}


def _calls(events: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """(turn, input as text, output) of each tool call, in order."""
    calls: list[tuple[int, str, str]] = []
    outputs: dict[str, str] = {}
    turn = 0
    for ev in events:
        if ev.get("type") == "tool_call_finished":
            outputs[str(ev.get("tool_use_id") or ev.get("id") or "")] = text_of(ev.get("output"))
    for ev in events:
        if ev.get("type") != "assistant_message":
            continue
        turn += 1
        content = (ev.get("message") or {}).get("content") if isinstance(ev.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                text = " ".join(str(v) for v in (block.get("input") or {}).values() if isinstance(v, str))
                calls.append((turn, text, outputs.get(str(block.get("id") or ""), "")))
    return calls


def _outside(text: str, hidden: list[str], exposed: list[str]) -> list[str]:
    """Paths under a hidden one that `text` names, unless under a path bound again on purpose (the workspace)."""
    found: list[str] = []
    for path in hidden:
        for rest in re.findall(re.escape(path) + r"([^\s'\"`;|&()<>,]*)", text):
            rest = rest.rstrip(".:")
            if rest and not rest.startswith("/"):
                continue  # a sibling that only starts alike (`run` and `run.scripts`)
            token = path + rest
            if not any(token == e or token.startswith(e.rstrip("/") + "/") for e in exposed):
                found.append(path)
                break
    return found


def scan_trajectory(events: list[dict[str, Any]], hidden: list[str], exposed: list[str]) -> list[dict[str, Any]]:
    """The flags of a trajectory: {flag, turn, evidence} per tool call that reached past the instance."""
    flags: list[dict[str, Any]] = []
    for turn, text, output in _calls(events):
        found = [flag for flag, pattern in INPUT_PATTERNS if pattern.search(text)]
        found += [f"host: {host}" for host in dict.fromkeys(_URL.findall(text)) if host not in _LOCAL]
        found += [f"outside path: {path}" for path in _outside(f"{text}\n{output}", hidden, exposed)]
        flags += [{"flag": flag, "turn": turn, "evidence": text[:200]} for flag in found]
    return flags


# -- per instance ---------------------------------------------------------------------------------------------------

def instance_reach(ws: Path, git_record: dict[str, Any], repo: str, run_hide: list[str], agent_env: dict[str, str],
                   network_presets: list[str]) -> tuple[dict[str, Any], list[str], list[str]]:
    """Before the agent starts: what it will be kept from (the run's list, local package indexes, the project's
    installed releases), what a sandbox of its configuration still shows of that, its network, and `git_record`
    (git_reach of the fresh workspace). Returns (the record, the paths to hide, the paths shown on purpose)."""
    extra_ro = [p for p in agent_env.get("CODER_SANDBOX_EXTRA_RO", "").split(os.pathsep) if p]
    releases = project_releases(project_name(repo), extra_ro)
    hidden = list(dict.fromkeys([*run_hide, *local_indexes(), *releases]))
    exposed = [str(ws), *extra_ro]
    record = {"git": git_record, "hidden": hidden, "project_releases": releases,
              "visible": sandbox_view(hidden, exposed, extra_ro, ws),
              "network": {"presets": list(network_presets), "index": bool(network_presets)}}
    return record, hidden, exposed


def reach_flags(record: dict[str, Any]) -> list[str]:
    """Why a workspace was not clean before the agent began: future commits, hidden paths still seen, a network."""
    out = []
    if future_in_reach(record.get("git") or {}):
        out.append(f"future commits in reach: {future_in_reach(record['git'])}")
    out += [f"visible: {path}" for path in record.get("visible") or []]
    if (record.get("network") or {}).get("presets"):
        out.append("network: " + ", ".join(record["network"]["presets"]) + " (an index serves newer releases)")
    return out
