"""The environment a sandboxed command sees: built from an allow-list (coder/host/env.py), never inherited wholesale.

Why an allow-list: an agent's shell is the one place where a prompt-injected instruction can print
`env` and ship the result somewhere. Anything not named here stays outside, and anything whose *name* looks like
a secret stays outside even when a user allow-listed it by mistake (`env_allow = ["GITHUB_TOKEN"]`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from coder.host.env import BASE_ALLOW, allowed, looks_secret

__all__ = ["FORCED", "sandbox_env"]

#: forced inside the sandbox: no pagers, no editors, no prompts, no colour, unbuffered Python
FORCED: dict[str, str] = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "LESS": "-FRX",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "DEBIAN_FRONTEND": "noninteractive",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",  # a .pyc in the workspace would run at the user's next import
    "PIP_NO_COMPILE": "1",  # pip compiles what it installs whatever the variable above says (leftovers.py)
    "NO_COLOR": "1",
    "CODER_SANDBOX": "1",
}

def sandbox_env(host: Mapping[str, str], home: str, extra_allow: Iterable[str] = (),
                overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a sandboxed process.

    `host` is the caller's environment, `home` the HOME inside the sandbox, `extra_allow` the config's
    `env_allow`, `overrides` values a caller sets on purpose (a hook's variables). Secret-looking names are
    dropped from all three sources."""
    env = allowed(host, (*BASE_ALLOW, *(name for name in extra_allow if name)))
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(FORCED)
    env["HOME"] = home
    env["TMPDIR"] = "/tmp"
    # CODER_SANDBOX_ENV (a JSON object, set by a parent such as `coder swebench run`): variables for inside the
    # sandbox only, e.g. an instance environment's PATH and VIRTUAL_ENV, which coder's own host process must
    # not use (it resolves git and rg through PATH)
    try:
        inside = json.loads(host.get("CODER_SANDBOX_ENV") or "{}")
    except json.JSONDecodeError:
        inside = {}
    for name, value in {**(inside if isinstance(inside, dict) else {}), **(overrides or {})}.items():
        if isinstance(value, str) and not looks_secret(name):
            env[name] = value
    return env
