"""Checkpoints: the whole work tree after every turn that changed it, in hidden refs, so /undo and /rewind can
restore files changed by edits *and* by shell commands.

How: a private index (a copy of the user's, for its stat cache) gets `git add -A`, its tree becomes a parentless
commit under `refs/coder/<session>/<n>`. The user's branch, index, stash and reflog are never touched.
Checkpoints have no git parents on purpose: pruning a ref then really frees its objects at the next `git gc`;
the logical parent (the checkpoint the tree was at before) is kept in the commit message.

Restoring applies only the difference between the current checkpoint and the target to the work tree. Files
changed since the current checkpoint and not part of that difference are left alone; if a path the restore
must write was changed since (by the user between turns), the restore refuses, naming the files, unless
`force=True`, which first saves the current state as a checkpoint of its own, so nothing is ever lost.
The baseline (n = 0) holds the user's uncommitted work from before the session, so every restore keeps it.

The refs are in the git dir, which the sandbox can write, so they are not trusted: coder records each checkpoint
commit it writes, and which one is current, on the host (coder/vcs/checkpoint_record.py), sees only recorded
ones, and refuses to restore a ref pointing anywhere else. A restore also never writes or deletes a protected
path (coder/trust/protected.py: git's files, `.coder/`, instruction files), whatever the checkpoint holds.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field

from coder.trust.protected import protected_reason
from coder.vcs.checkpoint_record import CheckpointRecord
from coder.vcs.repo import CODER_IDENTITY, Repo, VcsError
from coder.vcs.restore_files import RestoreBlocked, apply_tree
from coder.vcs.restore_plan import RestorePlan

REF_ROOT = "refs/coder"
_SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_META_PREFIX = "coder-checkpoint: "


class CheckpointError(VcsError):
    """A checkpoint cannot be found, or a restore would overwrite changes that no checkpoint holds."""


class NothingToUndo(CheckpointError):
    pass


class ForgedCheckpoint(CheckpointError):
    """A checkpoint ref points at a commit coder did not write for this session (the sandbox can write refs)."""


class RestoreConflict(CheckpointError):
    """Files the restore would write were changed after the current checkpoint."""

    def __init__(self, message: str, paths: list[str]):
        super().__init__(message)
        self.paths = paths


@dataclass
class Checkpoint:
    id: int
    ref: str
    label: str
    created: float  # unix time
    files_changed: list[str] = field(default_factory=list)
    commit: str = ""
    tree: str = ""
    parent: int | None = None  # the checkpoint the work tree was at when this one was taken

    @property
    def is_baseline(self) -> bool:
        return self.id == 0


@dataclass
class RestoreResult:
    checkpoint: Checkpoint
    written: list[str] = field(default_factory=list)  # files created or overwritten
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed since the last checkpoint, left as they were
    safety: Checkpoint | None = None  # the state saved before a forced restore
    protected: list[str] = field(default_factory=list)  # protected paths the restore left as they are

    @property
    def changed(self) -> list[str]:
        return sorted(set(self.written) | set(self.deleted))

    def summary(self) -> str:
        parts = [f"restored checkpoint {self.checkpoint.id} ({self.checkpoint.label})"]
        if self.written or self.deleted:
            parts.append(f"{len(self.written)} file(s) written, {len(self.deleted)} deleted")
        else:
            parts.append("no file changed")
        if self.kept:
            parts.append(f"kept your later changes to {', '.join(self.kept[:5])}")
        if self.safety is not None:
            parts.append(f"the previous state is saved as checkpoint {self.safety.id}")
        if self.protected:
            parts.append(f"left protected file(s) as they are (restore them yourself): {', '.join(self.protected[:5])}")
        return "; ".join(parts)


@dataclass
class SessionCheckpoints:
    session_id: str
    count: int
    last_created: float


class Checkpoints:
    """The checkpoints of one session in one repository."""

    def __init__(self, repo: Repo, session_id: str, take_baseline: bool = True, max_file_mb: float = 100.0):
        """Open (or start) the checkpoints of `session_id`. Creating the object at session start takes the
        baseline right away (idempotent: a resumed session keeps its own), so the first turn is undoable even
        when the caller never calls `baseline()` itself."""
        if not _SESSION_RE.match(session_id) or ".." in session_id or session_id.endswith(".lock"):
            raise CheckpointError(f"session id {session_id!r} cannot name a git ref (use letters, digits, . _ -)")
        self.repo = repo
        self.session_id = session_id
        self.prefix = f"{REF_ROOT}/{session_id}"
        #: untracked files above this size are left out of snapshots (and so never touched by a restore)
        self.max_file_bytes = int(max_file_mb * 1024 * 1024)
        if take_baseline:
            self.baseline()

    # --- reading -----------------------------------------------------------------------------------------
    def list(self) -> list[Checkpoint]:
        """The checkpoints of the session coder wrote (its host record says so), oldest first."""
        record = CheckpointRecord.load(self.session_id, self.repo.root)
        return [cp for cp in self._refs() if record.trusts(cp.id, cp.commit)]

    def _refs(self) -> list[Checkpoint]:
        """Every checkpoint ref of the session, as the (sandbox-writable) refs say."""
        result = []
        for ref, commit, tree, contents in self.repo.refs(f"{self.prefix}/", "refname", "objectname", "tree",
                                                          "contents"):
            name = ref.rsplit("/", 1)[-1]
            if not name.isdigit():
                continue
            meta = _parse_meta(contents)
            result.append(
                Checkpoint(
                    id=int(name),
                    ref=ref,
                    label=meta.get("label", ""),
                    created=float(meta.get("created", 0)),
                    files_changed=list(meta.get("files", [])),
                    commit=commit,
                    tree=tree,
                    parent=meta.get("parent"),
                )
            )
        return sorted(result, key=lambda c: c.id)

    def get(self, checkpoint_id: int | str) -> Checkpoint:
        """A checkpoint by number, ref name, or commit sha (prefix)."""
        key = str(checkpoint_id).strip()

        def matches(cp: Checkpoint) -> bool:
            return key in (str(cp.id), cp.ref) or (len(key) >= 7 and cp.commit.startswith(key))

        for cp in self.list():
            if matches(cp):
                return cp
        for cp in self._refs():
            if matches(cp):
                raise ForgedCheckpoint(
                    f"Not restoring checkpoint {checkpoint_id!r}: {cp.ref} points at commit {cp.commit[:12]}, which "
                    f"coder did not write for session {self.session_id} (its record of them is "
                    f"{CheckpointRecord.load(self.session_id, self.repo.root).path}). Something, e.g. a command in the "
                    "sandbox, rewrote the ref; /rewind lists the checkpoints coder wrote.")
        raise CheckpointError(
            f"no checkpoint {checkpoint_id!r} in session {self.session_id} (list them with /rewind)"
        )

    def current(self) -> Checkpoint | None:
        """The checkpoint the work tree was last brought to (by a snapshot or a restore), as the host record
        says (the `current` ref is only written for people to look at: the sandbox can move it)."""
        sha = CheckpointRecord.load(self.session_id, self.repo.root).current
        for cp in self.list():
            if cp.commit == sha:
                return cp
        return None

    # --- writing -----------------------------------------------------------------------------------------
    def baseline(self) -> Checkpoint:
        """Checkpoint 0: the tree at session start, the user's uncommitted work included. Idempotent."""
        for cp in self.list():
            if cp.id == 0:
                return cp
        return self._write(self.tree_now(), "baseline (session start)", force_id=0)

    def snapshot(self, label: str) -> Checkpoint | None:
        """Save the work tree if it changed since the current checkpoint; None when it did not."""
        if not self.list():
            self.baseline()
        tree = self.tree_now()
        current = self.current()
        if current is not None and current.tree == tree:
            return None
        return self._write(tree, label)

    def _write(self, tree: str, label: str, force_id: int | None = None) -> Checkpoint:
        existing = self.list()
        current = self.current() if existing else None
        n = force_id if force_id is not None else (max(c.id for c in existing) + 1 if existing else 0)
        files = self.repo.changed_paths(current.tree, tree) if current is not None else []
        created = time.time()
        meta = {"label": label, "created": created, "parent": current.id if current else None, "files": files}
        message = f"coder checkpoint {n}: {label}\n\n{_META_PREFIX}{json.dumps(meta)}\n"
        commit = self.repo.commit_tree(tree, [], message, identity=CODER_IDENTITY)
        ref = f"{self.prefix}/{n}"
        self.repo.update_ref(ref, commit, no_deref=True)
        self.repo.update_ref(f"{self.prefix}/current", commit, no_deref=True)
        CheckpointRecord.load(self.session_id, self.repo.root).add(n, commit)
        return Checkpoint(n, ref, label, created, files, commit, tree, meta["parent"])

    def restore(self, checkpoint_id: int | str, force: bool = False) -> RestoreResult:
        """Bring the work tree to checkpoint `checkpoint_id` (see the module docstring for what is kept)."""
        target = self.get(checkpoint_id)
        current = self.current()
        if current is None:
            raise CheckpointError("this session has no checkpoints yet")
        now_tree = self.tree_now()
        to_change = set(self.repo.changed_paths(current.tree, target.tree))
        drifted = set(self.repo.changed_paths(current.tree, now_tree))
        conflicts = sorted(p for p in to_change & drifted if not protected_reason(p)
                           and self.repo.entry(now_tree, p) != self.repo.entry(target.tree, p))
        safety = None
        if conflicts and not force:
            shown = ", ".join(conflicts[:8]) + (" ..." if len(conflicts) > 8 else "")
            raise RestoreConflict(
                f"Not restoring checkpoint {target.id}: {len(conflicts)} file(s) it would overwrite changed after "
                f"the last checkpoint and are saved nowhere else: {shown}. Keep them by committing or copying "
                "them, or force the restore (the current state is then saved as a checkpoint first).",
                conflicts,
            )
        if drifted and force:
            safety = self._write(now_tree, "before restore (forced)")
        written, deleted, skipped = self._apply(target.tree, sorted(to_change))
        self.repo.update_ref(f"{self.prefix}/current", target.commit, no_deref=True)
        CheckpointRecord.load(self.session_id, self.repo.root).move_to(target.commit)
        kept = sorted(drifted - to_change)
        return RestoreResult(target, written, deleted, kept, safety, skipped)

    def plan(self, checkpoint_id: int) -> RestorePlan:
        """What restoring checkpoint `checkpoint_id` would write and delete, said before it is done (nothing is
        changed): every file, and which of them are committed as they are now (coder/vcs/restore_plan.py)."""
        target = self.get(checkpoint_id)
        current = self.current()
        if current is None:
            return RestorePlan(target.id, -1)
        repo, plan = self.repo, RestorePlan(target.id, current.id)
        now = self.tree_now()
        drifted = set(repo.changed_paths(current.tree, now))
        for path in repo.changed_paths(current.tree, target.tree):
            if protected_reason(path):
                continue
            in_target = repo.entry(target.tree, path)
            (plan.write if in_target else plan.delete).append(path)
            if path in drifted and repo.entry(now, path) != in_target:
                plan.edited.append(path)
            head = repo.entry("HEAD", path)
            if head and head != in_target and head == repo.entry(current.tree, path):
                plan.committed[path] = repo.last_commit(path)[:80] or "a commit"
        return plan

    def undo(self, force: bool = False) -> RestoreResult:
        """Back to the state before the last snapshot-producing turn (the current checkpoint's parent)."""
        current = self.current()
        if current is None or current.parent is None:
            raise NothingToUndo("nothing to undo: the work tree is at the session's start")
        try:
            return self.restore(current.parent, force=force)
        except CheckpointError as exc:
            if isinstance(exc, (RestoreConflict, ForgedCheckpoint)):
                raise
            raise NothingToUndo(f"cannot undo further: checkpoint {current.parent} was pruned") from exc

    def prune(self, keep: int) -> list[int]:
        """Delete all but the newest `keep` checkpoints (the baseline and the current one always stay)."""
        cps = self.list()
        current = self.current()
        protected = {0, current.id if current else -1}
        victims = [c for c in cps[: max(0, len(cps) - keep)] if c.id not in protected]
        self.repo.delete_refs([c.ref for c in victims])
        return [c.id for c in victims]

    def delete_all(self) -> None:
        """Forget the session's checkpoints (their objects go at the next `git gc`)."""
        self.repo.delete_refs([ref for ref, in self.repo.refs(f"{self.prefix}/", "refname")])

    # --- helpers -----------------------------------------------------------------------------------------
    def tree_now(self) -> str:
        """The tree of the work tree as a checkpoint would take it now (nothing is written but objects)."""
        return self.repo.snapshot_tree(self.max_file_bytes)

    def _apply(self, tree: str, paths: list[str]) -> tuple[list[str], list[str], list[str]]:
        """Write `paths` from `tree` into the work tree (modes and symlinks kept), delete those it lacks; beneath
        the work tree, never through a symlink, never a protected path (coder/vcs/restore_files.py). Returns the
        paths written, deleted and left alone as protected."""
        try:
            return apply_tree(self.repo, tree, paths)
        except RestoreBlocked as exc:
            raise CheckpointError(str(exc)) from None


def _parse_meta(contents: str) -> dict:
    for line in contents.splitlines():
        if line.startswith(_META_PREFIX):
            try:
                return json.loads(line[len(_META_PREFIX):])
            except json.JSONDecodeError:
                return {}
    return {}


def list_sessions(repo: Repo) -> list[SessionCheckpoints]:
    """Sessions that have checkpoints in this repository (for `coder sessions`)."""
    sessions: dict[str, SessionCheckpoints] = {}
    for ref, created in repo.refs(f"{REF_ROOT}/", "refname", "creatordate:unix"):
        parts = ref.split("/")
        if len(parts) != 4 or not parts[3].isdigit():
            continue
        entry = sessions.setdefault(parts[2], SessionCheckpoints(parts[2], 0, 0.0))
        entry.count += 1
        entry.last_created = max(entry.last_created, float(created or 0))
    return sorted(sessions.values(), key=lambda s: s.last_created)


def prune_sessions(repo: Repo, keep_sessions: int, current: str | None = None) -> list[str]:
    """Forget the checkpoints of all but the newest `keep_sessions` sessions (never `current`); returns the
    session ids pruned. Their objects go at the next `git gc`."""
    sessions = [s for s in list_sessions(repo) if s.session_id != current]
    victims = sessions[: max(0, len(sessions) - keep_sessions)]
    for victim in victims:
        Checkpoints(repo, victim.session_id, take_baseline=False).delete_all()
    return [v.session_id for v in victims]


def default_keep() -> int:
    """How many checkpoints a session keeps (CODER_CHECKPOINTS_KEEP, default 50)."""
    try:
        return max(2, int(os.environ.get("CODER_CHECKPOINTS_KEEP", "50")))
    except ValueError:
        return 50
