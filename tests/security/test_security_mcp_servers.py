"""MCP servers a repository defines (the second red-team pass).

A: a trusted repository's approved `.mcp.json` server `python3 -c "...runpy.run_path(<parent's cwd>/srv.py)"` names
no workspace file, so it ran on the host; it found the workspace by itself (`/proc/PID/cwd` of coder) and ran
`srv.py`, which trust never pinned and the model's sandboxed shell may rewrite: the next session ran the model's code
on the host. A repository's server now runs in the sandbox whatever its command names; the same entry in the
user's own config still runs on the host (the control).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coder.base.schema import parse
from coder.config.programs import McpServer
from coder.config.sections import Config
from coder.ext.mcp_client import MCPManager, servers_from_config
from coder.sandbox.profile import SandboxConfig
from coder.trust import decisions as trust


def _entry(marker: Path) -> dict[str, object]:
    script = f"open({str(marker)!r}, 'w').write('ran on the host')"
    return {"command": sys.executable, "args": ["-c", script], "startup_timeout": 20}


@pytest.mark.parametrize("who", ["repository", "user"])
def test_a_repository_server_runs_in_the_sandbox_whatever_it_names(git_repo: Path, tmp_path: Path, who: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    entry = _entry(outside / "marker")
    if who == "repository":
        config = Config(trusted=True, mcp_approved={"srv": trust.server_key(entry)},
                        repo_files={".mcp.json": json.dumps({"mcpServers": {"srv": entry}}).encode()})
    else:
        config = Config()
        config.mcp.servers = {"srv": parse(McpServer, entry, "config.toml")}
    servers = servers_from_config(config, git_repo)
    assert [s.name for s in servers] == ["srv"]  # approved, trusted: it starts
    manager = MCPManager(servers, git_repo, SandboxConfig())
    try:
        manager.start_all()  # the script is no MCP server: it ends, the start fails; the marker is what counts
    finally:
        manager.close()
    assert (outside / "marker").exists() is (who == "user"), manager.states["srv"].error



@pytest.mark.parametrize("name", ["github__x", "git.hub", "ok-name_1"])
def test_a_repository_server_cannot_take_a_name_the_users_rules_match(tmp_path: Path, name: str) -> None:
    """E: the user's `allow = ["mcp__github__*"]` for their own server `github` allowed the tools of a repository
    server named `github__x` (`mcp__github__x__tool`). A repository's server name is plain, or it does not start."""
    entry = {"command": "python3", "args": ["-m", "srv"]}
    config = Config(trusted=True, mcp_approved={name: trust.server_key(entry)},
                    repo_files={".mcp.json": json.dumps({"mcpServers": {name: entry}}).encode()})
    said: list[str] = []
    started = [s.name for s in servers_from_config(config, tmp_path, said.append)]
    if name == "ok-name_1":  # the control: a plain name, approved, starts
        assert started == [name] and said == []
    else:
        assert started == [] and "may hold only letters" in said[0]
