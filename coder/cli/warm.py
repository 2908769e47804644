"""Imported once by the batch's fork server (coder/batch/runner.py, PRELOAD, last): the command-line parser (ten
subcommand modules, ~190 arguments) is built there, and the `main()` of every agent process forked from it takes
that parser instead of building its own (coder.cli.main.prebuild_parser)."""

from __future__ import annotations

from coder.cli.main import prebuild_parser

prebuild_parser()
