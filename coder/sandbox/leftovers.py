"""After a sandboxed command: what it left that runs later, outside the sandbox, shown or refused (issue 43, items
4 and 6).

Many things in a workspace run later with the user's rights, and `git status`, `/diff` and the review never show
most of them (ignored paths). So after every command (and before the next: a background job) the files that
changed since the last look are sorted into kinds, and each kind has one rule:

- bytecode, any `*.pyc` (in `__pycache__` or beside its source): removed. Whatever its source says, a `.pyc` whose
  header matches an untouched source runs at the next import; the sandbox writes none of its own
  (PYTHONDONTWRITEBYTECODE, PIP_NO_COMPILE: coder/sandbox/env.py), and it is only a cache.
- gitconfig, a workspace file the repository's git config includes (`include.path ../.gitconfig`): restored, or
  removed when new, when it sets a key that runs a program (`findings.dangerous_config`); the user's next
  `git status` would run it. Read-only in the sandbox where it exists (coder/sandbox/profile.py).
- attributes, a `.gitattributes`: restored, or removed when new, when it newly selects a filter, diff or merge
  driver that some config defines.
- instructions, an instruction file or folder of any agent at any depth (coder/trust/protected.py): asked;
  refused, restored (removed when new).
- executable, a file in a venv's `bin/` (a folder that holds, or at any look held, a `pyvenv.cfg` or
  `bin/activate`: the sandbox can remove both) or in `node_modules/.bin`: asked; refused, removed.
- venv, a `pyvenv.cfg` (its `home` decides which Python the venv runs): asked; refused, restored or removed.
- pth, a `.pth` in a `site-packages` (an `import` line in it runs at every start of that Python), and startup, a
  `sitecustomize.py` or `usercustomize.py` anywhere (the same, no `.pth` needed): asked; refused, removed.
- extension, a compiled module (`*.so`, `*.pyd`: it runs at the next import, before a `.py` of the same name):
  asked (installs make them); refused, removed.
- hidden, a `conftest.py` git ignores (pytest runs it; a self-ignoring `.gitignore` hides it from git status, /diff
  and the review): asked; refused, removed. One git shows is taken as it is.
- hook, a file in a `core.hooksPath` folder inside the workspace (the next commit runs it), or that folder made a
  link: asked; refused, removed.

A link is what it leads to: an include target that is a link is refused whatever it points to (git follows it),
and a file of a kind reached through a linked folder is undone by removing that link (the sandbox made it).

Asked means the user answers, in every permission mode (auto included): one question for everything one command
left. Nobody to ask (headless, a hook's or the reviewer's sandbox): refused. Changes come from the kernel
(coder/sandbox/watch.py), so a look that finds nothing costs a read; when inotify is missing or overflowed, the tree
is walked and every file of a kind statted; a walk cut at FOLDER_LIMIT folders says the check did not finish.
Files coder itself writes with the user's approval (the editor) are taken as they are (`accept`). Not seen:
anything the model writes that is not of a kind above (a `.py` in site-packages runs at import too: it is code the
user can read, and `git status` of an ignored folder never shows it; a venv made in the sandbox is the model's as
a whole). Each file of a kind is watched itself too: a write through a hard link in a folder not watched is seen.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host import TimeoutExpired
from coder.host import git as hostgit
from coder.sandbox.findings import AfterHooks, Finding, dangerous_config
from coder.sandbox.leftover_kinds import WHAT, Kinds
from coder.sandbox.watch import FOLDER_LIMIT, TreeWatch, Walk, file_key

#: the kinds a command's leftovers are asked about (the rest are dealt with at once)
ASKED = frozenset({"instructions", "executable", "pth", "hook", "extension", "startup", "venv", "hidden"})
#: files of these kinds are kept in memory (at most KEEP_LIMIT bytes each) so a refused change can be undone
RESTORED = frozenset({"instructions", "gitconfig", "attributes", "venv"})
KEEP_LIMIT = 1 << 20
#: an attribute that selects a driver: `filter=NAME`, `diff=NAME`, `merge=NAME`
SELECTS = re.compile(r"(?:^|\s)(filter|diff|merge)=([^\s]+)")
@dataclass
class Leftovers:
    """One workspace's record of the files of a kind: their stats, and the content of those that can be restored."""

    workspace: Path
    watch: TreeWatch | None = None
    keys: dict[str, tuple] = field(default_factory=dict)
    kept: dict[str, bytes] = field(default_factory=dict)
    started: bool = False
    #: the last walk stopped at FOLDER_LIMIT folders: what it did not reach is unchecked, and said so
    truncated: bool = False
    #: the conftest.py files git showed at their last look
    visible: set[str] = field(default_factory=set)
    #: files of a kind whose inode could not be watched (`TreeWatch.watch_file`): statted at every look
    unwatched: set[str] = field(default_factory=set)
    #: what kind each file is (coder/sandbox/leftover_kinds.py)
    kinds: Kinds = field(init=False)

    def __post_init__(self) -> None:
        self.kinds = Kinds(self.workspace)

    # ---- the baseline and each look --------------------------------------------------------------------

    def _take(self, rel: str, kind: str, key: tuple) -> None:
        self.keys[rel] = key
        if self.watch is not None and self.watch.watch_file(str(self.workspace / rel)):
            self.unwatched.discard(rel)
        else:
            self.unwatched.add(rel)
        if kind in RESTORED:
            data = _read(self.workspace / rel)
            if data is not None:
                self.kept[rel] = data

    def _forget(self, rel: str) -> None:
        self.keys.pop(rel, None)
        self.visible.discard(rel)
        self.unwatched.discard(rel)
        self.kept.pop(rel, None)

    def baseline(self) -> None:
        self.kinds.read_git()
        self.watch = TreeWatch(str(self.workspace))
        self.watch.start()
        walk = Walk(str(self.workspace))
        for path in walk:
            self._look_first(path)
        self.truncated = walk.truncated
        conftests = [rel for rel in self.keys if self.kinds.kind_of(rel) == "hidden"]
        self.visible = set(conftests) - self._ignored(conftests)
        for rel in self.kinds.git.targets:  # an include target may sit where the walk does not go
            self._look_first(str(self.workspace / rel))
        self.started = True

    def _look_first(self, path: str) -> None:
        rel = self.kinds.rel(path)
        self.kinds.note_venv(rel)
        kind = self.kinds.kind_of(rel)
        key = file_key(path) if kind else None
        if kind and key is not None:
            self._take(rel, kind, key)

    def check(self, hooks: AfterHooks | None) -> list[Finding]:
        """Everything of a kind that changed since the last look, dealt with by its kind's rule."""
        if not self.started:
            self.baseline()
            return []
        self.kinds.read_git()
        assert self.watch is not None  # made by the baseline
        touched = self.watch.drain()
        if self.watch.broken:  # no inotify, or the queue overflowed: look at everything
            walk = Walk(str(self.workspace))
            touched = set(walk) | {str(self.workspace / rel) for rel in self.keys}
            self.truncated = walk.truncated
            self.watch.close()
            self.watch = TreeWatch(str(self.workspace))
            self.watch.start()
            for rel in self.keys:  # each file watched again
                self._take(rel, "", self.keys[rel])
        touched |= {str(self.workspace / rel) for rel in self.kinds.git.targets | self.unwatched}
        for path in touched:
            self.kinds.note_venv(self.kinds.rel(path))
        found: list[Finding] = []
        changed: list[tuple[str, str, tuple]] = []
        for path in sorted(touched):
            rel = self.kinds.rel(path)
            kind = self.kinds.kind_of(rel)
            if kind is None:
                continue
            key = file_key(path)
            if key == self.keys.get(rel):
                continue
            if key is None:
                self._forget(rel)
                continue
            changed.append((rel, kind, key))
        # a conftest.py seen visible is asked about again when a .gitignore changed (it may hide it now)
        again = sorted(self.visible - {rel for rel, _, _ in changed}) if any(
            os.path.basename(path) == ".gitignore" for path in touched) else []
        hidden = self._ignored([rel for rel, kind, _ in changed if kind == "hidden"] + again)
        asked: list[tuple[str, str]] = [(rel, "hidden") for rel in again if rel in hidden]
        for rel, kind, key in changed:
            if kind == "hidden" and rel not in hidden:
                self._take(rel, kind, key)  # git status, /diff and the review show it
                self.visible.add(rel)
            elif kind in ASKED:
                asked.append((rel, kind))
            else:
                found += self._at_once(rel, kind, key)
        if asked:
            found += self._ask(asked, hooks)
        if self.truncated:
            found.append(Finding(".", f"more than {FOLDER_LIMIT} folders: coder could not look at all of them for "
                                 "files that run later", "not checked: check the workspace before you run anything",
                                 "unchecked"))
        return found

    def _ignored(self, rels: list[str]) -> set[str]:
        """Those of `rels` git ignores (a tracked file never is); all of them when git cannot tell. Outside a
        repository none: nothing there shows any file, so a conftest.py is no more hidden than the rest."""
        if not rels or not os.path.lexists(self.workspace / ".git"):
            return set()
        try:
            proc = hostgit.run(self.workspace, ["check-ignore", "-z", "--stdin"], input="\0".join(rels) + "\0",
                               timeout=120)
        except (OSError, TimeoutExpired):
            return set(rels)
        if proc.returncode > 1:
            return set(rels)
        return set(filter(None, proc.stdout.split("\0")))

    def config_files(self) -> list[str]:
        """The workspace files git's configuration includes (read-only in the sandbox where they exist)."""
        self.kinds.read_git()
        return sorted(self.kinds.git.targets)

    def accept(self, rels: list[str]) -> None:
        """Files coder wrote itself with the user's say (the editor): taken as they are now."""
        for rel in rels:
            kind = self.kinds.kind_of(rel)
            key = file_key(str(self.workspace / rel))
            if kind and key is not None:
                self._take(rel, kind, key)

    # ---- the rules ---------------------------------------------------------------------------------------

    def _at_once(self, rel: str, kind: str, key: tuple) -> list[Finding]:
        if kind == "bytecode":
            return [Finding(rel, WHAT[kind], self._remove(rel), kind)]
        if kind == "gitconfig" and stat.S_ISLNK(key[-1]):  # git reads what it points to: refused, whatever that is
            return [Finding(rel, "a config file your git includes is now a symbolic link (git would read what it "
                             "points to)", self._undo(rel), kind)]
        data = _read(self.workspace / rel) or b""
        if kind == "gitconfig":
            keys = dangerous_config(data)
            what = f"a config file your git includes now sets {', '.join(keys[:4])}"
        else:
            keys = sorted(self._selected(data) - self._selected(self.kept.get(rel, b"")))
            what = f"a .gitattributes now selects the driver(s) {', '.join(keys[:4])} (your git would run them)"
        if not keys:
            self._take(rel, kind, key)
            return []
        return [Finding(rel, what, self._undo(rel), kind)]

    def _selected(self, data: bytes) -> set[str]:
        """The defined drivers an attributes text selects (`diff.x` for `diff=x`)."""
        text = data.decode("utf-8", "replace")
        names = {f"{what}.{name}".lower() for what, name in SELECTS.findall(text)}
        return names & self.kinds.git.drivers

    def _ask(self, asked: list[tuple[str, str]], hooks: AfterHooks | None) -> list[Finding]:
        pending = [Finding(rel, WHAT[kind], "", kind) for rel, kind in asked]
        question = ("The last command left files that run later outside the sandbox, or steer the next session: "
                    + ", ".join(f"{f.path} ({f.kind})" for f in pending[:12])
                    + (f" and {len(pending) - 12} more" if len(pending) > 12 else "")
                    + ". Allow keeps them; deny removes them (an instruction file gets its old content back).")
        keep = False
        if hooks is not None and hooks.ask is not None:
            try:
                keep = hooks.ask(question, pending)
            except Exception as exc:  # noqa: BLE001 - an answer that failed is a refusal, never a crash
                logging.getLogger("coder").warning("the question about leftovers failed: %s", exc)
        found = []
        for finding in pending:
            if keep:
                key = file_key(str(self.workspace / finding.path))
                if key is not None:
                    self._take(finding.path, finding.kind, key)
                done = "kept (you allowed it)"
            else:
                done = self._undo(finding.path) + ("" if hooks is not None and hooks.ask is not None else
                                                   " (nobody could be asked)")
            found.append(Finding(finding.path, finding.what, done, finding.kind))
        return found

    def _undo(self, rel: str) -> str:
        """The old content back when there was one, else the file removed."""
        old = self.kept.get(rel)
        if old is None:
            return self._remove(rel)
        unlinked = self._unlink_folder_link(rel)
        try:
            with WorkspaceFS(self.workspace) as fs:
                fs.write_atomic(rel, old, create_parents=True)
        except (OSError, EscapeError) as exc:
            return f"{unlinked}coder could not restore it ({exc}): check it before you run anything"
        self._take(rel, self.kinds.kind_of(rel) or "", file_key(str(self.workspace / rel)) or ())
        return unlinked + "its previous content restored"

    def _remove(self, rel: str) -> str:
        unlinked = self._unlink_folder_link(rel)
        error = self._unlink(rel)
        if error:
            return f"{unlinked}coder could not remove it ({error}): check it before you run anything"
        self._forget(rel)
        return unlinked.rstrip("; ") or "removed"

    def _unlink_folder_link(self, rel: str) -> str:
        """A symbolic link to a folder on the way to `rel` (the sandbox made it: a file of a kind sits behind it)
        is removed, so the path leads nowhere; what was done, for the report ("" when no link was there)."""
        parts = rel.split("/")
        for n in range(1, len(parts)):
            link = "/".join(parts[:n])
            try:
                target = os.readlink(self.workspace / link)
            except OSError:
                continue  # not a link (or gone): look further down
            error = self._unlink(link)
            if error:
                return f"coder could not remove the link {link} ({error}); "
            self._forget(rel)
            return f"the link {link} (to {target}) that led to it removed; "
        return ""

    def _unlink(self, rel: str) -> str:
        """`rel` itself removed (never what a link points to); why it could not be ("" when it is gone)."""
        try:
            with WorkspaceFS(self.workspace) as fs:
                fs.unlink(rel)
        except FileNotFoundError:
            pass
        except (OSError, EscapeError) as exc:
            return str(exc)
        return ""

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()


def _read(path: Path) -> bytes | None:
    """A regular file's bytes (at most KEEP_LIMIT), never through a link, never blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, KEEP_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
