"""The instance's view of its environment: a workspace installed into a layer over the shared environment.

The harness installs the repository into its environment in editable mode (`pip install -e .` in /testbed),
so tests import the code the agent edits. Here one environment serves every workspace of a version, so the
install cannot go into it. Each workspace gets a *layer* instead: a Python prefix of the same interpreter
(see make_layer), next to the workspace (`<workspace>.testbed`), whose site-packages holds the workspace's own
install (the editable finder or `.pth` pointing at *this* workspace) and one `.pth` line that adds the shared
environment's site-packages after it. The environment's scripts (`pytest`, `tox`) get small wrappers in the
layer's `bin` that run them on the layer's interpreter. With `VIRTUAL_ENV` and `PATH` naming the layer,
`python`, `pytest`, `bin/test` or `./tests/runtests.py` see the workspace's code and the environment's packages.

The install itself (the harness's pre-install commands, then its install command without dependencies, build
isolation or index: offline) and every test run happen in the bubblewrap sandbox: the workspace read-write,
the layer read-write only while installing, the environment and the interpreter read-only, no network. Code
of the repository, and later the model's, never runs on the host.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.resources import template
from coder.batch.envs import base_interpreter, interpreter_prefix, reinstall_command
from coder.batch.instdeps import build_layer
from coder.batch.specs import EnvSpec, EnvUnavailable
from coder.batch.workspace import Workspace, borrowed_objects, git
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig

#: sorts after every other .pth in the layer (`__editable__...`, `easy-install.pth`): the workspace first
SHARED_PTH = "zz_coder_shared_env.pth"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Testbed:
    """A workspace with its layer over a shared environment."""

    spec: EnvSpec
    env_dir: Path
    layer: Path
    workspace: Path
    read_only: list[str] = field(default_factory=list)
    build_layer: Path | None = None  # the wheels of the workspace commit's own build requirements (instdeps)
    hide: list[str] = field(default_factory=list)  # what its sandbox must not show (coder/batch/reach.py)

    def shell_env(self) -> dict[str, str]:
        """What a shell in the sandbox needs for the environment to be active (VIRTUAL_ENV, PATH first). The
        system folders follow, not the host's PATH: a tool the environment lacks must not quietly be another
        Python's (pyenv's shims would run the host's pytest on the host's Python)."""
        return {"VIRTUAL_ENV": str(self.layer), "PATH": f"{self.layer / 'bin'}{os.pathsep}{SYSTEM_PATH}",
                "PIP_NO_INDEX": "1", "PYTHONNOUSERSITE": "1"}

    def sandbox(self, writable_layer: bool = False, timeout: float = 1800, network: bool = False) -> SandboxConfig:
        """The `[sandbox]` section for commands on this workspace: the environment mounted read-only."""
        layer = [str(self.layer)]
        # tarpits: what the tests expect to time out, as on the internet (only a sandbox without network has them)
        return SandboxConfig(network=network, extra_ro=list(self.read_only) + ([] if writable_layer else layer),
                             extra_rw=layer if writable_layer else [], max_timeout=timeout, timeout=timeout,
                             max_output_chars=10**9, private_cgroups=True, hide=list(self.hide),
                             tarpits=[] if network else list(self.spec.tarpits))

    def run(self, script: str, timeout: float, writable_layer: bool = False,
            network: bool = False) -> tuple[int | None, str]:
        """`script` with bash in a fresh sandbox on the workspace, the environment active."""
        result = run_sandboxed(script, self.workspace, self.sandbox(writable_layer, timeout, network), timeout,
                               env=self.shell_env())
        return result.exit_code, result.output


def layer_path(workspace: Path) -> Path:
    return workspace.with_name(workspace.name + ".testbed")


def _site_packages(venv: Path) -> Path:
    found = sorted(glob.glob(str(venv / "lib" / "python*" / "site-packages")))
    if not found:
        raise EnvUnavailable(f"{venv} has no lib/pythonX.Y/site-packages")
    return Path(found[0])


def _wrap_scripts(env_dir: Path, layer: Path) -> None:
    """A wrapper in the layer for every Python script of the environment (console scripts have the venv's
    interpreter in their first lines), running it on the layer's interpreter."""
    env_python = str(env_dir / "bin" / "python")
    for script in sorted((env_dir / "bin").iterdir()):
        target = layer / "bin" / script.name
        if target.exists() or script.is_symlink() or not script.is_file() or script.name.startswith("activate"):
            continue
        try:
            head = script.read_bytes()[:400].decode("utf-8", errors="replace")
        except OSError:
            continue
        if env_python not in head:
            continue
        target.write_text(f'#!/bin/sh\nexec "{layer / "bin" / "python"}" "{script}" "$@"\n', encoding="utf-8")
        target.chmod(0o755)


#: a distribution's marker that forbids pip installs into its Python (PEP 668): not for the layer's own prefix
_NOT_LINKED = frozenset({"site-packages", "dist-packages", "EXTERNALLY-MANAGED"})


def make_layer(env_dir: Path, layer: Path, system_site_packages: bool = False) -> None:
    """The prefix stacked on `env_dir`, made on the host from the environment's own base interpreter (nothing
    of the repository runs).

    Not a venv but a Python prefix of its own: `bin/python` is the base interpreter's file (a hard link, or a
    copy), `lib/pythonX.Y/` links every entry of the base's standard library, and `site-packages` is the
    layer's. Python finds its prefix from the real path of its executable, so the layer stays the prefix
    however it is started, through links included. A venv does not: tox-current-env (sphinx's test command,
    `tox --current-env`) runs `.tox/py39/bin/python`, a link to sys.executable, and a venv's python started
    that way misses its pyvenv.cfg and comes up as the bare base interpreter; a conda environment, the
    harness's, is a prefix like this one."""
    base = base_interpreter(env_dir)
    if not base:
        raise EnvUnavailable(f"{env_dir} is not a built environment (no ready.json)")
    shutil.rmtree(layer, ignore_errors=True)
    real = Path(os.path.realpath(base))
    version = _site_packages(env_dir).parent.name  # "python3.9"
    stdlib = real.parent.parent / "lib" / version
    if not (stdlib / "os.py").is_file():
        raise EnvUnavailable(f"the standard library of {real} is not at {stdlib}")
    (layer / "bin").mkdir(parents=True)
    python = layer / "bin" / "python"
    try:
        os.link(real, python)
    except OSError:  # another file system
        shutil.copy2(real, python)
    for alias in ("python3", version):
        (layer / "bin" / alias).symlink_to("python")
    lib = layer / "lib" / version
    (lib / "site-packages").mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in _NOT_LINKED:
            (lib / entry.name).symlink_to(entry)
    if (real.parent.parent / "include").is_dir():  # C extensions of the workspace build against it
        (layer / "include").symlink_to(real.parent.parent / "include")
    dirs = [str(_site_packages(env_dir))] + ([str(stdlib / "site-packages")] if system_site_packages else [])
    # Not inside pip's isolated build environment (its PYTHONPATH names `pip-build-env-*`): there the build
    # must see only its own requirements, as it would in any venv (pip keeps real site-packages out, and this
    # line is what makes the environment's a site dir of the layer).
    # `sys.real_prefix` (how virtualenv marked its environments) tells pip the layer is an environment of its
    # own: a package of the shared environment that the workspace needs in another version is then installed
    # into the layer and left where it is ("outside environment"), instead of pip trying to uninstall it from
    # the read-only shared one and failing.
    adds = "".join(f"site.addsitedir({d!r}), " for d in dirs)
    (lib / "site-packages" / SHARED_PTH).write_text(
        f"import os, site, sys; sys.real_prefix = {str(real.parent.parent)!r}; "
        f"'pip-build-env' in os.environ.get('PYTHONPATH', '') or ({adds})\n", encoding="utf-8")
    _wrap_scripts(env_dir, layer)


def read_only_paths(env_dir: Path) -> list[str]:
    """The environment and the interpreter it was made from (unless a system folder the sandbox has anyway)."""
    return [str(env_dir), *interpreter_prefix(base_interpreter(env_dir))]


def open_testbed(spec: EnvSpec, env_dir: Path, workspace: Path) -> Testbed:
    layer = layer_path(workspace)
    make_layer(env_dir, layer, spec.system_site_packages)
    return Testbed(spec, env_dir, layer, workspace, read_only_paths(env_dir) + borrowed_objects(workspace),
                   build_layer(env_dir, workspace))


def install_script(spec: EnvSpec, env_dir: Path, log: str = "", build_wheels: Path | None = None,
                   patch_wheels: Path | None = None) -> str:
    """The harness's setup of the repository in a workspace (pre-install commands, then the install), offline.

    `log`: a file inside the sandbox's view where the install's output goes (the test log stays the tests');
    `build_wheels`: the workspace commit's build layer (Testbed.build_layer)."""
    lines = list(spec.repo_steps)
    install = reinstall_command(spec, env_dir, build_wheels, patch_wheels)
    if install:
        lines.append(install)
    if not lines:
        return ""
    body = "\n".join(lines)
    return f"{{\n{body}\n}} > {shlex.quote(log)} 2>&1" if log else body


def install_workspace(tb: Testbed, timeout: float = 1800) -> tuple[bool, str]:
    """Install the workspace into its layer, in the sandbox. Returns (ok, output)."""
    script = install_script(tb.spec, tb.env_dir, build_wheels=tb.build_layer)
    if not script:
        return True, ""
    code, output = tb.run("set -e\n" + script, timeout, writable_layer=True)
    return code == 0, output


#: the note appended to the instance prompt (prompts/swebench_environment.md) and the variables it takes
ENV_NOTE = "swebench_environment.md"
ENV_NOTE_VARIABLES = ("state", "test_cmd", "django")


def environment_note(spec: EnvSpec | None, installed: bool, error: str = "") -> str:
    """What the instance prompt says about the environment (appended to it)."""
    if spec is None:
        return ("\n<environment>\nNo prepared test environment for this repository version is available here "
                f"({error.splitlines()[0] if error else 'none configured'}); the repository's dependencies may be "
                "missing and there is no network.\n</environment>\n")
    if installed:
        state = (f"The repository's test environment is active in your shell (Python {spec.python_version}, "
                 "VIRTUAL_ENV set): its dependencies are installed, and the repository is installed from this "
                 "working directory as the harness installs it, so your changes are what Python imports.")
    else:
        state = (f"The repository's test environment is active in your shell (Python {spec.python_version}, "
                 "VIRTUAL_ENV set), but installing the repository itself into it failed; import it from the "
                 "working directory (PYTHONPATH=.) if needed.")
    django = " (Django: test module labels such as `admin_views.tests`)" if spec.repo == "django/django" else ""
    return template(ENV_NOTE, ENV_NOTE_VARIABLES).render(state=state, test_cmd=spec.test_cmd, django=django)


def _settle_setup(ws: Workspace) -> None:
    """As the harness commits its setup (`git commit -am SWE-bench`): the pre-install changes become the base
    the patch is taken against, and files the install generated stay out of the patch (.git/info/exclude)."""
    status = git(ws.path, "status", "--porcelain").splitlines()
    untracked = [line[3:] for line in status if line.startswith("?? ")]
    if untracked:
        exclude = ws.path / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write("".join(f"/{p.strip(chr(34))}\n" for p in untracked))
    if any(not line.startswith("?? ") for line in status):
        git(ws.path, "commit", "-q", "--no-verify", "-am", "SWE-bench setup (pre-install)")
        ws.base_commit = git(ws.path, "rev-parse", "HEAD").strip()


def enter_testbed(info: dict[str, Any] | None, ws: Workspace, prompt_file: Path, log_dir: Path) -> dict[str, str]:
    """For an agent run: the workspace installed into its layer (in the sandbox), the prompt told about the
    environment, and the variables that make the agent's sandboxed shell use it (CODER_SANDBOX_ENV: PATH and
    VIRTUAL_ENV inside the sandbox only; CODER_SANDBOX_EXTRA_RO: the environment mounted read-only).

    `info` is `{"spec": ..., "env_dir": ...}` for a ready environment, `{"error": ...}` for one that is not
    available here, None when the run has no environments (coder batch)."""
    if not info:
        return {}
    if "env_dir" not in info:
        _append(prompt_file, environment_note(None, False, str(info.get("error", ""))))
        return {}
    spec = EnvSpec(**info["spec"])
    tb = open_testbed(spec, Path(info["env_dir"]), ws.path)
    ok, output = install_workspace(tb)
    (log_dir / "install.log").write_text(output, encoding="utf-8")
    _settle_setup(ws)
    _append(prompt_file, environment_note(spec, ok))
    return {"CODER_SANDBOX_ENV": json.dumps(tb.shell_env()),
            "CODER_SANDBOX_EXTRA_RO": os.pathsep.join([*tb.read_only, str(tb.layer)]),
            "CODER_SANDBOX_PRIVATE_CGROUPS": "1"}


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
