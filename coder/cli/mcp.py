"""`coder mcp list`: the configured MCP servers, their state and their tools (a frontend of coder/ext's MCP
client: it opens the workspace the way a session does, through the engine's builder)."""

from __future__ import annotations

import json
from pathlib import Path

from coder.base.termsafe import inert_json, visible


def register(sub) -> None:
    p = sub.add_parser("mcp", help="MCP servers: `coder mcp list` shows each server, its state and its tools")
    p.add_argument("action", choices=("list",), nargs="?", default="list")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=mcp_command)


def mcp_command(args) -> int:
    # start-up time: coder.ext.mcp_client brings asyncio; `coder --help` imports this module, not the config loader
    from coder.config.layers import load_config
    from coder.engine.builder import decide_trust, git_root
    from coder.ext.mcp_client import MCPManager, server_log, servers_from_config, tool_name
    from coder.host import register_workspace

    cwd = Path(getattr(args, "cwd", ".")).resolve()
    register_workspace(cwd)
    workspace = git_root(cwd) or cwd
    register_workspace(workspace)
    trusted, request, why = decide_trust(workspace, None, None)
    config = load_config(workspace, trusted=trusted, repo_files=request.files)
    config.mcp_approved = request.servers if trusted else {}
    servers = servers_from_config(config, workspace, lambda line: print(visible(line)))
    if not trusted and ".mcp.json" in request.files:
        print(visible(f"{workspace}/.mcp.json is ignored: the workspace is not trusted ({why}); "
                      "`coder trust` shows it"))
    if not servers:
        print("no MCP servers configured ([mcp.servers.NAME] in config, or .mcp.json in the repository)")
        return 0
    manager = MCPManager(servers, workspace, config.sandbox)
    try:
        manager.start_all()
        rows = [{"name": name, "transport": s.config.transport, "source": s.config.source, "status": s.status,
                 "error": s.error, "tools": [tool_name(name, t.name) for t in s.tools]}
                for name, s in manager.states.items()]
    finally:
        manager.close()
    if args.json:
        print(inert_json(json.dumps(rows, indent=2, ensure_ascii=False)))
    else:
        for row in rows:
            print(visible(f"{row['name']}  ({row['transport']}, {row['source']})  {row['status']}"
                          + (f": {row['error']}" if row["error"] else "")))
            if row["error"] and row["transport"] == "stdio":
                print(f"    its stderr: {server_log(row['name'])}")
            for name in row["tools"]:
                print(visible(f"    {name}"))
    return 0 if all(r["status"] == "ready" for r in rows) else 1
