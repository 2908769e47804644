"""The machine checks behind `coder doctor` and the `/doctor` command: what this machine has and lacks for coder,
with the fix for each problem. Engine-level (it asks the builder which workspace and model a session would
get), so both the command line and the slash command read it without the engine importing a frontend."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from coder.base.errors import CoderError
from coder.models.providers import PROVIDERS


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    #: information, neither a pass nor a failure (an unset key of a provider not in use, a language server not
    #: installed): shown as such, never a reason for the command to fail
    info: bool = False


def _version(argv: list[str]) -> str | None:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.host import TimeoutExpired, run
    from coder.host import git as hostgit

    try:
        out = (hostgit.run(Path.cwd(), argv[1:], timeout=10) if argv[0] == "git"
               else run(argv, purpose="doctor", timeout=10, text=True))
    except (OSError, TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else None


def run_checks(cwd: Path) -> list[Check]:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.config.layers import load_config, project_config_path, user_config_path
    from coder.engine.builder import git_root

    checks = [Check("python", sys.version_info >= (3, 11), sys.version.split()[0], "install Python 3.11 or newer")]
    git = _version(["git", "--version"])
    checks.append(Check("git", git is not None, git or "not found", "apt-get install git"))
    root = git_root(cwd)
    checks.append(Check("repository", True, str(root) if root else
                        f"{cwd} is not a git repository: checkpoints, /undo and commits are off"))
    checks.append(_install_check(root or cwd))
    bwrap = shutil.which("bwrap")
    checks.append(Check("bubblewrap", bwrap is not None, bwrap or "not found", "apt-get install bubblewrap"))
    try:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.sandbox.check import check_sandbox

        result = check_sandbox()
        checks.append(Check("sandbox", result.ok, result.detail, result.fix))
    except ImportError:
        checks.append(Check("sandbox", False, "the sandbox package is not built", ""))
    rg = shutil.which("rg")
    checks.append(Check("ripgrep", rg is not None, rg or "not found (code search falls back to Python, slower)",
                        "apt-get install ripgrep"))
    tmux = shutil.which("tmux")
    checks.append(Check("tmux", tmux is not None, tmux or "not found (only the terminal tests need it)",
                        "apt-get install tmux"))
    for provider in PROVIDERS.values():  # each provider's own check (by default: is its key variable set?)
        checks.extend(Check(name, ok, detail, info=ok and detail == "not set")
                      for name, ok, detail in provider.doctor_lines())
    checks.append(_model_check(root or cwd))
    for path in (user_config_path(), project_config_path(root or cwd)):
        checks.append(Check("config", True, f"{path} ({'found' if path.is_file() else 'absent'})"))
    try:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.trust.decisions import is_trusted

        config = load_config(root or cwd, trusted=is_trusted(root or cwd))
        checks.append(Check("workspace trust", True, "trusted" if config.trusted else
                            "not trusted: its own servers, hooks, tools and agents are ignored (`coder trust`)"))
        from coder.lsp.servers import doctor_lines  # language servers (issue 20)

        checks.extend(Check(name, ok is not False, detail, info=ok is None)
                      for name, ok, detail in doctor_lines(config))
    except Exception as exc:  # noqa: BLE001 - doctor reports every problem rather than stopping at one
        checks.append(Check("config valid", False, str(exc), "fix the file named above"))
    return checks


def _install_check(workspace: Path) -> Check:
    """coder itself (its package, its interpreter) must not lie in the workspace: the sandbox can write there, and
    what it left would run on the host at coder's next start, before any rule of coder's applies."""
    from coder.host.python import PACKAGE_ROOT  # start-up time: `coder --help` imports this module

    real = workspace.resolve()
    inside = [str(p) for p in (Path(PACKAGE_ROOT), Path(sys.executable).resolve().parent)
              if p.resolve() == real or real in p.resolve().parents]
    if not inside or Path(PACKAGE_ROOT).resolve() == real:  # coder's own checkout, worked on with coder: yours
        return Check("install", True, f"coder runs from {PACKAGE_ROOT}, with {sys.executable}")
    return Check("install", False, f"coder runs from inside this workspace ({', '.join(inside)}): commands in the "
                 "sandbox can change what runs on your machine at coder's next start",
                 "install coder outside the project (pipx install, or a virtualenv elsewhere)")


def _model_check(workspace: Path) -> Check:
    """Which model a session here would use, without sending anything."""
    # start-up time: `coder --help` imports this module, and only this command needs them
    from coder.config.layers import load_config
    from coder.models.registry import resolve_spec

    try:
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.trust.decisions import is_trusted

        spec = resolve_spec(load_config(workspace, trusted=is_trusted(workspace)).model)
    except CoderError as exc:
        return Check("model", False, "none usable: " + str(exc).splitlines()[0],
                     "export ANTHROPIC_API_KEY=..., or pass --model (e.g. openai:NAME with OPENAI_BASE_URL, "
                     "or scripted:FILE)")
    detail = f"{spec} (the default for `coder` and `coder run`)"
    if not spec.startswith("scripted:"):
        # start-up time: `coder --help` imports this module, and only this command needs it
        from coder.models.model_table import model_info

        detail += f": {model_info(spec).describe()}"
    return Check("model", True, detail)
