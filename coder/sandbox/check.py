"""Can this machine sandbox? One real bwrap run answers it; `coder doctor` and the refusal message share it.

Why run bwrap instead of reading sysctls: the reasons it fails are many (no package, user namespaces off by
`kernel.unprivileged_userns_clone` or `user.max_user_namespaces`, AppArmor's `restrict_unprivileged_userns`
on Ubuntu 24.04, a container without CAP_SYS_ADMIN, seccomp), and only trying tells them apart."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from coder.base.errors import SandboxUnavailable
from coder.host import TimeoutExpired, run, which
from coder.sandbox.limits import Cgroups, Limits

ESCAPE_HATCH = "To run without any sandbox (commands see your whole machine), pass --no-sandbox."


@dataclass
class SandboxCheck:
    ok: bool
    detail: str
    fix: str = ""


def _fix_for(stderr: str) -> str:
    text = stderr.lower()
    if "permission denied" in text or "operation not permitted" in text or "no permissions" in text:
        return ("allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` (Debian), "
                "`sysctl -w user.max_user_namespaces=15000`, or on Ubuntu 24.04+ "
                "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile for bwrap); "
                "in a container, run it with --privileged or a seccomp profile that allows unshare")
    return "reinstall bubblewrap (`apt-get install --reinstall bubblewrap`) and run `coder doctor` again"


@lru_cache(maxsize=1)
def _cached_check() -> SandboxCheck:
    try:
        bwrap = which("bwrap")
    except OSError:
        return SandboxCheck(False, "bubblewrap (bwrap) is not installed",
                            "apt-get install bubblewrap (Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)")
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        argv += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    argv += ["--", "/bin/sh", "-c", "echo coder-sandbox-ok"]
    try:
        out = run(argv, purpose="the sandbox check", text=True, timeout=20, env={"PATH": os.defpath})
    except (OSError, TimeoutExpired) as exc:
        return SandboxCheck(False, f"bwrap could not run: {exc}", _fix_for(str(exc)))
    if out.returncode != 0 or "coder-sandbox-ok" not in out.stdout:
        message = (out.stderr or out.stdout).strip().splitlines()
        detail = f"bwrap cannot create namespaces: {message[-1] if message else f'exit {out.returncode}'}"
        return SandboxCheck(False, detail, _fix_for(out.stderr))
    version = run([bwrap, "--version"], purpose="the sandbox check", text=True, timeout=20).stdout.strip()
    return SandboxCheck(True, f"{version or 'bubblewrap'} at {bwrap}: namespaces work; {_limits_detail()}")


def _limits_detail() -> str:
    """Which layer contains fork bombs and memory hogs on this machine."""
    groups = Cgroups.create(Limits())
    try:
        pids = "cgroup pids.max" if groups.pids_limited else (
            "RLIMIT_NPROC" if os.geteuid() != 0 else "NONE (root without a writable pids cgroup: a fork bomb is "
                                                    "only stopped by the call's timeout)")
        memory = "cgroup" if groups.memory_limited else "RLIMIT_DATA"
        return f"process limit: {pids}; memory limit: {memory}"
    finally:
        groups.close()


def check_sandbox(refresh: bool = False) -> SandboxCheck:
    """The result of one trial run of bwrap (cached per process; `refresh` runs it again)."""
    if refresh:
        _cached_check.cache_clear()
    return _cached_check()


def require_sandbox() -> None:
    """Raise SandboxUnavailable (with the fix and the --no-sandbox escape hatch) unless bwrap works."""
    result = check_sandbox()
    if not result.ok:
        raise SandboxUnavailable(
            f"coder refuses to run shell commands: {result.detail}.\nFix: {result.fix}.\n{ESCAPE_HATCH} "
            "`coder doctor` shows this check."
        )
