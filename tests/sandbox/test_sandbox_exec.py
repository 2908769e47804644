"""One-shot sandboxed runs, the availability check, the environment filter and the profile."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from coder.base.errors import ConfigError, SandboxUnavailable
from coder.config.layers import settings
from coder.host.env import looks_secret
from coder.sandbox.check import check_sandbox, require_sandbox
from coder.sandbox.env import sandbox_env
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig, bwrap_args, home_binds


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"


def test_run_sandboxed_basics(git_repo: Path) -> None:
    run = run_sandboxed("cat README.md; echo err >&2; exit 4", git_repo, None, 10)
    assert run.exit_code == 4 and not run.timed_out
    assert run.output == "# demo\nerr\n"
    run = run_sandboxed("tr a-z A-Z", git_repo, None, 10, stdin="hello")
    assert run.output == "HELLO" and run.exit_code == 0
    run = run_sandboxed("echo $CHECK_NAME $API_TOKEN", git_repo, None, 10,
                        env={"CHECK_NAME": "lint", "API_TOKEN": "leak"})
    assert run.output.strip() == "lint"


def test_run_sandboxed_is_sandboxed(git_repo: Path, tmp_path: Path) -> None:
    run = run_sandboxed(f"touch {tmp_path}/escaped; echo x > .git/hooks/pre-push; ls /proc | grep -c '^[0-9]'",
                        git_repo, None, 10)
    assert not (tmp_path / "escaped").exists()
    assert not (git_repo / ".git" / "hooks" / "pre-push").exists()
    assert int(run.output.strip().splitlines()[-1]) < 10  # its own pid namespace


def test_private_cgroups_hide_the_hosts_cgroup_tree(git_repo: Path) -> None:
    """SWE-bench testbeds see no host cgroup tree, as a container on a cgroup v2 host: on a cgroup v1 host its
    `cpu.shares = 1024` reads as one CPU to code that counts CPUs the Docker way (pylint's _cpu_count)."""
    listing = "ls /sys/fs/cgroup | wc -l; touch /sys/fs/cgroup/planted 2>/dev/null && echo WRITABLE"
    host = run_sandboxed(listing, git_repo, None, 10)
    assert int(host.output.split()[0]) > 0, "control: the host's cgroup tree is visible by default"
    private = run_sandboxed(listing, git_repo, SandboxConfig(private_cgroups=True), 10)
    assert private.exit_code != 0 and private.output.split()[0] == "0", private.output
    assert "WRITABLE" not in private.output


def test_hide_empties_a_path_a_bound_folder_holds(git_repo: Path) -> None:
    """`hide` (issue 44: the mirrors, the dataset, other instances, local package indexes) puts an empty folder or
    file over a path a bound folder shows (here a toolchain under HOME), while what is bound more specifically
    inside it (extra_ro, the workspace) stays visible."""
    toolchain = Path(os.environ["HOME"]) / ".pyenv"
    for rel, text in (("answers/fix.txt", "GOLD-FIX"), ("answers/kept/ok.txt", "KEPT"), ("index.txt", "GOLD-INDEX"),
                      ("other/ok.txt", "VISIBLE")):
        (toolchain / rel).parent.mkdir(parents=True, exist_ok=True)
        (toolchain / rel).write_text(text)
    show = "cat " + " ".join(str(toolchain / rel) for rel in ("answers/fix.txt", "index.txt", "other/ok.txt",
                                                              "answers/kept/ok.txt"))
    plain = run_sandboxed(show, git_repo, None, 10)
    assert "GOLD-FIX" in plain.output and "GOLD-INDEX" in plain.output, "control: the toolchain is bound"
    cfg = SandboxConfig(hide=[str(toolchain / "answers"), str(toolchain / "index.txt"), str(git_repo.parent)],
                        extra_ro=[str(toolchain / "answers" / "kept")])
    hidden = run_sandboxed(show + f"; ls -A {toolchain}/answers; touch {toolchain}/answers/planted", git_repo, cfg, 10)
    assert "GOLD" not in hidden.output, hidden.output
    assert "VISIBLE" in hidden.output and "KEPT" in hidden.output, hidden.output
    assert not (toolchain / "answers" / "planted").exists()
    assert run_sandboxed("cat README.md", git_repo, cfg, 10).output == "# demo\n"  # the workspace inside a hidden one


def test_run_sandboxed_timeout_kills_everything(git_repo: Path) -> None:
    started = time.monotonic()
    run = run_sandboxed("sleep 600 & sleep 600; echo never", git_repo, None, 1)
    assert run.timed_out and run.exit_code is None
    assert "never" not in run.output and "timed out after 1s" in run.output
    assert time.monotonic() - started < 60  # not the 600 s of its commands


def test_run_sandboxed_output_cap(git_repo: Path) -> None:
    run = run_sandboxed("yes", git_repo, SandboxConfig(max_output_bytes=100_000), 20)
    assert run.dropped_bytes > 0 and "bytes dropped" in run.output


def test_run_unsandboxed_when_disabled(git_repo: Path) -> None:
    run = run_sandboxed("ls /proc | grep -c '^[0-9]'", git_repo, SandboxConfig(enabled=False), 10)
    assert int(run.output.strip()) > 10


def test_check_sandbox_and_refusal(monkeypatch: pytest.MonkeyPatch, git_repo: Path) -> None:
    ok = check_sandbox(refresh=True)
    assert ok.ok and "bubblewrap" in ok.detail
    require_sandbox()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        missing = check_sandbox(refresh=True)
        assert not missing.ok and "apt-get install bubblewrap" in missing.fix
        with pytest.raises(SandboxUnavailable) as info:
            require_sandbox()
        assert "--no-sandbox" in str(info.value) and "apt-get install bubblewrap" in str(info.value)
        with pytest.raises(SandboxUnavailable):
            run_sandboxed("true", git_repo, None, 5)
    finally:
        monkeypatch.undo()
        check_sandbox(refresh=True)


def test_secret_names() -> None:
    for name in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "NPM_AUTH_TOKEN",
                 "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "MYAPIKEY", "PGPASSWORD"):
        assert looks_secret(name), name
    for name in ("PATH", "HOME", "LANG", "GIT_AUTHOR_NAME", "PYENV_ROOT", "TERM", "KEYBOARD_LAYOUT"):
        assert not looks_secret(name), name


def test_sandbox_env_is_an_allow_list() -> None:
    env = sandbox_env({"PATH": "/x", "OPENAI_API_KEY": "k", "RANDOM_THING": "r", "LC_ALL": "C"}, "/h",
                      extra_allow=["RANDOM_THING", "OPENAI_API_KEY"])
    assert env["PATH"] == "/x" and env["HOME"] == "/h" and env["LC_ALL"] == "C" and env["RANDOM_THING"] == "r"
    assert "OPENAI_API_KEY" not in env and env["GIT_PAGER"] == "cat"
    assert "SOMETHING" not in sandbox_env({"SOMETHING": "x"}, "/h")


def test_config_validation() -> None:
    assert settings({"sandbox": {"timeout": 5, "network": True}}).sandbox.timeout == 5.0
    with pytest.raises(ConfigError, match="unknown key .did you mean network"):
        settings({"sandbox": {"netwrk": True}})
    with pytest.raises(ConfigError, match="expected true or false"):
        settings({"sandbox": {"network": "yes"}})
    with pytest.raises(ConfigError, match="expected a list of strings"):
        settings({"sandbox": {"extra_rw": "/tmp"}})


def test_profile_refuses_home_as_workspace(isolated_home: Path) -> None:
    with pytest.raises(ConfigError, match="contains your home folder"):
        bwrap_args(isolated_home, SandboxConfig())


def test_home_binds_skip_credentials(isolated_home: Path) -> None:
    for rel in (".pyenv/bin", ".cargo/bin", ".ssh", ".config/gh", ".local/bin"):
        (isolated_home / rel).mkdir(parents=True)
    path = f"{isolated_home}/.ssh:{isolated_home}/.config/gh:{isolated_home}/.local/bin:/usr/bin"
    binds = home_binds(isolated_home, path)
    assert isolated_home / ".pyenv" in binds and isolated_home / ".cargo/bin" in binds
    assert isolated_home / ".local/bin" in binds
    assert not any(b.name in (".ssh", "gh") for b in binds)


def test_extra_paths(git_repo: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("readable")
    out = tmp_path / "out"
    out.mkdir()
    run = run_sandboxed(f"cat {shared}/data.txt; echo w > {shared}/w; echo ok > {out}/result", git_repo,
                        SandboxConfig(extra_ro=[str(shared)], extra_rw=[str(out)]), 10)
    assert "readable" in run.output and not (shared / "w").exists()
    assert (out / "result").read_text() == "ok\n"
    with pytest.raises(ConfigError, match="does not exist"):
        bwrap_args(git_repo, SandboxConfig(extra_rw=[str(tmp_path / "missing")]))
    assert os.geteuid() != 0 or "--cap-drop" in bwrap_args(git_repo, SandboxConfig())


def test_unsandboxed_background_job_does_not_hang(git_repo: Path) -> None:
    started = time.monotonic()
    run = run_sandboxed("sleep 600 & echo quick", git_repo, SandboxConfig(enabled=False), 120)
    assert run.output.strip() == "quick" and run.exit_code == 0 and not run.timed_out
    assert time.monotonic() - started < 60  # a run that waited for the job would take its 120 s timeout

