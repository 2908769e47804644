"""The sandbox: bubblewrap profiles, a persistent pexpect shell inside them, and one-shot sandboxed runs.

Modules: `env` (the scrubbed environment), `profile` (the bwrap command line), `limits` (rlimits and cgroups
against fork bombs and runaway memory), `check` (can this machine sandbox at all?), `shell` (the persistent
shell), `exec` (one command, one sandbox). Nothing here imports heavy packages; pexpect loads with the shell.
"""
