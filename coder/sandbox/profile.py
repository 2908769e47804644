"""The bubblewrap profile: which parts of the host a sandboxed command sees, and how.

The shape (why each piece is there):
- The system (`/usr`, `/etc`, `/opt`, the /bin-style symlinks) read-only: tools work, nothing installs over them.
- The workspace read-write, but `.git/hooks`, `.git/config` and `.coder/` inside it read-only: those are the
  files that make code run *outside* the sandbox later (a hook at the next commit, an alias or `core.fsmonitor`
  in git's config, a permission rule in coder's project config).
- `$HOME` an empty tmpfs at the same path, plus read-only toolchains found there (pyenv, cargo, nvm, the
  PATH entries under HOME) but never the usual credential folders (.ssh, .aws, .gnupg, .config, ...).
- A private /tmp, a minimal /dev, a fresh /proc, new pid/ipc/uts namespaces (it can neither see nor signal host
  processes), `--new-session` (no TIOCSTI into the caller's terminal), `--die-with-parent`.
- No network (`--unshare-net`: only its own loopback) unless config or a permission grants it.
- Running as root, capabilities are dropped and nested user namespaces refused: root inside a user namespace
  could otherwise remount the read-only binds read-write.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.errors import ConfigError

#: mount point (inside the sandbox) of the folder where the host drops command files for the shell
CONTROL_DIR = "/run/coder"

#: toolchain folders under HOME that are bound read-only when present
HOME_TOOLCHAINS: tuple[str, ...] = (
    ".pyenv", ".cargo/bin", ".rustup", ".nvm", ".local/bin", ".local/lib", ".local/share/uv", "go", ".sdkman",
    ".bun", ".deno", ".volta", ".gradle/wrapper", ".m2/repository", ".npm-global",
)
#: never bound from HOME, even when a PATH entry or config points inside them
HOME_DENY: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".config", ".docker", ".kube", ".azure", ".gcloud", ".netrc", ".npmrc", ".pypirc",
    ".git-credentials", ".password-store", ".local/share/keyrings", ".mozilla", ".cache",
)
#: system folders bound read-only when they exist (symlinks such as /bin -> usr/bin are recreated as symlinks)
SYSTEM_RO: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                              "/sys", "/nix", "/snap")


@dataclass
class SandboxConfig:
    """The `[sandbox]` section, validated, with its defaults."""

    enabled: bool = True
    network: bool = False
    extra_rw: list[str] = field(default_factory=list)
    extra_ro: list[str] = field(default_factory=list)
    env_allow: list[str] = field(default_factory=list)
    timeout: float = 120.0
    max_timeout: float = 600.0
    idle_timeout: float = 0.0  # seconds without output before interrupting; 0 = off
    max_output_bytes: int = 16 * 1024 * 1024
    max_output_chars: int = 20_000  # what the model reads before head+tail clipping
    nproc: int = 512  # processes the sandbox may add
    file_size_mb: int = 4096
    memory_mb: int = 8192

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "SandboxConfig":
        data = dict(data or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"[sandbox]: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        cfg = cls()
        for name, value in data.items():
            default = getattr(cfg, name)
            try:
                if isinstance(default, bool):
                    if not isinstance(value, bool):
                        raise TypeError
                elif isinstance(default, list):
                    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                        raise TypeError
                    value = list(value)
                elif isinstance(default, (int, float)):
                    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                        raise TypeError
                    value = type(default)(value)
            except TypeError:
                raise ConfigError(f"[sandbox] {name} = {value!r}: expected {type(default).__name__}") from None
            setattr(cfg, name, value)
        return cfg


def _home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def _denied(rel: Path) -> bool:
    parts = rel.as_posix()
    return any(parts == d or parts.startswith(d + "/") for d in HOME_DENY)


def home_binds(home: Path, path_var: str) -> list[Path]:
    """Toolchain folders under `home` that the sandbox may read: the known ones plus PATH entries (and the
    install prefix above a `bin` entry, so a pyenv shim finds its interpreter)."""
    found: list[Path] = []
    candidates = [home / rel for rel in HOME_TOOLCHAINS]
    for entry in path_var.split(":"):
        p = Path(entry)
        if entry and p.is_absolute() and home in p.parents:
            candidates.append(p.parent if p.name in ("bin", "shims") else p)
    for path in candidates:
        try:
            rel = path.relative_to(home)
        except ValueError:
            continue
        if not rel.parts or _denied(rel) or not path.exists():
            continue
        if any(path == f or f in path.parents for f in found):
            continue
        found = [f for f in found if path not in f.parents] + [path]
    return sorted(found)


def protected_paths(workspace: Path) -> list[Path]:
    """Paths inside the workspace that stay read-only. Creates `.git/hooks` when the repository lacks it, so a
    hook cannot be planted through a missing folder."""
    paths: list[Path] = []
    git = workspace / ".git"
    if git.is_dir() and not git.is_symlink():
        hooks = git / "hooks"
        if not hooks.exists():
            hooks.mkdir()
        paths += [hooks, git / "config"]
        paths += [p for p in (git / "info", git / "modules") if p.exists()]
    coder_dir = workspace / ".coder"
    if coder_dir.exists():
        paths.append(coder_dir)
    return [p for p in paths if p.exists() or p.is_symlink()]


def bwrap_args(workspace: Path, cfg: SandboxConfig, control_dir: Path | None = None,
               env_path: str = "") -> list[str]:
    """The bwrap options (without the trailing `--` and command) for a sandbox on `workspace`."""
    workspace = workspace.resolve()
    home = _home()
    if workspace == home or workspace in home.parents or workspace == Path("/"):
        raise ConfigError(f"the workspace {workspace} contains your home folder ({home}); the sandbox would expose "
                          "it read-write. Start coder inside a project folder.")
    args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "coder-sandbox"]
    if not cfg.network:
        args.append("--unshare-net")
    if os.geteuid() == 0:
        # Root keeps every capability inside its user namespace unless told otherwise; with CAP_SYS_ADMIN
        # there, the read-only binds below could be remounted read-write.
        args += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    for path in SYSTEM_RO:
        p = Path(path)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), path]
        elif p.is_dir():
            args += ["--ro-bind", path, path]
    if cfg.network:  # resolv.conf is often a symlink into /run
        for run_dir in ("/run/systemd/resolve", "/run/resolvconf"):
            if Path(run_dir).is_dir():
                args += ["--ro-bind", run_dir, run_dir]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--dir", "/run"]
    args += ["--tmpfs", str(home)]
    for path in home_binds(home, env_path):
        args += ["--ro-bind", str(path), str(path)]
    for path in cfg.extra_ro:
        p = Path(path).expanduser()
        args += ["--ro-bind-try", str(p), str(p)]
    args += ["--bind", str(workspace), str(workspace)]
    for path in cfg.extra_rw:
        p = Path(path).expanduser()
        if not p.exists():
            raise ConfigError(f"[sandbox] extra_rw: {p} does not exist")
        args += ["--bind", str(p), str(p)]
    for path in protected_paths(workspace):
        args += ["--ro-bind", str(path), str(path)]
    if control_dir is not None:
        args += ["--ro-bind", str(control_dir), CONTROL_DIR]
    args += ["--chdir", str(workspace)]
    return args
