"""The isolated trees of a session's background agents that write (issue 36): each made from the session's work
tree as it is at the agent's start (coder/vcs/worktrees.py), in the session's own folder under `[agents]
worktree_dir`, which the janitor claims for this process (coder/engine/agent_janitor.py: a killed process's trees
are swept by the next one); read back when the agent ends (a tree with no change goes at once); a patch nobody
merged saved in the session's state folder before its tree goes.
"""

from __future__ import annotations

from pathlib import Path

from coder.base import paths
from coder.config.sections import AgentsSettings
from coder.engine import agent_janitor
from coder.engine.agent_runs import AgentRun
from coder.vcs import worktrees
from coder.vcs.repo import Repo
from coder.vcs.worktrees import IsolatedTree


def worktree_root(settings: AgentsSettings) -> Path:
    """Where the session's isolated trees go: `[agents] worktree_dir`, else `worktrees` in coder's state folder."""
    return Path(settings.worktree_dir).expanduser() if settings.worktree_dir else paths.state_dir() / "worktrees"


class AgentTrees:
    """One session's trees. Sweeps what killed processes left under the root when made."""

    def __init__(self, settings: AgentsSettings, session_id: str, repo: Repo | None) -> None:
        self.root = worktree_root(settings)
        self.session_id = session_id
        self.repo = repo
        self._janitor: agent_janitor.Janitor | None = None
        agent_janitor.sweep(self.root)

    def make(self, ident: str) -> IsolatedTree:
        """Agent `ident`'s tree, from the work tree as it is now (VcsError when it cannot be made)."""
        assert self.repo is not None
        folder = self.root / self.session_id
        if self._janitor is None:
            agent_janitor.claim(folder)
            self._janitor = agent_janitor.Janitor(folder)
        base = worktrees.base_commit(self.repo)
        return worktrees.create(self.repo, base, folder / ident, ident, self.session_id)

    @staticmethod
    def read_back(run: AgentRun) -> None:
        """What the agent changed in its tree (its sandbox is closed by now); a tree with no change goes."""
        if run.tree is None:
            return
        try:
            run.result = worktrees.result_commit(run.tree)
            run.files = worktrees.changed(run.tree.repo, run.tree.base, run.result)
        except worktrees.VcsError as exc:
            run.error = (run.error + "; " if run.error else "") + f"its changes could not be read: {exc}"
        if not run.files:
            worktrees.forget(run.tree)

    @staticmethod
    def save_patch(run: AgentRun, state_dir: Path) -> Path | None:
        """The agent's patch as a file in the session's state folder (None when it cannot be written)."""
        assert run.tree is not None
        try:
            text = worktrees.patch(run.tree.repo, run.tree.base, run.result)
            folder = Path(state_dir) / "agents"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{run.ident}.patch"
            path.write_text(text, encoding="utf-8")
            return path
        except (OSError, worktrees.VcsError):
            return None

    def close(self) -> None:
        if self._janitor is not None:
            self._janitor.close()


def inside(tree: Path, workspace: Path, cwd: Path) -> Path:
    """The isolated tree's counterpart of the session's working directory (the tree's top when it has none)."""
    try:
        mirrored = tree / Path(cwd).resolve().relative_to(Path(workspace).resolve())
    except ValueError:
        return tree
    return mirrored if mirrored.is_dir() else tree
