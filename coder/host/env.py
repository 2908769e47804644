"""Environments for processes coder starts: built from allow-lists, never inherited wholesale.

Two readers: the sandbox (coder/sandbox/env.py adds its forced values on top of `BASE_ALLOW`) and every host
process of the door (`scrubbed_env`). An agent's shell is the one place where a prompt-injected instruction can
print `env` and ship the result somewhere, and a host process may end up running something a repository planted;
so anything not named here stays outside, and anything whose *name* looks like a secret stays outside even when a
user allow-listed it by mistake (`env_allow = ["GITHUB_TOKEN"]`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

#: passed through from the host when set (to the sandbox and to host processes)
BASE_ALLOW: tuple[str, ...] = (
    "PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME",
    "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NVM_DIR", "NODE_PATH", "NODE_OPTIONS",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
)
#: prefixes passed through (locale settings)
ALLOW_PREFIXES: tuple[str, ...] = ("LC_",)
#: host variables passed to host processes besides BASE_ALLOW: what the user's own git (and a host hook) needs to
#: find its configuration and identity
HOST_ALLOW: tuple[str, ...] = (
    "HOME", "TMPDIR", "SHELL", "TERM", "EMAIL", "GNUPGHOME",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
)

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


def allowed(host: Mapping[str, str], allow: Iterable[str]) -> dict[str, str]:
    """The variables of `host` named in `allow` (or with an ALLOW_PREFIXES prefix), secret-looking names dropped."""
    names = set(allow)
    return {name: value for name, value in host.items()
            if (name in names or name.startswith(ALLOW_PREFIXES)) and not looks_secret(name)}


def scrubbed_env(host: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host environment minus everything not allow-listed and everything secret-named: the default of every
    host process (git, linters, parse workers, MCP servers, host hooks). None of them needs the model provider's
    keys, and each may end up running something a repository planted."""
    env = allowed(os.environ if host is None else host, (*BASE_ALLOW, *HOST_ALLOW))
    env.setdefault("PATH", os.defpath)
    return env
