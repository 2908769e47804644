"""Imported once by the batch's fork server (coder/batch/runner.py, PRELOAD): answers that do not change during a
batch are computed here and inherited by every agent process forked from it, instead of once per instance.

The bubblewrap probe (a trial sandbox, `bwrap --version`, a cgroup created and removed) is what every session
runs first to say whether its shell can be sandboxed; the machine does not change that answer between instances.
"""

from __future__ import annotations

from coder.sandbox.check import check_sandbox

check_sandbox()
