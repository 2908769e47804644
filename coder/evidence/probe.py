"""Which files a shell command changed: the work tree as a git tree object after each command that may write,
compared with the one before. The snapshot is the checkpoints' (coder/vcs/repo.py `worktree_tree`: tracked and
untracked-not-ignored files, coder's own folder left out), written through a private index that lives as long as
the session, so each snapshot is one `git add -A` over a warm stat cache (only files whose stat changed are read)
and a `write-tree`; the user's index and refs are never written.

An edit reports its files itself; a shell command does not (`sed -i`, `git apply`, a script that writes), so the
tracker asks for a snapshot after each shell line that is not read-only by the policy's list (coder/policy/
readonly.py: `grep`, `cat`, `ls` and the like cannot write), and once more when the turn ends (a background job
may have written meanwhile). Cost on a tree of 20,000 files: benchmarks/evidence.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from coder.vcs.checkpoints import OWN_FOLDER
from coder.vcs.repo import VcsError, changed_paths, copy_index, git_dir, run_git


class TreeProbe:
    """The work tree of one repository, snapshot by snapshot."""

    def __init__(self, root: Path, state_dir: Path | None = None) -> None:
        self.root = root
        self.base: str | None = None  # the tree when the session's first turn began
        self.last: str | None = None
        folder = Path(tempfile.mkdtemp(prefix="coder-probe-")) if state_dir is None else state_dir
        folder.mkdir(parents=True, exist_ok=True)
        self.index = folder / "evidence-index"
        self._env = {"GIT_INDEX_FILE": str(self.index)}

    def _tree(self) -> str | None:
        try:
            if not self.index.exists() and not copy_index(git_dir(self.root) / "index", self.index):
                run_git(self.root, "read-tree", "--empty", env=self._env)  # no index yet: every file is new
            run_git(self.root, "add", "-A", "--", ".", f":(exclude,literal){OWN_FOLDER}", env=self._env)
            return run_git(self.root, "write-tree", env=self._env).stdout.strip()
        except (VcsError, OSError):
            return None  # the repository went away or git failed: this step's changes are unknown

    def changes(self) -> list[str]:
        """Files changed since the previous call (the first call sets the base and returns none)."""
        tree = self._tree()
        if tree is None:
            return []
        previous, self.last = self.last, tree
        if previous is None:
            self.base = tree
            return []
        return changed_paths(self.root, previous, tree) if tree != previous else []

    def net(self) -> list[str] | None:
        """Files that differ now from the base (changed and not changed back); None when unknown."""
        if self.base is None or self.last is None:
            return None
        return changed_paths(self.root, self.base, self.last) if self.last != self.base else []
