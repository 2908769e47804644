"""The bubblewrap profile: which parts of the host a sandboxed command sees, and how.

The shape (why each piece is there):
- The system (`/usr`, `/etc`, `/opt`, the /bin-style symlinks) read-only: tools work, nothing installs over them.
- The workspace read-write, but the protected paths inside it read-only (`.git/hooks`, `.git/config`, nested
  repositories, `.coder/`, `.mcp.json`, the instruction files: see coder/sandbox/protected.py), and `.git` pinned in
  place: those are the files that make code run *outside* the sandbox later (a hook at the next commit, an
  alias or `core.fsmonitor` in git's config, a permission rule or `sandbox.enabled = false` in coder's project
  config, an MCP server) or steer the model.
- `$HOME` an empty tmpfs at the same path, plus read-only toolchains found there (pyenv, cargo, nvm, the
  PATH entries under HOME) but never the usual credential folders (.ssh, .aws, .gnupg, .config, ...). Binds go
  by what a tool needs, not by parent: a `bin` on PATH brings its install prefix only when that prefix is a
  known toolchain root (`TOOLCHAIN_ROOTS`; `~/.cargo/bin` brings `~/.cargo/bin`, never `~/.cargo` with its
  `credentials.toml`), and a credential-named file or folder inside any bound folder is masked (`masks`).
- A private /tmp, a minimal /dev, a fresh /proc, new pid/ipc/uts namespaces (it can neither see nor signal host
  processes), `--new-session` (no TIOCSTI into the caller's terminal), `--die-with-parent`.
- No network (`--unshare-net`: only its own loopback) unless config or a permission grants it; with domain
  lists, still its own namespace, and coder's proxy reached through a bound socket (coder/sandbox/network.py).
- Running as root, capabilities are dropped and nested user namespaces refused: root inside a user namespace
  could otherwise remount the read-only binds read-write.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coder.base.errors import ConfigError
from coder.base.settings import Repo, SettingError, setting
from coder.netproxy.domains import check_pattern, check_presets
from coder.sandbox.protected import Protected, protected_paths
from coder.sandbox.tarpit import TARPIT_CAPS, check_tarpits

#: mount point (inside the sandbox) of the folder where the host drops command files for the shell
CONTROL_DIR = "/run/coder"

#: toolchain folders under HOME that are bound read-only when present
HOME_TOOLCHAINS: tuple[str, ...] = (
    ".pyenv", ".cargo/bin", ".cargo/registry", ".cargo/git", ".rustup", ".nvm", ".local/bin", ".local/lib",
    ".local/share/uv", "go", ".sdkman", ".bun", ".deno", ".volta", ".gradle/wrapper", ".m2/repository",
    ".npm-global",
)
#: install prefixes whose whole folder a `bin`/`shims` PATH entry under HOME brings along (their layouts hold no
#: credentials; any other prefix, `.cargo` included, gives only its PATH entry)
TOOLCHAIN_ROOTS: frozenset[str] = frozenset({
    ".pyenv", ".rbenv", ".nodenv", ".goenv", ".jenv", ".asdf", ".nvm", ".rustup", ".sdkman", ".volta", ".bun",
    ".deno", ".local/share/uv", "go", ".npm-global", ".juliaup", ".elan", ".ghcup", ".pixi",
})
#: names of credential files and folders a toolchain keeps in its own folder (`~/.cargo/credentials.toml`, an
#: `.npmrc` in a node prefix): masked inside every bound folder, one level down
CREDENTIAL_NAME = re.compile(r"credential|secret|token|passw|^\.?(netrc|npmrc|pypirc|git-credentials)$|^auth\.json$"
                             r"|^hosts\.yml$|\.pem$|\.key$|^id_(rsa|dsa|ecdsa|ed25519)", re.IGNORECASE)
#: never bound from HOME, even when a PATH entry or config points inside them
HOME_DENY: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".config", ".docker", ".kube", ".azure", ".gcloud", ".netrc", ".npmrc", ".pypirc",
    ".git-credentials", ".password-store", ".local/share/keyrings", ".mozilla", ".cache",
)
#: system folders bound read-only when they exist (symlinks such as /bin -> usr/bin are recreated as symlinks)
SYSTEM_RO: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                              "/sys", "/nix", "/snap")


def _domains(key: str) -> Callable[[list[str]], list[str]]:
    """The `check` of a domain list: each pattern normalized, or what is wrong with it."""
    def check(patterns: list[str]) -> list[str]:
        try:
            return [check_pattern(p, key) for p in patterns]
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix(f"[sandbox] {key}: ")) from None
    return check


def _presets(names: list[str]) -> None:
    try:
        check_presets(names)
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("[sandbox] network_presets: ")) from None


def _tarpits(values: list[str]) -> list[str]:
    try:
        return check_tarpits(values, network=False)
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("[sandbox] tarpits: ")) from None


@dataclass
class SandboxConfig:
    """`[sandbox]`: how shell commands, hooks and tests are confined. A repository may set the timeouts and limits
    when trusted, never what widens the sandbox nor its network lists."""

    enabled: bool = setting(True, doc="Run shell commands in bubblewrap; false runs them on the host (also "
                            "`--no-sandbox`).", repo=Repo.NEVER)
    network: bool = setting(False, doc="Give commands the host's whole network, without coder's proxy.",
                            repo=Repo.NEVER)
    extra_rw: list[str] = setting(factory=list, doc="More folders the sandbox may write.", repo=Repo.NEVER)
    extra_ro: list[str] = setting(factory=list, doc="More folders the sandbox may read (CODER_SANDBOX_EXTRA_RO, "
                                  "separated by `:`, adds to them).", repo=Repo.NEVER,
                                  env="CODER_SANDBOX_EXTRA_RO", env_split=os.pathsep)
    env_allow: list[str] = setting(factory=list, doc="Host environment variables passed into the sandbox "
                                   "(secret-looking names never are).", repo=Repo.NEVER)
    timeout: float = setting(120.0, doc="Seconds a command may run when the model names no timeout.",
                             repo=Repo.TRUSTED, at_least=0)
    max_timeout: float = setting(600.0, doc="The longest timeout the model may ask for, in seconds.",
                                 repo=Repo.TRUSTED, at_least=0)
    idle_timeout: float = setting(0.0, doc="Seconds without output before a command is interrupted; 0 = never.",
                                  repo=Repo.TRUSTED, at_least=0)
    max_output_bytes: int = setting(16 * 1024 * 1024, doc="Output a command may print before it is stopped.",
                                    repo=Repo.TRUSTED, at_least=0)
    max_output_chars: int = setting(20_000, doc="Output the model reads before head and tail are kept.",
                                    repo=Repo.TRUSTED, at_least=0)
    nproc: int = setting(512, doc="Processes the sandbox may add.", repo=Repo.TRUSTED, at_least=0)
    file_size_mb: int = setting(4096, doc="The largest file a command may write, in MiB.", repo=Repo.TRUSTED,
                                at_least=0)
    memory_mb: int = setting(8192, doc="Memory a command may use, in MiB.", repo=Repo.TRUSTED, at_least=0)
    #: network by domain (coder/netproxy): hosts the sandbox may reach through coder's proxy, hosts it never
    #: may (deny wins), and preset lists of package registries; only from the user's config or flags
    allowed_domains: list[str] = setting(factory=list, doc="Hosts commands may reach through coder's proxy "
                                         "(`pypi.org`, `*.pythonhosted.org`; also `--net-allow`).",
                                         repo=Repo.NEVER, check=_domains("allowed_domains"))
    denied_domains: list[str] = setting(factory=list, doc="Hosts commands never reach, whatever else allows "
                                        "them (also `--net-deny`).", repo=Repo.NEVER,
                                        check=_domains("denied_domains"))
    network_presets: list[str] = setting(factory=list, doc="Package registries to allow: python, node, rust, go "
                                         "(also `--net-preset`, CODER_NETWORK_PRESETS separated by `,`).",
                                         repo=Repo.NEVER, env="CODER_NETWORK_PRESETS", env_split=",",
                                         check=_presets)
    #: an empty, read-only /sys/fs/cgroup instead of the host's: what a container on a cgroup v2 host shows.
    #: For SWE-bench testbeds (coder/batch), whose tests were labelled in such containers: on a cgroup v1 host
    #: the host's tree says `cpu.shares = 1024`, which code that counts CPUs the Docker way (pylint's
    #: `_cpu_count`, bpo-36054's recipe) reads as one CPU, so tests that need two cores skip
    private_cgroups: bool = setting(False, doc="Show commands an empty /sys/fs/cgroup, as a container does "
                                    "(SWE-bench testbeds; CODER_SANDBOX_PRIVATE_CGROUPS=1).", repo=Repo.NEVER,
                                    env="CODER_SANDBOX_PRIVATE_CGROUPS")
    #: paths the sandbox must not show although a folder it binds holds them (the system's /opt, a toolchain, an
    #: extra_ro folder): SWE-bench runs hide the mirrors, the dataset, the run's other instances and local package
    #: indexes from the agent (coder/batch/reach.py, issue 44). What the sandbox binds after them stays visible:
    #: the workspace itself and the extra_ro/extra_rw folders
    hide: list[str] = setting(factory=list, doc="Paths commands must not see where a bound folder holds them: an "
                              "empty folder or file in their place (CODER_SANDBOX_HIDE, separated by `:`).",
                              repo=Repo.NEVER, env="CODER_SANDBOX_HIDE", env_split=os.pathsep)
    #: addresses whose connections hang until the client's timeout, as a non-routable address does on the
    #: internet (coder/sandbox/tarpit.py); only without network, and for one-shot runs (run_sandboxed)
    tarpits: list[str] = setting(factory=list, doc="IPv4 addresses whose connect hangs until the client's "
                                 "timeout, routed into the sandbox's own loopback (SWE-bench testbeds).",
                                 repo=Repo.NEVER, check=_tarpits)

    def check(self) -> None:
        if self.network and (self.allowed_domains or self.denied_domains or self.network_presets):
            raise SettingError("network", "network = true opens every destination without coder's proxy, so "
                               "allowed_domains, denied_domains and network_presets would mean nothing (a deny list "
                               "would be silently ignored): use one or the other")
        if self.network and self.tarpits:
            raise SettingError("tarpits", "tarpits are for a sandbox without network (with network = true their "
                               "packets would leave the machine)")


def _home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def _denied(rel: Path) -> bool:
    parts = rel.as_posix()
    return any(parts == d or parts.startswith(d + "/") for d in HOME_DENY)


def _contains_denied(rel: Path) -> bool:
    prefix = rel.as_posix() + "/"
    return any(d.startswith(prefix) for d in HOME_DENY)


@lru_cache(maxsize=16)
def home_binds(home: Path, path_var: str) -> tuple[Path, ...]:
    """Toolchain folders under `home` that the sandbox may read: the known ones plus PATH entries (and the
    install prefix above a `bin` entry, so a pyenv shim finds its interpreter). Cached per process: it stats
    a few dozen paths, which a one-shot run would otherwise pay every time."""
    found: list[Path] = []
    candidates = [home / rel for rel in HOME_TOOLCHAINS]
    for entry in path_var.split(":"):
        p = Path(entry)
        if entry and p.is_absolute() and home in p.parents:
            if p.name in ("bin", "shims") and p.parent.relative_to(home).as_posix() in TOOLCHAIN_ROOTS:
                candidates.append(p.parent)
            candidates.append(p)
    for path in candidates:
        try:
            rel = path.relative_to(home)
        except ValueError:
            continue
        if not rel.parts or _denied(rel) or not path.exists():
            continue
        if _contains_denied(rel):  # e.g. ~/.local holds keyrings: bind the narrower PATH entry only
            continue
        if any(path == f or f in path.parents for f in found):
            continue
        found = [f for f in found if path not in f.parents] + [path]
    return tuple(sorted(found))


#: signs that a folder is somebody's home: then only a narrower PATH entry inside it is bound, never all of it
_HOME_MARKERS: tuple[str, ...] = (".ssh", ".bashrc", ".profile", ".gnupg", ".aws", ".config")


def _looks_like_home(path: Path) -> bool:
    return path in (Path("/root"), Path("/home")) or (len(path.parts) == 3 and path.parts[1] == "home") or \
        any((path / marker).exists() for marker in _HOME_MARKERS)


def _holds_secrets(path: Path) -> bool:
    """`path` holds a credential folder of HOME_DENY (as a home would, or as `~/.local` holds keyrings)."""
    for denied in HOME_DENY:
        first, _, rest = denied.partition("/")
        if (path / denied).exists() or (rest and path.name == first and (path / rest).exists()):
            return True
    return False


@lru_cache(maxsize=16)
def outside_home_binds(home: Path, path_var: str) -> tuple[Path, ...]:
    """PATH entries outside HOME and outside the system folders, bound read-only with their install prefix
    (a toolchain under /root when HOME points elsewhere, as in CI containers): so `python` in the sandbox is the
    user's `python`. Never `/`, never a home folder as a whole, never a folder that holds credentials."""
    system = [Path(p) for p in SYSTEM_RO]
    found: list[Path] = []
    for entry in path_var.split(":"):
        p = Path(entry)
        if not entry or not p.is_absolute() or not p.is_dir() or p == home or home in p.parents:
            continue
        if any(p == s or s in p.parents for s in system):
            continue
        prefix = p.name in ("bin", "shims") and not _looks_like_home(p.parent)
        # a dot-folder prefix that is no known toolchain root (~/.cargo of another home) gives its PATH entry only
        target = p.parent if prefix and (not p.parent.name.startswith(".") or p.parent.name in TOOLCHAIN_ROOTS) \
            else p
        if len(target.parts) < 3 or _looks_like_home(target) or _holds_secrets(target):
            continue
        if any(target == f or f in target.parents for f in found):
            continue
        found = [f for f in found if target not in f.parents] + [target]
    return tuple(sorted(found))


def credential_path(path: Path) -> bool:
    """Whether `path` is (or lies in) a credential folder of the home, or has a credential-named component: never
    bound into a sandbox, whoever names it."""
    home = _home()
    real = Path(os.path.realpath(path))
    for candidate in (path, real):
        if home in candidate.parents and _denied(candidate.relative_to(home)):
            return True
    return any(CREDENTIAL_NAME.search(part) for part in real.parts)


def masks(binds: tuple[Path, ...]) -> tuple[tuple[str, Path], ...]:
    """("file" or "dir", path) of every credential-named entry (`CREDENTIAL_NAME`) directly inside a bound folder:
    hidden in the sandbox by /dev/null or an empty tmpfs. Links are left alone (bwrap would follow them). Looked
    up at every sandbox start (one listing per bound folder), so a `cargo login` during a session is covered."""
    found: list[tuple[str, Path]] = []
    for folder in binds:
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if not CREDENTIAL_NAME.search(entry.name) or entry.is_symlink():
                        continue
                    kind = "dir" if entry.is_dir(follow_symlinks=False) else \
                        "file" if entry.is_file(follow_symlinks=False) else None
                    if kind:
                        found.append((kind, Path(entry.path)))
        except OSError:
            continue
    return tuple(found)


def hide_args(cfg: SandboxConfig) -> list[str]:
    """An empty tmpfs (or /dev/null) over each existing path of `cfg.hide`, then again the extra_ro folders that lie
    inside a hidden one: the more specific path wins (a hidden run folder, its instance's layer shown). The
    workspace and extra_rw are bound after these, so they stay visible too."""
    args: list[str] = []
    hidden: list[Path] = []
    for path in cfg.hide:
        real = Path(os.path.realpath(Path(path).expanduser()))
        if real.is_dir():
            args += ["--tmpfs", str(real)]
            hidden.append(real)
        elif real.exists():
            args += ["--ro-bind", "/dev/null", str(real)]
    for path in cfg.extra_ro:
        p = Path(path).expanduser()
        if any(h == p or h in p.parents for h in hidden):
            args += ["--ro-bind-try", str(p), str(p)]
    return args


def system_binds(paths: Sequence[str]) -> list[str]:
    """bwrap options binding the system's `paths` read-only where they exist; one that is a link (as /bin, /lib
    on merged-/usr systems) is made the same link inside."""
    args: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), path]
        elif p.exists():
            args += ["--ro-bind", path, path]
    return args


def bwrap_args(workspace: Path, cfg: SandboxConfig, control_dir: Path | None = None,
               env_path: str = "", protected: Protected | None = None, extra: list[str] | None = None) -> list[str]:
    """The bwrap options (without the trailing `--` and command) for a sandbox on `workspace`; `protected` is
    `protected_paths(workspace)` when the caller looked it up already; `extra` adds binds under /run (the network
    proxy's folder, coder/sandbox/network.py)."""
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
    for cap in TARPIT_CAPS if cfg.tarpits else ():  # for the tarpit prelude only, which drops them all
        args += ["--cap-add", cap]
    args += system_binds(SYSTEM_RO)
    if cfg.private_cgroups and Path("/sys/fs/cgroup").is_dir():
        args += ["--tmpfs", "/sys/fs/cgroup", "--remount-ro", "/sys/fs/cgroup"]
    if cfg.network:  # resolv.conf is often a symlink into /run
        for run_dir in ("/run/systemd/resolve", "/run/resolvconf"):
            if Path(run_dir).is_dir():
                args += ["--ro-bind", run_dir, run_dir]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--dir", "/run"]
    args += ["--tmpfs", str(home)]
    binds = home_binds(home, env_path) + outside_home_binds(home, env_path)
    for path in binds:
        args += ["--ro-bind", str(path), str(path)]
    for kind, path in masks(binds):
        args += ["--tmpfs", str(path)] if kind == "dir" else ["--ro-bind", "/dev/null", str(path)]
    for path in cfg.extra_ro:
        p = Path(path).expanduser()
        args += ["--ro-bind-try", str(p), str(p)]
    args += hide_args(cfg)
    args += ["--bind", str(workspace), str(workspace)]
    for path in cfg.extra_rw:
        p = Path(path).expanduser()
        if not p.exists():
            raise ConfigError(f"[sandbox] extra_rw: {p} does not exist")
        args += ["--bind", str(p), str(p)]
    protected = protected if protected is not None else protected_paths(workspace)
    for path in protected.pinned:
        args += ["--bind", str(path), str(path)]
    for path in protected.read_only:
        args += ["--ro-bind", str(path), str(path)]
    if control_dir is not None:
        args += ["--ro-bind", str(control_dir), CONTROL_DIR]
    args += extra or []
    args += ["--chdir", str(workspace)]
    return args
