"""What kind of leftover a workspace file is, for the after-command check (coder/sandbox/leftovers.py, which says
each kind's rule): by its name and place, by what the repository's git configuration says (the files it includes,
its `core.hooksPath` folders, the drivers it defines: re-read when a config file git reads moved), and whether a
folder is a venv (or was one at any look: the sandbox can remove `pyvenv.cfg` and `bin/activate`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from coder.host import TimeoutExpired
from coder.host import git as hostgit
from coder.host.gitconfig import Entry, include_targets
from coder.sandbox.watch import file_key
from coder.trust.protected import instruction_reason

#: the names of an importable extension module end so (EXTENSION_SUFFIXES on every platform, and Windows' .pyd)
EXTENSION = (".so", ".pyd")
#: what makes a folder a venv (`activate` works without pyvenv.cfg, and the sandbox can remove either)
VENV_MARKERS = (("pyvenv.cfg",), ("bin", "activate"), ("Scripts", "activate.bat"))
#: each kind, as a finding names it
WHAT = {
    "bytecode": "new or changed bytecode (it runs at the next import, whatever its source says)",
    "instructions": "an instruction file another session or agent would read",
    "executable": "a new or changed program in a folder that goes on PATH (an activated venv, npm run)",
    "pth": "a .pth file (its import lines run at every start of that Python)",
    "hook": "a git hook in the core.hooksPath folder (your next commit runs it)",
    "extension": "a compiled extension module (it runs at the next import, before a .py of the same name)",
    "startup": "a sitecustomize or usercustomize module (it runs at every start of that Python)",
    "venv": "a venv's pyvenv.cfg (its home decides which Python and standard library the venv runs)",
    "hidden": "a conftest.py git ignores (pytest runs it; git status, /diff and the review do not show it)",
}


@dataclass
class GitFacts:
    """What the repository's configuration says about the workspace (re-read when a config file's stat moves)."""

    key: tuple = ()
    targets: frozenset[str] = frozenset()  # workspace-relative files git config includes
    hook_dirs: tuple[str, ...] = ()  # workspace-relative core.hooksPath folders
    drivers: frozenset[str] = frozenset()  # `filter.NAME`, `diff.NAME`, `merge.NAME` defined in any scope


@dataclass
class Kinds:
    """One workspace's sorting of files into kinds."""

    workspace: Path
    git: GitFacts = field(default_factory=GitFacts)
    #: folders ever seen holding a `pyvenv.cfg` or `bin/activate`: a venv stays one when the command removes them
    venvs: set[str] = field(default_factory=set)

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.workspace)

    def kind_of(self, rel: str) -> str | None:
        parts = rel.split("/")
        name = parts[-1]
        if name.endswith(".pyc"):
            return "bytecode"
        if rel in self.git.targets:
            return "gitconfig"
        if instruction_reason(rel):
            return "instructions"
        if name == ".gitattributes":
            return "attributes"
        if any(f"{folder}/".startswith(f"{rel}/") or rel.startswith(f"{folder}/") for folder in self.git.hook_dirs):
            return "hook"  # in the folder, or the folder (or one above it) as a file or link: `.husky/_ -> ../x`
        if len(parts) >= 3 and parts[-2] == ".bin" and parts[-3] == "node_modules":
            return "executable"
        if len(parts) >= 2 and parts[-2] in ("bin", "Scripts") and self._is_venv(parts[:-2]):
            return "executable"
        if name.endswith(".pth") and "site-packages" in parts:
            return "pth"
        if name.endswith(EXTENSION):
            return "extension"
        if name in ("sitecustomize.py", "usercustomize.py"):
            return "startup"
        if name == "pyvenv.cfg":
            return "venv"
        if name == "conftest.py":  # asked only when git ignores it: one git shows is in /diff and the review
            return "hidden"
        return None

    def _is_venv(self, parts: list[str]) -> bool:
        """Whether the folder `parts` is (or was, at any look) a venv: never only what the sandbox leaves now."""
        root = "/".join(parts)
        if root in self.venvs:
            return True
        folder = os.path.join(self.workspace, *parts)
        if any(os.path.isfile(os.path.join(folder, *marker)) for marker in VENV_MARKERS):
            self.venvs.add(root)
            return True
        return False

    def note_venv(self, rel: str) -> None:
        for marker in VENV_MARKERS:
            tail = "/" + "/".join(marker)
            if ("/" + rel).endswith(tail):
                self.venvs.add(rel[:len(rel) - len(tail)].lstrip("/"))

    def _facts_key(self, targets: frozenset[str]) -> tuple:
        """The stats of the config files the facts came from (a target that appears changes it too)."""
        paths = [".git/config", ".git/config.worktree", *sorted(targets)]
        return tuple(file_key(str(self.workspace / p)) for p in paths) + (os.environ.get("GIT_CONFIG_GLOBAL"),
                                                                           os.environ.get("HOME"))

    def read_git(self) -> None:
        """Re-read the include targets, hooks folders and drivers when a config file git reads changed."""
        if self.git.key and self._facts_key(self.git.targets) == self.git.key:
            return
        gdir = self.workspace / ".git"
        entries: list[Entry] = []
        if gdir.is_dir() and not gdir.is_symlink():
            try:
                entries = hostgit.config_entries(self.workspace, hostgit.host_git_env(
                    hostgit.pinned_repo(self.workspace)))
            except (OSError, TimeoutExpired) as exc:
                logging.getLogger("coder").warning("%s: cannot read the git config (%s)", self.workspace, exc)
        root = str(self.workspace)
        targets = frozenset(self.rel(t) for t in include_targets(entries) if t.startswith(root + "/"))
        hooks = []
        for entry in entries:
            if entry.key.lower() == "core.hookspath" and entry.value:
                path = os.path.normpath(os.path.join(root, os.path.expanduser(entry.value)))
                if path.startswith(root + "/"):
                    hooks.append(self.rel(path))
        drivers = frozenset(e.key.rsplit(".", 1)[0].lower() for e in entries if hostgit.DRIVER_KEYS.fullmatch(e.key))
        self.git = GitFacts(self._facts_key(targets), targets, tuple(hooks), drivers)
