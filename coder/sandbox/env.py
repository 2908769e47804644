"""The environment a sandboxed command sees: built from an allow-list, never inherited wholesale.

Why an allow-list: an agent's shell is the one place where a prompt-injected instruction can print
`env` and ship the result somewhere. Anything not named here stays outside, and anything whose *name* looks like
a secret stays outside even when a user allow-listed it by mistake (`env_allow = ["GITHUB_TOKEN"]`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

#: passed through from the host when set
BASE_ALLOW: tuple[str, ...] = (
    "PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME",
    "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NVM_DIR", "NODE_PATH", "NODE_OPTIONS",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
)
#: prefixes passed through (locale settings)
ALLOW_PREFIXES: tuple[str, ...] = ("LC_",)

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
    "PYTHONDONTWRITEBYTECODE": "1",
    "NO_COLOR": "1",
    "CODER_SANDBOX": "1",
}

#: name parts that mark a secret (matched against the `_`-separated words of the name)
_SECRET_WORDS = {
    "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE",
    "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE", "PRIVATE", "SESSION", "SIGNATURE", "CERT",
}
#: substrings that mark a secret even inside one word (GITHUBTOKEN, MYAPIKEY, DBPASSWORD)
_SECRET_SUBSTRINGS = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|APIKEY|API_KEY|ACCESS_KEY|PRIVATE_KEY")


def looks_secret(name: str) -> bool:
    """True when a variable's name suggests it holds a credential. Errs on the side of keeping it out."""
    upper = name.upper()
    if _SECRET_SUBSTRINGS.search(upper):
        return True
    return any(word in _SECRET_WORDS for word in re.split(r"[^A-Z0-9]+", upper) if word)


def sandbox_env(host: Mapping[str, str], home: str, extra_allow: Iterable[str] = (),
                overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a sandboxed process.

    `host` is the caller's environment, `home` the HOME inside the sandbox, `extra_allow` the config's
    `env_allow`, `overrides` values a caller sets on purpose (a hook's variables). Secret-looking names are
    dropped from all three sources."""
    allow = set(BASE_ALLOW) | {name for name in extra_allow if name}
    env: dict[str, str] = {}
    for name, value in host.items():
        if (name in allow or name.startswith(ALLOW_PREFIXES)) and not looks_secret(name):
            env[name] = value
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
