"""What an instance's agent could reach, and whether its trajectory reached for more (issue 44).

Three parts, each recorded in the instance's status (`reach`, `flags`) and shown by `coder swebench report`:

- **The workspace's git**, measured on the host right after the workspace is made (before the agent): every
  object of its store (`cat-file --batch-all-objects`, which sees loose and packed objects, reachable or not),
  how many of its commits are not ancestors of the base (must be 0; the objects of its alternates, a checkpoint's
  store, are listed and checked too), the newest commit date against the base's, its refs and alternates, and
  the same for each submodule at its gitlink commit (coder/batch/workspace.py makes them past-only; this checks
  it where it matters).
- **The agent's reach**: what it may reach beyond its workspace is the batch's alone (agent_reach, the layer
  coder/config/layers.py puts over the user's config: a closed network unless `--net-preset`, no MCP server
  unless `--mcp NAME`, web search only with `--web-search`, the extra folders the batch shows it), recorded
  whole and flagged for each grant; the paths hidden from it (`[sandbox] hide`: the mirrors, the dataset, the
  run folder with the other instances and the predictions, the caches, local package indexes, and every release
  of the project in what the sandbox shows: coder/batch/releases.py), then a probe in a sandbox of the agent's
  configuration that tries entries of each and lists what it still sees. The project's vendored copies (pip's
  `_vendor/requests`) are recorded, not hidden: pip needs its own.
- **The trajectory**: the agent's tool inputs scanned for git commands that look past HEAD (`--all`, `reflog`,
  `fsck`, `--batch-all-objects`, pack files, fetches), hosts (with or without a scheme), package-index options,
  hidden paths and vendored copies (in inputs and outputs), MCP and web tools; and the hosts coder's proxy let
  through, as it recorded them. Flags are advisory: a flagged run that found nothing is still clean by the git
  record; the pair says whether the number can be trusted.

What it cannot see: files that hold the project's future and are neither a git object, an index, an installed
distribution, an archive nor a vendored copy (a source tree of the project somewhere under /opt); commands that
reach past the instance in ways the patterns do not name (the git record and the hidden paths make that
pointless, the network record does not depend on them).
"""

from __future__ import annotations

import configparser
import os
import re
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from coder.base.errors import UsageError
from coder.batch.releases import project_name, project_releases, vendored_copies
from coder.batch.trajectory import text_of
from coder.batch.workspace import git
from coder.config.layers import CLOSED_REACH, load_config
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig


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
_NAME = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,63}|\d{1,3}(?:\.\d{1,3}){3}"
#: a host named in a tool input: after any scheme (`https://`, a spliced `'ht'+'tp://'`), as git's `user@host:`,
#: or bare before a port or a path (`curl -s github.com:443/x`); then any argument of a network client that is a name
_URL = re.compile(rf"[A-Za-z][\w+.-]*://(?:[^@/\s'\"]*@)?({_NAME})|@({_NAME}):|(?<![\w./@:-])({_NAME})(?=:\d|/)")
_CLIENT = re.compile(r"(?:^|[\s;|&(`'\"])(?:curl|wget|nc|ncat|netcat|telnet|ssh|scp|sftp|rsync|ftp|ping|dig|nslookup|"
                     r"aria2c|lynx|w3m)[ \t]([^\n;|&]*)")
#: a bare name ending so is a file (`app.py:12`, `docs/index.md`), not a host
_FILE_SUFFIXES = frozenset("py pyi pyx pxd js ts md rst txt cfg ini toml json yaml yml sh html css log out diff patch "
                           "lock go rs java rb cpp hpp cc in pth whl gz bz2 xz zip tar egg so xml csv".split())
_LOCAL = {"localhost", "127.0.0.1", "0.0.0.0"}


def hosts_named(text: str) -> list[str]:
    """The other hosts a tool input names (loopback and file names aside)."""
    found = [(m.group(3) is not None, next(g for g in m.groups() if g)) for m in _URL.finditer(text)]
    for args in _CLIENT.findall(text):
        found += [(True, t) for t in (t.strip("()'\"`,") for t in args.split()) if re.fullmatch(_NAME, t)]
    hosts = [host.lower() for bare, host in found if not (bare and host.rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES)]
    return [h for h in dict.fromkeys(hosts) if h not in _LOCAL]


def _calls(events: list[dict[str, Any]]) -> list[tuple[int, str, str, str]]:
    """(turn, tool name, input as text, output) of each tool call, in order; a server tool's (the provider's web
    search) as `server:NAME`."""
    calls: list[tuple[int, str, str, str]] = []
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
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                text = " ".join(str(v) for v in (block.get("input") or {}).values() if isinstance(v, str))
                name = ("server:" if block["type"] == "server_tool_use" else "") + str(block.get("name") or "")
                calls.append((turn, name, text, outputs.get(str(block.get("id") or ""), "")))
    return calls


def _reached(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(turn, host) of each host coder's domain proxy let a command, a fetch or a search backend reach (the
    network as it happened, whatever the command's text looked like)."""
    found, turn = [], 0
    for ev in events:
        turn += ev.get("type") == "assistant_message"
        if ev.get("type") == "network_access" and ev.get("allowed"):
            found.append((turn, f"{ev.get('host')}:{ev.get('port')} ({ev.get('source')})"))
    return found


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


def scan_trajectory(events: list[dict[str, Any]], hidden: list[str], exposed: list[str],
                    vendored: list[str] | None = None) -> list[dict[str, Any]]:
    """The flags of a trajectory: {flag, turn, evidence} per tool call that reached past the instance. `vendored`:
    the project's vendored copies (vendored_copies), named by a call as a path or a module (`pip._vendor.requests`)
    from their package down."""
    flags: list[dict[str, Any]] = []
    copies = {form: tail for tail in dict.fromkeys("/".join(Path(v).parts[-3:]) for v in vendored or [])
              for form in (tail, tail.replace("/", "."))}
    for turn, name, text, output in _calls(events):
        found = [flag for flag, pattern in INPUT_PATTERNS if pattern.search(text)]
        found += [f"host: {host}" for host in hosts_named(text)]
        found += [f"outside path: {path}" for path in _outside(f"{text}\n{output}", hidden, exposed)]
        found += [f"tool: {name}"] if name.startswith(("mcp__", "server:")) else []  # a fetch: _reached
        found += list(dict.fromkeys(f"vendored copy: {tail}" for form, tail in copies.items()
                                    if form in f"{text}\n{output}"))
        flags += [{"flag": flag, "turn": turn, "evidence": text[:200]} for flag in found]
    flags += [{"flag": f"network: {host}", "turn": turn, "evidence": "allowed by coder's proxy"}
              for turn, host in _reached(events)]
    return flags


# -- per instance ---------------------------------------------------------------------------------------------------

def agent_reach(presets: list[str], extra_ro: list[str], mcp_servers: dict[str, Any] | None = None,
                web_search: bool = False) -> dict[str, Any]:
    """What an agent may reach beyond its workspace, as its configuration's reach layer (CLOSED_REACH with these
    grants over it: coder/config/layers.py): the run's network presets, the folders the batch shows it (its
    environment, the borrowed objects), the MCP servers and web search the run asked for. Nothing else: the
    user's own allow-list, folders, servers and CODER_WEB_SEARCH do not reach a batch agent."""
    grants = {"sandbox": {"network_presets": list(presets), "extra_ro": list(dict.fromkeys(extra_ro))},
              "mcp": {"servers": dict(mcp_servers or {})}, "web": {"search": "on" if web_search else "off"}}
    return {section: {**keys, **grants.get(section, {})} for section, keys in CLOSED_REACH.items()}


def granted_servers(names: list[str]) -> dict[str, dict[str, Any]]:
    """The tables of the MCP servers of the user's config a run lets its agents use (`--mcp NAME`)."""
    if not names:
        return {}
    servers = load_config(None).mcp.servers
    for name in names:
        if name not in servers:
            raise UsageError(f"--mcp {name}: your config has no [mcp.servers.{name}] "
                             f"(it has {', '.join(sorted(servers)) or 'none'}).")
    return {name: {k: v for k, v in asdict(servers[name]).items() if v not in (None, [], {})} for name in names}


def instance_reach(ws: Path, git_record: dict[str, Any], repo: str, run_hide: list[str],
                   reach: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """Before the agent starts: what it will be kept from (the run's list, local package indexes, the project's
    installed releases), what a sandbox of its configuration (`reach`, agent_reach's) still shows of that, all
    it may reach (the network, MCP servers, web search), and `git_record` (git_reach of the fresh workspace).
    Returns (the record, the paths to hide, the paths shown on purpose). The project's vendored copies are
    recorded (`vendored`), not hidden; scan_trajectory flags a command that names one."""
    extra_ro = list(reach["sandbox"]["extra_ro"])
    releases = project_releases(project_name(repo), extra_ro)
    hidden = list(dict.fromkeys([*run_hide, *local_indexes(), *releases]))
    exposed = [str(ws), *extra_ro]
    sandbox, presets = reach["sandbox"], list(reach["sandbox"]["network_presets"])
    servers = {name: " ".join([server.get("command") or server.get("url") or "", *server.get("args", [])]).strip()
               for name, server in reach["mcp"]["servers"].items()}
    record = {"git": git_record, "hidden": hidden, "project_releases": releases,
              "vendored": vendored_copies(project_name(repo), extra_ro),
              "visible": sandbox_view(hidden, exposed, extra_ro, ws),
              "network": {"presets": presets, "index": bool(presets), "allowed_domains": sandbox["allowed_domains"],
                          "whole": sandbox["network"], "search": reach["web"]["search"] == "on"},
              "mcp": servers, "extra_ro": extra_ro}
    return record, hidden, exposed


def reach_flags(record: dict[str, Any]) -> list[str]:
    """Why a workspace was not clean before the agent began: future commits, hidden paths still seen, a network,
    web search, MCP servers."""
    out = []
    if future_in_reach(record.get("git") or {}):
        out.append(f"future commits in reach: {future_in_reach(record['git'])}")
    out += [f"visible: {path}" for path in record.get("visible") or []]
    network = record.get("network") or {}
    if network.get("presets"):
        out.append("network: " + ", ".join(network["presets"]) + " (an index serves newer releases)")
    if network.get("search"):
        out.append("web search: on (the web holds the published fix)")
    out += [f"mcp server: {name} ({command}; it answers whatever the agent asks)"
            for name, command in (record.get("mcp") or {}).items()]
    return out
