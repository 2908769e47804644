"""The sandbox: bubblewrap profiles, a persistent shell on a pty inside them, and one-shot sandboxed runs.

Modules: `env` (the sandbox's environment), `profile` (the bwrap command line), `limits` (rlimits and cgroups
against fork bombs and runaway memory), `check` (can this machine sandbox at all?), `shell` (the persistent
shell), `exec` (one command, one sandbox), `confine` (long-lived helpers: language servers, MCP servers that run
workspace files), `aftercheck` (what a command left for the user's own git). Every process starts through the door
(coder/host). Nothing here imports heavy packages.
"""
