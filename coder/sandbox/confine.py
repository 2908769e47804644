"""Long-lived helper processes in the sandbox: language servers, and MCP servers or hooks whose command names a
workspace file (coder/trust/commands.py). The same bubblewrap profile as the model's shell, with the workspace
read-only and no network (unless the user's `[sandbox] network = true` lets an MCP server have it).

A language server reads the whole repository and some of them run programs it names (pyright runs a Python interpreter
to learn its search paths; others build or load the workspace's code). Pinning each known path is a list that is
never complete, so the server gets the sandbox's view of the machine instead: system folders and the toolchains
on PATH read-only, a private HOME and /tmp, no network, no host processes, and the workspace read-only (a server
writes nothing there; one that tried would be changing files behind the model's and the reviewer's back). The
server's own install (its command's prefix) and coder's interpreter (pinned as pyright's `pythonPath`) are bound
read-only so it can start.

With `[sandbox] enabled = false` they run unconfined (the user's choice, as it is for the shell); without bwrap
one does not start, as the shell does not."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from coder.sandbox.profile import SandboxConfig, bwrap_args, credential_path


def confined_command(command: list[str], workspace: Path, env: dict[str, str],
                     sandbox: SandboxConfig | None, network: bool = False) -> list[str]:
    """`command` wrapped in bwrap for `workspace` (`sandbox`: the session's `[sandbox]`), or `command` itself when
    the sandbox is off. `network` keeps the host's network when the config's `[sandbox] network` is true (never a
    domain list: those need the shell's proxy)."""
    section = sandbox or SandboxConfig()
    cfg = replace(section, network=network and section.network, allowed_domains=[], denied_domains=[],
                  network_presets=[])
    if not cfg.enabled:
        return command
    bwrap = "bwrap"  # found by the door; missing, the start fails and says so, never an unconfined server
    workspace = workspace.resolve()
    program = Path(command[0])
    # the server's install and coder's interpreter: bound through the PATH logic (a `bin` entry brings its prefix)
    extra_path = [str(program.parent), str(Path(program).resolve().parent), str(Path(sys.executable).parent),
                  str(Path(sys.executable).resolve().parent)]
    path_var = ":".join([env.get("PATH", ""), *extra_path])
    args = bwrap_args(workspace, cfg, env_path=path_var)
    args += ["--ro-bind", str(workspace), str(workspace)]  # over the shell's read-write bind: nothing is written
    for arg in command[1:]:  # files the server's command names (a script, a config), never a credential
        if arg.startswith("/") and Path(arg).exists() and not Path(arg).resolve().is_relative_to(workspace) \
                and not credential_path(Path(arg)):
            args += ["--ro-bind", arg, arg]
    home = env.get("HOME")
    if home:
        args += ["--dir", home]  # the server's HOME (caches) on the sandbox's private tmpfs, when it is one
    return [bwrap, *args, "--", *command]
