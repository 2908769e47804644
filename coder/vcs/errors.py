"""What goes wrong with git, for users: each a `VcsError` with one paragraph saying what is wrong and what to do."""

from __future__ import annotations

from coder.base.errors import CoderError


class VcsError(CoderError):
    """A git operation cannot be done in the repository's current state (message says why and what to do)."""


class NotARepository(VcsError):
    """The path is not inside a git work tree: a usage error."""

    exit_code = 2


class UnknownRevision(VcsError):
    """A revision the user named does not exist: a usage error."""

    exit_code = 2


class GitCommandError(VcsError):
    """`git` itself failed; the message carries its stderr."""
