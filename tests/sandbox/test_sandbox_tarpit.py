"""Tarpits (coder/sandbox/tarpit.py), with the real sandbox: a connect to a tarpit hangs until the client's
timeout while another address of the same range fails at once, nothing but the loopback exists, and the command
keeps none of the capabilities the prelude used, even when the workspace plants its own `setpriv` first on PATH."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig

PROBE = """python3 -c "
import socket, time
for address in ('10.255.255.1', '10.255.255.2'):
    started = time.monotonic()
    try:
        socket.create_connection((address, 80), timeout=1.0)
        print(address, 'connected')
    except OSError as exc:
        print(address, type(exc).__name__, 'slow' if time.monotonic() - started > 0.8 else 'fast')
"
"""


def tarpitted() -> SandboxConfig:
    """The `[sandbox]` section with 10.255.255.1 as a tarpit, checked as a config layer is."""
    return settings({"sandbox": {"tarpits": ["10.255.255.1"]}}).sandbox


@pytest.fixture(autouse=True)
def _tools() -> None:
    for name, package in (("bwrap", "bubblewrap"), ("ip", "iproute2"), ("setpriv", "util-linux")):
        assert shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin"), f"{name} is missing: apt-get install {package}"


def test_a_tarpit_times_out_and_nothing_else_is_reachable(git_repo: Path) -> None:
    run = run_sandboxed(PROBE + "ip -o link | cut -d: -f2", git_repo, tarpitted(), 30)
    assert run.exit_code == 0, run.output
    assert "10.255.255.1 TimeoutError slow" in run.output, run.output
    assert "10.255.255.2 OSError fast" in run.output  # not routed: unreachable at once, as without tarpits
    assert run.output.split()[-1] == "lo"  # no other interface: the packets go nowhere
    control = run_sandboxed(PROBE, git_repo, None, 30)
    assert "10.255.255.1 OSError fast" in control.output, control.output


def test_the_command_keeps_no_capability(git_repo: Path, tmp_path: Path) -> None:
    # the workspace's own `setpriv`, `ip` and `unshare`, first on PATH: they would keep the capabilities and mark
    bin_dir = git_repo / "bin"
    bin_dir.mkdir()
    marker = git_repo / "planted-ran"
    for name in ("setpriv", "ip", "unshare"):
        real = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
        (bin_dir / name).write_text(f"#!/bin/sh\ntouch {marker}\nexec {real} \"$@\"\n")
        (bin_dir / name).chmod(0o755)
    command = ("grep -E 'Cap(Eff|Prm|Bnd)' /proc/self/status; ip route add 10.9.9.9/32 dev lo && echo ROUTED; "
               "unshare --net true && echo UNSHARED; true")
    run = run_sandboxed(command, git_repo, tarpitted(), 30,
                        env={"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"})
    caps = [line.split()[1] for line in run.output.splitlines() if line.startswith("Cap")]
    assert caps == ["0000000000000000"] * 3, run.output
    assert "ROUTED" not in run.output and "UNSHARED" not in run.output
    # the command's own `ip` did run (the plant is live), the prelude's tools were the system's
    assert marker.exists()
    marker.unlink()
    run = run_sandboxed("true", git_repo, tarpitted(), 30,
                        env={"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"})
    assert run.exit_code == 0 and not marker.exists()


def test_tarpits_are_checked() -> None:
    assert tarpitted().tarpits == ["10.255.255.1/32"]
    with pytest.raises(ConfigError, match="without network"):
        settings({"sandbox": {"tarpits": ["10.255.255.1"], "network": True}})
    for bad in ("10.255.255.1; reboot", "::1", "example.com"):
        with pytest.raises(ConfigError, match="tarpits"):
            settings({"sandbox": {"tarpits": [bad]}})
