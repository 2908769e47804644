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

from coder.vcs.repo import OWN_FOLDER, PrivateIndex, Repo, VcsError, copy_index


class TreeProbe:
    """The work tree of one repository, snapshot by snapshot."""

    def __init__(self, repo: Repo, state_dir: Path | None = None) -> None:
        self.repo = repo
        self.base: str | None = None  # the tree when the session's first turn began
        self.last: str | None = None
        folder = Path(tempfile.mkdtemp(prefix="coder-probe-")) if state_dir is None else state_dir
        folder.mkdir(parents=True, exist_ok=True)
        self.index = PrivateIndex(repo, folder / "evidence-index")

    def _tree(self) -> str | None:
        try:
            if not self.index.path.exists() and not copy_index(self.repo.git_dir / "index", self.index.path):
                self.index.read_tree(None)  # no index yet: every file is new
            self.index.add([".", f":(exclude,literal){OWN_FOLDER}"])
            return self.index.write_tree()
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
        return self.repo.changed_paths(previous, tree) if tree != previous else []

    def net(self) -> list[str] | None:
        """Files that differ now from the base (changed and not changed back); None when unknown."""
        if self.base is None or self.last is None:
            return None
        return self.repo.changed_paths(self.base, self.last) if self.last != self.base else []
