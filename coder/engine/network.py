"""The engine's side of network by domain (issue 21): questions about unlisted hosts and the events of every
allowed and refused one, handed to the proxy (coder/netproxy) as plain callbacks.

A question reuses the frontends' permission prompt (a PermissionRequest for the pseudo-tool `network`, its
suggested rule the host): "once" allows the host until the shell command ends, "always" (the session's
remember) for the session, "in this project" always (kept in the user's state folder, never the repository).
Headless sessions cannot answer: the proxy refuses the host and says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from coder.base import events as ev
from coder.engine.session import AskHandler, no_questions
from coder.sandbox.network import NetHooks

if TYPE_CHECKING:
    from coder.netproxy.proxy import Access

_ids = itertools.count(1)


def network_hooks(record: Callable[[ev.Event], None], ask: AskHandler, project_dir: Path | None) -> NetHooks:
    def report(access: Access) -> None:
        record(ev.NetworkAccess(access.host, access.port, access.allowed, access.source, access.pattern,
                                access.message))

    def question(host: str, port: int) -> str:
        request = ev.PermissionRequest(
            f"net-{next(_ids)}", "network", {"host": host, "port": port},
            f"a command in the sandbox wants to reach {host} (port {port}), which [sandbox] allowed_domains does "
            "not list. Once: for this command; always: for this session; in this project: from now on.", host)
        record(request)
        answer = ask(request)
        if not answer.allow:
            return "deny"
        return {"session": "session", "project": "always"}.get(answer.remember or "", "once")

    return NetHooks(None if ask is no_questions else question, report, project_dir)


def network_hint(config: dict) -> str:
    """What the system prompt says of the network when domain lists are configured ("" otherwise)."""
    section = config.get("sandbox") or {}
    if section.get("network"):
        return ""
    allowed = list(section.get("allowed_domains") or [])
    presets = list(section.get("network_presets") or [])
    if not (allowed or presets or section.get("denied_domains")):
        return ""
    listed = ", ".join(allowed[:8] + [f"the {p} package registries" for p in presets]) or "no domain yet"
    return (f"the network reaches only listed domains ({listed}) through coder's proxy (HTTP_PROXY and "
            "HTTPS_PROXY are set; pip, npm, git and curl use them), other hosts are refused or need the user's "
            "approval")


def apply_domain_flags(config: dict, allow: list[str], deny: list[str], presets: list[str]) -> None:
    """`--net-allow`, `--net-deny` and `--net-preset` add to the user's lists (never replace them)."""
    section = config["sandbox"]
    for key, values in (("allowed_domains", allow), ("denied_domains", deny), ("network_presets", presets)):
        if values:
            section[key] = list(section.get(key) or []) + [v for v in values if v not in (section.get(key) or [])]
            config.setdefault("_provenance", {})[f"sandbox.{key}"] = "flag"
