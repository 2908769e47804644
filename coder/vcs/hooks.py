"""The repository's commit hooks, run by coder rather than by git: in the sandbox by default, on the host only when
the user says so, never skipped silently (coder/vcs/commit.py calls them around its plumbing commit).

Host git runs with hooks off (`core.hooksPath=/dev/null`, coder/host/git.py): `git commit` would run them on the
host with the agent's freshly written code in reach. The message file and, for the sandbox, a copy of the private
index live in the git dir, written and read back beneath a handle on it, never through a symlink a hook or a
sandboxed process put there.
"""

from __future__ import annotations

import os
import secrets
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from coder.base.errors import CoderError, SandboxUnavailable
from coder.fs.beneath import WorkspaceFS
from coder.host import TimeoutExpired, safe_env
from coder.host import run as host_run
from coder.sandbox.exec import run_sandboxed
from coder.vcs.errors import VcsError
from coder.vcs.repo import PrivateIndex, Repo

if TYPE_CHECKING:
    from coder.sandbox.profile import SandboxConfig

HookMode = Literal["sandbox", "host", "skip"]
PRE_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg")
#: the message file the message hooks get, in the git dir as git does it (written and read back beneath it)
MSG_FILE = "COMMIT_EDITMSG"
#: the largest commit message read back from a hook
MSG_LIMIT = 1 << 20


@dataclass
class HookRun:
    name: str
    exit_code: int | None  # None: it never ended (killed at its timeout)
    output: str
    duration: float
    where: str  # "sandbox" or "host"
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def find_hooks(hooks_dir: Path) -> dict[str, Path]:
    """The executable commit hooks in the repository's hooks folder (`Repo.hooks_dir`: the user's core.hooksPath
    respected), by name."""
    found = {}
    for name in (*PRE_HOOKS, "post-commit"):
        path = hooks_dir / name
        if path.is_file() and os.access(path, os.X_OK):
            found[name] = path
    return found


def run_pre_hooks(
    repo: Repo, hooks: dict[str, Path], names: list[str], where: HookMode, index: PrivateIndex, message: str,
    config: SandboxConfig | None, timeout: float,
) -> tuple[str, list[HookRun]]:
    """Run the pre-commit hooks in order until one fails; returns the message (as commit-msg left it) and the
    runs. The message file and, for the sandbox, a copy of the private index live in the git dir, written and
    read back beneath a handle on it, never through a symlink a hook or sandboxed process put there."""
    gdir = repo.git_dir
    runs: list[HookRun] = []
    try:
        with WorkspaceFS(gdir) as fs, _hook_index(fs, gdir, index, where) as hook_env:
            fs.write_atomic(MSG_FILE, message.encode("utf-8"), 0o644)
            msg_path = str(gdir / MSG_FILE)
            args = {"pre-commit": [], "prepare-commit-msg": [msg_path, "message"], "commit-msg": [msg_path]}
            for name in names:
                runs.append(run_hook(repo, name, hooks[name], args[name], where, config, timeout, hook_env))
                if not runs[-1].ok:
                    return message, runs
            message = fs.read_file(MSG_FILE, MSG_LIMIT)[0].decode("utf-8", "replace")
    except (OSError, CoderError) as exc:
        if isinstance(exc, VcsError):
            raise
        raise VcsError(
            f"Not committing: the commit message or index file in {gdir} cannot be used after the hooks ran "
            f"({exc}); it was replaced (by a symbolic link?) while they ran.") from None
    return message, runs


@contextmanager
def _hook_index(fs: WorkspaceFS, gdir: Path, index: PrivateIndex, where: HookMode) -> Iterator[dict[str, str]]:
    """The index the hooks see. Host hooks get the private one; sandboxed hooks cannot see the host's temp dir,
    so they get a copy in the git dir (as `git commit` gives hooks its `next-index` file), read back afterwards."""
    private = index.path
    if where != "sandbox":
        yield dict(index.env)
        return
    name = f"coder-commit-{secrets.token_hex(6)}.index"
    try:
        with open(private, "rb") as fh:
            fs.write_atomic(name, fh, 0o600)
        yield {"GIT_INDEX_FILE": str(gdir / name)}
        private.write_bytes(fs.read_file(name)[0])
    finally:
        try:
            fs.unlink(name)
        except (OSError, CoderError):
            pass


def require_sandbox() -> None:
    try:
        from coder.sandbox import exec as sandbox_exec  # noqa: F401
    except ImportError as exc:
        raise VcsError(
            "This repository has git hooks, and coder runs them in the sandbox, which is not available here "
            f"({exc}). Run the hooks on the host (run_hooks_in='host') or skip them explicitly ('skip')."
        ) from exc


def run_hook(
    repo: Repo, name: str, hook: Path, args: list[str], where: HookMode, config: SandboxConfig | None,
    timeout: float,
    index_env: dict[str, str],
) -> HookRun:
    command = " ".join(shlex.quote(a) for a in [str(hook), *args])
    start = time.monotonic()
    if where == "sandbox":
        try:
            run = run_sandboxed(command, repo.root, config, timeout, env=index_env)
        except SandboxUnavailable as exc:
            raise VcsError(
                f"The {name} hook must run in the sandbox, which is unavailable: {exc}. Run hooks on the host "
                "or skip them explicitly."
            ) from exc
        return HookRun(name, run.exit_code, run.output, time.monotonic() - start, "sandbox", run.timed_out)
    env = safe_env()  # the user asked for host hooks, not for them to see provider keys
    env.update(index_env)
    try:  # git runs a hook at the top of the work tree, and so does coder
        proc = host_run([str(hook), *args], purpose=f"the {name} hook", workdir=repo.root, env=env, timeout=timeout,
                        text=True, errors="replace")
        return HookRun(name, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start, "host")
    except TimeoutExpired as exc:
        parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (exc.stdout, exc.stderr) if p]
        return HookRun(name, -1, "".join(parts), time.monotonic() - start, "host", timed_out=True)
    except OSError as exc:  # not executable after all, no interpreter (a bad #! line): the hook failed
        return HookRun(name, 126, f"cannot run {hook}: {exc}", time.monotonic() - start, "host")
