"""Tarpits: addresses whose connections hang until the client gives up, inside a sandbox without network.

Some test suites expect what the internet does with a non-routable address: a connect that neither completes
nor is refused, until the client's timeout (psf/requests connects to 10.255.255.1 and expects `ConnectTimeout`).
A sandbox without network has only its loopback and no route, so such a connect fails at once ("Network is
unreachable") and the test fails for the wrong reason. Giving the sandbox the network instead would send those
packets to a private range of whatever network the machine sits in.

So the command starts in a network namespace of its own, made inside the sandbox, where each tarpit is routed
into the loopback: a SYN sent there is dropped (it is not for a local address, and the namespace forwards
nothing), so the connect times out, and nothing leaves the machine. Making that namespace and its routes needs
CAP_SYS_ADMIN and CAP_NET_ADMIN in the sandbox's user namespace; a fixed prelude (system binaries by absolute
path, nothing the workspace can change) uses them, then drops every capability, bounding set included
(CAP_SETPCAP), before it executes the command. bwrap's no_new_privs stays, so the command can never get them back.
"""

from __future__ import annotations

import ipaddress
import shutil

from coder.base.errors import ConfigError, SandboxUnavailable

#: what the prelude needs for the sandbox's user namespace (bwrap --cap-add), dropped before the command runs
TARPIT_CAPS = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETPCAP")
#: where the prelude's tools are looked for: system folders only (bound read-only in every sandbox)
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
#: $1 ip, $2 setpriv, then the tarpits up to `--`, then the command
PRELUDE = ('set -e; ip=$1; setpriv=$2; shift 2; "$ip" link set lo up; '
           'while [ "$1" != -- ]; do "$ip" route add "$1" dev lo; shift; done; shift; '
           'exec "$setpriv" --bounding-set -all --inh-caps -all --ambient-caps -all -- "$@"')


def check_tarpits(tarpits: list[str], network: bool) -> list[str]:
    """The configured tarpits as IPv4 networks (`10.255.255.1/32`); a ConfigError for anything else."""
    if tarpits and network:
        raise ConfigError("[sandbox] tarpits are for a sandbox without network (with network = true their "
                          "packets would leave the machine)")
    out = []
    for value in tarpits:
        try:
            net = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ConfigError(f"[sandbox] tarpits: {value!r} is not an IP address or network") from None
        if net.version != 4:
            raise ConfigError(f"[sandbox] tarpits: {value!r}: only IPv4 is supported")
        out.append(str(net))
    return out


def _tool(name: str, package: str) -> str:
    found = shutil.which(name, path=SYSTEM_PATH)
    if not found:
        raise SandboxUnavailable(f"the sandbox's tarpits need `{name}` in a system folder: apt-get install {package}")
    return found


def tarpit_argv(tarpits: list[str], argv: list[str]) -> list[str]:
    """`argv` (what runs inside bwrap) started in a new network namespace with `tarpits` routed into its
    loopback, with every capability dropped first; `argv` unchanged without tarpits."""
    if not tarpits:
        return argv
    unshare, ip, setpriv = _tool("unshare", "util-linux"), _tool("ip", "iproute2"), _tool("setpriv", "util-linux")
    return [unshare, "--net", "/bin/sh", "-c", PRELUDE, "coder-tarpit", ip, setpriv, *tarpits, "--", *argv]
