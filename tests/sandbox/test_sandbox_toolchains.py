"""Toolchains on PATH outside HOME (as in containers whose HOME is not where tools were installed) are readable
in the sandbox; the home folder around them and its credentials are not."""

from __future__ import annotations

import os
from pathlib import Path

from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import outside_home_binds


def make_tool(prefix: Path, name: str) -> Path:
    bin_dir = prefix / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / name
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    return bin_dir


def test_path_toolchain_outside_home_is_bound_but_not_its_home(tmp_path: Path, isolated_home: Path,
                                                               monkeypatch) -> None:
    other_home = tmp_path / "otherhome"
    (other_home / ".ssh").mkdir(parents=True)
    (other_home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    tool_bin = make_tool(other_home / ".mytool", "mytool")   # a dot-folder prefix no known toolchain root: its bin only
    (other_home / ".mytool" / "credentials.toml").write_text("TOKEN")
    home_bin = other_home / "bin"                          # a bin directly in a home: only it may be bound
    home_bin.mkdir()
    (home_bin / "hometool").write_text("#!/bin/sh\necho home-tool-ran\n")
    (home_bin / "hometool").chmod(0o755)
    path_var = f"{tool_bin}:{home_bin}:{os.environ['PATH']}"
    binds = outside_home_binds(isolated_home, path_var)
    assert tool_bin in binds and home_bin in binds and other_home not in binds and other_home / ".mytool" not in binds
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("PATH", path_var)
    run = run_sandboxed(f"mytool; hometool; cat {other_home}/.ssh/id_ed25519 || echo no-key; "
                        f"cat {other_home}/.mytool/credentials.toml || echo no-token", workspace, None, 30)
    assert "tool-ran" in run.output and "home-tool-ran" in run.output
    assert "no-key" in run.output and "PRIVATE KEY" not in run.output
    assert "no-token" in run.output and "TOKEN" not in run.output.replace("no-token", "")
