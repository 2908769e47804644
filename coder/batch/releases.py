"""Releases of the project in reach of an instance's agent (issue 44): installed distributions, archives and
vendored copies in what the agent's sandbox shows, found by walking it rather than by a list of known layouts.

A site-packages is any folder of that name WALK_DEPTH levels under the system's folders, the toolchains the
sandbox binds from HOME and PATH (coder/sandbox/profile.py decides which) and the environment's folders: pyenv's
versions and their virtualenvs, uv's pythons and tools, pipx's venvs, conda's envs and its extracted `pkgs`
alike. A distribution's top-level packages are those of its top_level.txt and of its RECORD, which every wheel
has (meson-python's, flit's and hatch's wheels have no top_level.txt). coder/batch/reach.py hides them.
"""

from __future__ import annotations

import glob
import os
import re
from functools import lru_cache
from pathlib import Path

from coder.sandbox.profile import home_binds, outside_home_binds

#: where an installed Python package may sit in the system's folders (walking /usr/lib would take seconds)
SITE_GLOBS = ("/usr/lib/python*/*-packages", "/usr/local/lib/python*/*-packages", "~/.local/lib/python*/site-packages")
#: folders walked for every site-packages (a prefix, pyenv's versions and their virtualenvs, uv's pythons and
#: tools, pipx's venvs, conda's envs and extracted pkgs) and archive of the project, with the toolchains the
#: sandbox binds from HOME and PATH and the environment's folders: WALK_DEPTH levels down
WALK_ROOTS = ("/opt", "/srv", "/usr/local/share", "/usr/share/python-wheels")
WALK_DEPTH = 7
_SITE_NAMES = ("site-packages", "dist-packages")
_ARCHIVE = re.compile(r"^(.+?)-\d[^/]*\.(whl|tar\.gz|tar\.bz2|zip|egg|conda)$", re.IGNORECASE)
_CONDA_PKG = re.compile(r"^(.+?)-\d[^/-]*-[^/-]+$")  # an extracted conda package: pkgs/NAME-VERSION-BUILD
#: where a package vendors another (pip/_vendor/requests, setuptools/_vendor/packaging, six's moves aside)
VENDOR_GLOBS = ("*/_vendor/{}", "*/_vendored/{}", "*/vendor/{}", "*/extern/{}", "*/*/_vendor/{}")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(repo: str) -> str:
    """The distribution a repository publishes, as PyPI normalizes names (`pallets/flask` -> `flask`)."""
    return _normal(repo.rsplit("/", 1)[-1])


def _walk(roots: list[str]) -> tuple[list[str], list[str]]:
    """(the site-packages folders, the archives and extracted conda packages) under `roots`."""
    sites: list[str] = []
    archives: list[str] = []
    for root in dict.fromkeys(roots):
        base = root.rstrip("/").count("/")
        for folder, dirs, files in os.walk(root):
            if os.path.basename(folder) in _SITE_NAMES:
                sites.append(folder)
                dirs.clear()
                continue
            if folder.count("/") - base >= WALK_DEPTH:
                dirs.clear()
            dirs[:] = [d for d in dirs if d not in (".git", "node_modules", "__pycache__")]
            archives += [os.path.join(folder, f) for f in files if _ARCHIVE.match(f)]
            if os.path.basename(folder) == "pkgs":
                archives += [os.path.join(folder, d) for d in dirs if _CONDA_PKG.match(d)]
    return sites, archives


@lru_cache(maxsize=8)
def _system_listing(home: str, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """_walk of the system's folders and the bound toolchains: the same for every instance of a run, so walked
    once per process."""
    bound = [str(p) for p in (*home_binds(Path(home), path), *outside_home_binds(Path(home), path))]
    sites, archives = _walk([*WALK_ROOTS, *bound])
    sites = [s for pattern in SITE_GLOBS for s in glob.glob(os.path.expanduser(pattern))] + sites
    return tuple(dict.fromkeys(sites)), tuple(archives)


def _listing(roots: list[str]) -> tuple[list[str], list[str]]:
    """Every site-packages and archive the agent's sandbox shows: the system's and toolchains' (cached) and those
    of `roots` (the environment's folders)."""
    home, path = os.environ.get("HOME") or os.path.expanduser("~"), os.environ.get("PATH", "")
    system_sites, system_archives = _system_listing(home, path)
    sites, archives = _walk(roots)
    return list(dict.fromkeys([*system_sites, *sites])), list(dict.fromkeys([*system_archives, *archives]))


def _top_level(meta: Path) -> list[str]:
    """The top-level packages and modules of an installed distribution: those of top_level.txt and the first part
    of each path its RECORD lists (every wheel has one; meson-python's, flit's and hatch's wheels have no
    top_level.txt: scikit-learn's `sklearn`)."""
    names: list[str] = []
    top, record = meta / "top_level.txt", meta / "RECORD"
    if top.is_file():
        names += top.read_text(encoding="utf-8", errors="replace").split()
    if record.is_file():
        for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
            first = line.split(",", 1)[0].strip('"').split("/", 1)[0]
            if first and first not in ("..", "__pycache__") and not first.endswith((".dist-info", ".data")):
                names.append(first)
    return list(dict.fromkeys(names))


def project_releases(project: str, roots: list[str]) -> list[str]:
    """Paths of installed distributions of `project` (the metadata folder and its top-level packages) in every
    site-packages the sandbox shows (the system's, the toolchains it binds from HOME and from PATH, which
    coder/sandbox/profile.py decides, and `roots`, the environment), and its wheels, sdists, conda archives and
    extracted conda packages there (a local index pip's configuration may not name, conda's pkgs): a release
    newer than the base in reach."""
    sites, archives = _listing(roots)
    found = [a for a in archives if _archive_project(a) == project]
    for site in sites:
        for meta in glob.glob(os.path.join(site, "*.dist-info")) + glob.glob(os.path.join(site, "*.egg-info")):
            if _normal(os.path.basename(meta).split("-", 1)[0].removesuffix(".egg")) != project:
                continue
            found.append(meta)
            for name in _top_level(Path(meta)) or [project, project.replace("-", "_")]:
                found += [p for p in (os.path.join(site, name), os.path.join(site, name + ".py")) if os.path.exists(p)]
    return list(dict.fromkeys(found))


def _archive_project(path: str) -> str:
    """The project an archive or an extracted conda package is of, normalized."""
    found = _ARCHIVE.match(os.path.basename(path)) or _CONDA_PKG.match(os.path.basename(path))
    return _normal(found.group(1)) if found else ""


def vendored_copies(project: str, roots: list[str]) -> list[str]:
    """Copies of `project` another package vendors in a site-packages the sandbox shows (pip's
    `_vendor/requests`: every pyenv version and every venv's pip holds a requests years newer than most of
    psf/requests' bases). Not hidden, since pip needs its own copy to run at all: recorded, and a trajectory
    that names one is flagged."""
    name = project.replace("-", "_")
    return [hit for site in _listing(roots)[0] for pattern in VENDOR_GLOBS for each in (name, name + ".py")
            for hit in glob.glob(os.path.join(site, pattern.format(each)))]
