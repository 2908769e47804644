"""Imported once by the batch's fork server (coder/batch/runner.py, PRELOAD, after the modules): answers that do
not change during a batch are computed here and inherited by every agent process forked from it, instead of once
per instance.

- The bubblewrap probe (a trial sandbox, `bwrap --version`, a cgroup created and removed) is what every session
  runs first to say whether its shell can be sandboxed; the machine does not change that answer between instances.
- The built-in agents (front matter parsed with YAML) and the grammars the bash tool and a Python repository's
  edits load (tree-sitter languages) are read once.

The command-line parser is built ahead by coder/cli/warm.py (the frontends' layer, above this one).

Nothing here reads the instance's workspace or depends on it: the fork server starts before any instance, in the
batch's own directory, and its children only then move into their workspaces.
"""

from __future__ import annotations

from coder.codeintel.languages import language
from coder.ext.agents import builtin_agents
from coder.sandbox.check import check_sandbox

#: the grammars a SWE-bench-style session loads (the bash tool's command parser, Python edits)
WARM_GRAMMARS = ("bash", "python")


def warm() -> None:
    check_sandbox()
    builtin_agents()
    for name in WARM_GRAMMARS:
        language(name)


warm()
