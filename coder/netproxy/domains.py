"""Domain patterns, presets and the verdict for one host name.

Patterns are host names as a user writes them: `pypi.org` (that name only) or `*.pythonhosted.org` (any name
below it, at any depth, but not `pythonhosted.org` itself: the apex is a different site more often than not,
and writing both is explicit). `*` alone matches every name (an allow-all list narrowed by `denied_domains`).
An IP address may be listed as itself. Ports are not part of a pattern: a listed name is reachable on any port.

The order of a verdict: `denied_domains` first (deny wins over every allow, presets and remembered answers
included), then `allowed_domains`, the presets, and the user's answers (this command, this session, always).
Anything else is unlisted: the session asks (interactive) or refuses (headless).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from coder.base.errors import ConfigError

#: the package registries of each ecosystem: what `pip`/`npm`/`cargo`/`go` need to fetch dependencies
PRESETS: dict[str, tuple[str, ...]] = {
    "python": ("pypi.org", "files.pythonhosted.org", "pypi.python.org"),
    "node": ("registry.npmjs.org", "registry.yarnpkg.com", "nodejs.org"),
    "rust": ("crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"),
    "go": ("proxy.golang.org", "sum.golang.org", "storage.googleapis.com"),
}

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"^(?:\*\.)?{_LABEL}(?:\.{_LABEL})*$")

Action = Literal["allow", "deny", "ask"]


def normalize_host(host: str) -> str:
    """Lower case, no trailing dot, IPv6 brackets removed: the form patterns are matched against."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def canonical_host(host: str) -> str | None:
    """The one spelling of `host` the proxy decides on and connects to, or None when it has none.

    The verdict and the connection must see the same name: a resolver that reads a spelling differently from
    the matcher is a way past `denied_domains`. So an IP address is accepted only as strict dotted-quad or IPv6
    text (written back canonically, an IPv4-mapped IPv6 as its IPv4), and a name only as ASCII labels of
    letters, digits, `-` and `_` whose last label is not numeric: glibc reads `3221225986`, `0xc0.0.2.2` or
    `192.0.514` as addresses, and Python's IDNA codec drops a soft hyphen or folds `²` to `2`."""
    host = normalize_host(host)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        mapped = getattr(ip, "ipv4_mapped", None)
        return str(mapped or ip)
    if not host or len(host) > 253 or not host.isascii() or not _NAME.match(host) or host.startswith("*."):
        return None
    last = host.rsplit(".", 1)[-1]
    if last.isdigit() or last.startswith("0x"):
        return None
    return host


def check_pattern(pattern: str, key: str) -> str:
    """The normalized pattern, or a ConfigError that names `key` and says what a pattern looks like."""
    if not isinstance(pattern, str):
        raise ConfigError(f"[sandbox] {key}: {pattern!r} is not a string")
    text = normalize_host(pattern)
    if text == "*" or _NAME.match(text):
        return text
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    hint = ""
    if "://" in text or "/" in text or ":" in text:
        hint = " (write the host name alone: no scheme, port or path, e.g. \"pypi.org\")"
    elif "*" in text:
        hint = " (a wildcard is `*.` in front of a name, e.g. \"*.pythonhosted.org\", or `*` alone)"
    raise ConfigError(f"[sandbox] {key}: {pattern!r} is not a domain pattern{hint}")


def check_presets(names: Iterable[str]) -> list[str]:
    out = []
    for name in names:
        if name not in PRESETS:
            raise ConfigError(f"[sandbox] network_presets: unknown preset {name!r}; known: {', '.join(PRESETS)}")
        out.append(name)
    return out


def matches(pattern: str, host: str) -> bool:
    """`host` (normalized) is covered by `pattern` (normalized)."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


@dataclass(frozen=True)
class Verdict:
    action: Action
    #: the pattern that decided ("pypi.org", "*.example.com"), None when unlisted
    pattern: str | None = None
    #: where it came from: "denied_domains", "allowed_domains", "preset python", "answer once/session/always",
    #: or "unlisted"
    source: str = "unlisted"


@dataclass
class DomainPolicy:
    """The lists of one session (config and flags), the presets, and the answers given so far."""

    allowed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    presets: list[str] = field(default_factory=list)
    #: answers: "allow for this command" (cleared by `new_command`), for this session, and always (saved)
    once: set[str] = field(default_factory=set)
    session: set[str] = field(default_factory=set)
    always: set[str] = field(default_factory=set)

    @classmethod
    def from_lists(cls, allowed: Iterable[str], denied: Iterable[str], presets: Iterable[str],
                   always: Iterable[str] = ()) -> DomainPolicy:
        return cls([check_pattern(p, "allowed_domains") for p in allowed],
                   [check_pattern(p, "denied_domains") for p in denied], check_presets(presets),
                   always={normalize_host(h) for h in always})

    @property
    def configured(self) -> bool:
        """A list or a preset is set: only then does a session start the proxy."""
        return bool(self.allowed or self.denied or self.presets)

    def verdict(self, host: str) -> Verdict:
        host = normalize_host(host)
        for pattern in self.denied:
            if matches(pattern, host):
                return Verdict("deny", pattern, "denied_domains")
        for pattern in self.allowed:
            if matches(pattern, host):
                return Verdict("allow", pattern, "allowed_domains")
        for preset in self.presets:
            for pattern in PRESETS[preset]:
                if matches(pattern, host):
                    return Verdict("allow", pattern, f"preset {preset}")
        for kind, granted in (("once", self.once), ("session", self.session), ("always", self.always)):
            if host in granted:
                return Verdict("allow", host, f"answer {kind}")
        return Verdict("ask")

    def grant(self, host: str, scope: str) -> None:
        """Record a user's answer ("once": until the next shell command; "session"; "always")."""
        host = normalize_host(host)
        {"once": self.once, "session": self.session, "always": self.always}[scope].add(host)

    def new_command(self) -> None:
        self.once.clear()


def refusal_message(host: str, verdict: Verdict, asked: str = "") -> str:
    """The one line a refused connection carries (HTTP reason and body, the tool's note, the event): it names
    the domain and the configuration key that decides it."""
    if verdict.action == "deny":
        return (f"coder refused {host}: it matches {verdict.pattern!r} in [sandbox] denied_domains "
                "(deny wins over every allow; remove it there to reach it)")
    why = f" and {asked}" if asked else ""
    return (f"coder refused {host}: it is not in [sandbox] allowed_domains{why} "
            f"(add \"{host}\" to allowed_domains in your own config, or pass --net-allow {host})")
