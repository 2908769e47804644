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
from coder.engine.session_parts import AskHandler, no_questions
from coder.sandbox.network import NetHooks
from coder.sandbox.profile import SandboxConfig

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
            f"coder's network proxy is asked to reach {host} (port {port}), by a command in the sandbox or by "
            "web_fetch; [sandbox] allowed_domains does not list it. This once: until that command or fetch ends; "
            "for this session; in this project: in every session here.", host)
        record(request)
        answer = ask(request)
        if not answer.allow:  # what the person said with it reaches the model in the refusal
            return f"deny:{answer.said}" if answer.said else "deny"
        return {"session": "session", "project": "always"}.get(answer.remember or "", "once")

    return NetHooks(None if ask is no_questions else question, report, project_dir)


def network_hint(section: SandboxConfig) -> str:
    """What the system prompt says of the network when domain lists are configured ("" otherwise)."""
    if section.network or not (section.allowed_domains or section.network_presets or section.denied_domains):
        return ""
    listed = ", ".join(section.allowed_domains[:8] + [f"the {p} package registries" for p in section.network_presets])
    return (f"the network reaches only listed domains ({listed or 'no domain yet'}) through coder's proxy (HTTP_PROXY "
            "and HTTPS_PROXY are set; pip, npm, git and curl use them), other hosts are refused or need the user's "
            "approval")
