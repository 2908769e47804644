"""What the after-command checks report (coder/sandbox/aftercheck.py, leftovers.py), and how the session hears it.

A finding is one thing a sandboxed command left that would run later outside the sandbox, with what was done about
it. Some are removed or restored at once; some are the user's to decide (`ask`), in every permission mode, since
the permission mode covers what runs *in* the sandbox, not what the user runs later. The session hands in the
question and the event sink (`AfterHooks`, in the tool context's services under `after_hooks`, as
coder/engine/leftovers.py builds them); without them (a headless run, a hook or the reviewer's one-shot sandbox)
nobody can answer, and what would be asked is refused: removed or restored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from coder.host import TimeoutExpired
from coder.host import git as hostgit
from coder.host import run as host_run

#: config keys (lower-case, as `git config --list` prints them) that make git run a program or read another config
#: file (`core.worktree` only moves the work tree, and every absorbed submodule sets it)
DANGEROUS_KEYS = re.compile(
    r"^(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|diff\.external|sequence\.editor|credential(\..+)?\.helper|gpg(\..+)?\.program"
    r"|(diff|merge|filter)\..+\.(command|textconv|driver|clean|smudge|process)"
    r"|(diff|merge)tool\..+\.(cmd|path)|pager\..+|browser\..+\.(cmd|path)|man\..+\.(cmd|path)|sendemail\..+"
    r"|remote\..+\.(uploadpack|receivepack|vcs)|uploadpack\.packobjectshook|include\.path|includeif\..+\.path"
    r"|submodule\..+\.update)$")
#: values of `core.fsmonitor` that are git's own (the builtin daemon), not a program
HARMLESS_VALUES = {"core.fsmonitor": {"true", "false", "0", "1", "yes", "no", "on", "off", ""}}


@dataclass(frozen=True)
class Finding:
    path: str  # workspace-relative
    what: str
    done: str
    #: git (what the user's git would run), bytecode, executable, pth, hook, instructions, gitconfig, attributes
    kind: str = "git"

    def line(self) -> str:
        return f"{self.path}: {self.what}; {self.done}"


@dataclass(frozen=True)
class AfterHooks:
    """The session's side of the after-command check. `ask(question, findings)` returns True to keep what was
    found (None: nobody can answer); `report(findings)` tells the frontends (an event)."""

    ask: Callable[[str, list[Finding]], bool] | None = None
    report: Callable[[list[Finding]], None] | None = None


def report(found: list[Finding]) -> str:
    """One note for the model and the user: what was found and done, at most a few paths a kind."""
    by_kind: dict[str, list[Finding]] = {}
    for finding in found:
        by_kind.setdefault(finding.kind, []).append(finding)
    parts = []
    for kind, items in by_kind.items():
        shown = "; ".join(f.line() for f in items[:5])
        parts.append(shown + (f"; and {len(items) - 5} more {kind} files, the same" if len(items) > 5 else ""))
    return "coder found what would run later outside the sandbox (neutralised unless you kept it): " + \
        "; ".join(parts)


def _value_dangerous(key: str, value: str) -> bool:
    if key in HARMLESS_VALUES:
        return value.strip().lower() not in HARMLESS_VALUES[key]
    if key.startswith("alias.") or key.startswith("submodule."):
        return value.lstrip().startswith("!")
    return True


def dangerous_config(data: bytes) -> list[str]:
    """The keys of a git config text that run a program (as git itself parses it: `git config --file -`). A text
    git cannot parse counts as dangerous: the user's git would refuse it or read it differently."""
    try:
        proc = host_run([hostgit.git_path(), "config", "--no-includes", "--file", "-", "--list", "-z"],
                        purpose="a nested git config", input=data, timeout=30, env=hostgit.host_git_env())
    except (OSError, TimeoutExpired) as exc:
        return [f"unreadable ({exc})"]
    if proc.returncode != 0:
        return ["a config git cannot parse"]
    keys = []
    for record in filter(None, proc.stdout.decode("utf-8", "surrogateescape").split("\0")):
        key, _, value = record.partition("\n")
        key = key.lower()
        if (DANGEROUS_KEYS.match(key) or key.startswith("alias.")) and _value_dangerous(key, value):
            keys.append(key)
    return sorted(set(keys))
