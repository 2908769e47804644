"""The sandbox's side of network-by-domain: the proxy's folder bound in, the relay started, the variables set.

The sandbox keeps `--unshare-net` (its own namespace: loopback only, no route, no DNS). Coder's proxy
(coder/netproxy) listens on a Unix socket in a private host folder; that folder is bound read-only at
`/run/coder-net` (a socket in a read-only bind can still be connected to; nothing can be planted beside it),
and the shell's start line runs `relay.py` there, which listens on the sandbox's own 127.0.0.1:3128. The
environment then points every client at it: the standard variables in both cases (curl reads only the lower
case `http_proxy`), pip's `PIP_PROXY`, npm's and yarn's own, cargo's `CARGO_HTTP_PROXY`, and git's `http.proxy`
through `GIT_CONFIG_*` (git also reads the standard ones; the config form wins over a repository's
`.git/config`, which in the sandbox is read-only anyway). `NO_PROXY` keeps the sandbox's own loopback direct:
a test server started inside is still reachable from inside.

A session's proxy (`network_for`) is started by the first shell that needs it and closed with the session; only
when a domain list or a preset is configured (and the sandbox is on without `network = true`): without one the
sandbox has no network at all, as before. The engine hands in the question and the event sink (`NetHooks`, in
the tool context's services under `net_hooks`); without them (a test, a tool used on its own) unlisted hosts
are refused, as in a headless run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.base.errors import ConfigError
from coder.netproxy import relay as relay_module
from coder.netproxy.domains import DomainPolicy
from coder.netproxy.grants import load_grants, save_grant

if TYPE_CHECKING:  # the proxy (asyncio) loads only when a session starts one
    from coder.netproxy.proxy import Access, Asker, NetProxy
    from coder.sandbox.profile import SandboxConfig

#: where the proxy's folder (its socket and the relay script) appears inside the sandbox
NET_DIR = "/run/coder-net"
PROXY_PORT = 3128
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
SOCKET_NAME = "proxy.sock"
RELAY_NAME = "relay.py"
#: interpreters for the relay, in order; the system ones first (bound read-only, no shim, fast to start)
RELAY_PYTHONS: tuple[str, ...] = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


def proxy_env() -> dict[str, str]:
    """Variables that point the usual clients at the in-sandbox relay. Set after the secret filter of
    coder/sandbox/env.py, which would drop `GIT_CONFIG_KEY_0` for its name."""
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = PROXY_URL
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
    env.update(PIP_PROXY=PROXY_URL, npm_config_proxy=PROXY_URL, npm_config_https_proxy=PROXY_URL,
               YARN_HTTP_PROXY=PROXY_URL, YARN_HTTPS_PROXY=PROXY_URL, CARGO_HTTP_PROXY=PROXY_URL,
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.proxy", GIT_CONFIG_VALUE_0=PROXY_URL,
               CODER_NETWORK="proxy")
    return env


def relay_python() -> str | None:
    """An interpreter the sandbox can run for the relay, or None."""
    for path in RELAY_PYTHONS:
        if Path(path).is_file():
            return path
    return sys.executable if sys.executable and Path(sys.executable).is_file() else shutil.which("python3")


@dataclass(frozen=True)
class NetworkLink:
    """What a sandbox needs to reach the proxy: the host folder holding the socket and the relay script."""

    host_dir: Path
    python: str

    @property
    def socket_path(self) -> Path:
        return self.host_dir / SOCKET_NAME

    def bwrap_args(self) -> list[str]:
        return ["--ro-bind", str(self.host_dir), NET_DIR]

    def start_line(self) -> str:
        """Shell text that starts the relay (it returns once the port listens) and says so when it cannot."""
        return (f" {self.python} -I -S {NET_DIR}/{RELAY_NAME} {PROXY_PORT} {NET_DIR}/{SOCKET_NAME} "
                "|| echo coder-relay-failed >&2;")


#: a JSON object {"name": "address"}: names the proxy resolves to fixed addresses (may be loopback), the user's
#: own /etc/hosts for the proxy; tests use it to name loopback servers
HOSTS_VAR = "CODER_NETPROXY_HOSTS"


@dataclass
class NetHooks:
    ask: Asker | None = None
    report: Callable[[Access], None] | None = None
    #: where "always" answers are kept (per project, in the user's state folder); None: not kept
    project_dir: Path | None = None


@dataclass
class SessionNetwork:
    proxy: NetProxy
    link: NetworkLink
    folder: Path

    def close(self) -> None:
        self.proxy.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def hosts_override(environ: dict[str, str] | None = None) -> dict[str, str]:
    raw = (environ if environ is not None else os.environ).get(HOSTS_VAR, "")
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{HOSTS_VAR} is not a JSON object of name -> address: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{HOSTS_VAR} must be a JSON object of name -> address")
    return data


def policy_for(cfg: SandboxConfig, project_dir: Path | None) -> DomainPolicy:
    always = load_grants(project_dir) if project_dir is not None else []
    return DomainPolicy.from_lists(cfg.allowed_domains, cfg.denied_domains, cfg.network_presets, always)


def network_for(services: dict[str, Any], cfg: SandboxConfig) -> SessionNetwork | None:
    """The session's running proxy (started now if needed), or None when the sandbox gets no network."""
    current = services.get("network")
    if current is not None and current.proxy.alive:
        return current
    if not cfg.enabled or cfg.network:
        return None
    hooks: NetHooks = services.get("net_hooks") or NetHooks()
    policy = policy_for(cfg, hooks.project_dir)
    if not policy.configured:
        return None
    # start-up time: coder.netproxy.proxy brings asyncio
    from coder.netproxy.proxy import NetProxy

    python = relay_python()
    if python is None:
        raise ConfigError("network by domain needs a python3 the sandbox can run (for its relay); none was found")
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="coder-net-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK)
                                   else None))
    shutil.copyfile(Path(relay_module.__file__), folder / RELAY_NAME)
    project = hooks.project_dir
    proxy = NetProxy(policy, folder / SOCKET_NAME, hooks.ask, hooks.report, hosts_override(),
                     (lambda host: save_grant(project, host)) if project is not None else None)
    try:
        proxy.start()
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ConfigError(str(exc)) from exc
    network = SessionNetwork(proxy, NetworkLink(folder, python), folder)
    services["network"] = network
    return network


@dataclass
class FetchNetwork:
    """The proxy `web_fetch` goes through when the shell has none running (issue 35): the same lists, answers and
    hooks, its own socket, no relay (nothing runs in a sandbox)."""

    proxy: NetProxy
    folder: Path

    def close(self) -> None:
        self.proxy.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def fetch_proxy(services: dict[str, Any], cfg: Any) -> NetProxy:
    """The proxy a fetch from the host goes through: the shell's, when the session runs one (its answers hold for
    both), else one started now and kept in `services["fetch_network"]` (its owner closes it). Unlike the shell's,
    it runs with no list configured too: then every host is unlisted, asked about in the app, refused headless."""
    shell = services.get("network")
    if shell is not None and shell.proxy.alive:
        return shell.proxy
    current = services.get("fetch_network")
    if current is not None and current.proxy.alive:
        return current.proxy
    # start-up time: coder.netproxy.proxy brings asyncio
    from coder.netproxy.proxy import NetProxy

    hooks: NetHooks = services.get("net_hooks") or NetHooks()
    project = hooks.project_dir
    folder = Path(tempfile.mkdtemp(prefix="coder-fetch-"))
    proxy = NetProxy(policy_for(cfg, project), folder / SOCKET_NAME, hooks.ask, hooks.report, hosts_override(),
                     (lambda host: save_grant(project, host)) if project is not None else None)
    try:
        proxy.start()
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ConfigError(str(exc)) from exc
    services["fetch_network"] = FetchNetwork(proxy, folder)
    return proxy


def close_fetch_proxy(services: dict[str, Any] | None) -> None:
    """Stop the proxy `fetch_proxy` started for host fetches, if it did (the shell's proxy belongs to the shell)."""
    network = (services or {}).pop("fetch_network", None)
    if network is not None:
        network.close()
