"""Issue 44: a batch agent reaches what the run grants and nothing of the user's own config. The user's config
here allows a host (a loopback server standing in for github.com, which serves the future fix), shows an extra
folder that holds it too, and names a stdio MCP server (tests/ext/mcp_demo_server.py, the official SDK); the
environment says CODER_WEB_SEARCH=on. The control: a plain `coder run` with that config reaches all of it. A
`coder batch --hide-future` agent with the same config and the same script (the real SDK against the fake
server) reaches none of it, its requests declare no web search and no MCP tool, and the record says what it could
reach; `--mcp demo --web-search` grants those two, on the record and flagged."""

from __future__ import annotations

import functools
import json
import os
import secrets
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from batch_fixtures import git

from coder.base.errors import ConfigError
from coder_testkit.fake_server import FakeServer

DEMO = Path(__file__).resolve().parents[1] / "ext" / "mcp_demo_server.py"
SUM = 40000 + 2345  # what the MCP server's `add` answers: in a tool result only when the server was reached


@pytest.fixture
def world(tmp_path: Path):
    """The user's repository (c1, base, future), their config and environment, and the host serving the fix."""
    mark = f"FUTURE_FIX_{secrets.token_hex(4)}"
    site = tmp_path / "site"
    site.mkdir()
    (site / "fix.txt").write_text(f"the fix: {mark}-NET\n")
    hits: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            hits.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for text, message in (("v1\n", "c1"), ("v2\n", "base"), (f"{mark}-GIT\n", "future")):
        (repo / "f.txt").write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)
    outside = tmp_path / "notes"  # a folder of the user's that `extra_ro` shows: a checkout with the fix, say
    outside.mkdir()
    (outside / "fix.txt").write_text(f"{mark}-EXTRA\n")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[sandbox]\nallowed_domains = ["github.test"]\nextra_ro = ["{outside}"]\n\n'
                      f'[mcp.servers.demo]\ncommand = "{sys.executable}"\nargs = ["{DEMO}"]\n')
    env = {"CODER_NETPROXY_HOSTS": json.dumps({"github.test": "127.0.0.1"}), "CODER_WEB_SEARCH": "on",
           "ANTHROPIC_API_KEY": "test-key"}
    command = (f"curl -s --max-time 20 github.test:{server.server_address[1]}/fix.txt; "
               f"python3 -c \"import urllib.request as u; print(u.urlopen('ht'+'tp://github.test:"
               f"{server.server_address[1]}/fix.txt', timeout=20).read())\"; cat {outside}/fix.txt; true")
    turns = [{"text": "Look.", "tool_calls": [{"name": "bash", "input": {"command": command}}]},
             {"text": "Load.", "tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__add"}}]},
             {"text": "Ask.", "tool_calls": [{"name": "mcp__demo__add", "input": {"a": 40000, "b": 2345}}]},
             {"text": "Done."}]
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"id": "i1", "title": "fix f", "body": "please fix f"}) + "\n")
    try:
        yield {"mark": mark, "repo": repo, "issues": issues, "env": env, "script": {"turns": turns},
               "tmp": tmp_path, "hits": hits}
    finally:
        server.shutdown()
        server.server_close()


def _coder(args: list[str], env: dict[str, str], script: dict[str, Any]) -> tuple[subprocess.CompletedProcess,
                                                                                    list[dict[str, Any]]]:
    with FakeServer(script) as srv:
        proc = subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, timeout=600,
                              env={**os.environ, **env, "ANTHROPIC_BASE_URL": srv.base_url})
        return proc, srv.requests


def _declared(requests: list[dict[str, Any]]) -> set[str]:
    return {str(t.get("name")) for body in requests for t in body.get("tools") or []}


def _results(requests: list[dict[str, Any]]) -> str:
    """Every tool result the model was sent, as text."""
    return json.dumps([b for body in requests for m in body.get("messages") or [] if isinstance(m.get("content"), list)
                       for b in m["content"] if b.get("type") == "tool_result"])


def _batch(world: dict[str, Any], run: str, *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    run_dir = world["tmp"] / run
    proc, requests = _coder(["batch", str(world["issues"]), "--repo", str(world["repo"]), "--hide-future", "HEAD~1",
                             "--model", "anthropic:claude-sonnet-4-6", "--output", str(run_dir), "--no-progress",
                             "--max-turns", "6", *extra], world["env"], world["script"])
    assert proc.returncode == 0, proc.stderr
    return json.loads((run_dir / "instances" / "i1" / "status.json").read_text()), requests


def test_the_users_config_reaches_the_fix_in_a_plain_run(world):
    """The control: the plant is live. The same config, environment and script in `coder run` reach the host
    (both ways), the extra folder and the MCP server, and the request declares web search."""
    proc, requests = _coder(["run", "--cwd", str(world["repo"]), "--model", "anthropic:claude-sonnet-4-6",
                             "--permission-mode", "auto", "--output-format", "json", "go"], world["env"],
                            world["script"])
    assert proc.returncode == 0, proc.stderr
    seen = _results(requests)
    assert world["hits"] == ["/fix.txt", "/fix.txt"]  # curl, then the spliced URL in Python
    assert f"{world['mark']}-NET" in seen and f"{world['mark']}-EXTRA" in seen and str(SUM) in seen
    assert {"web_search", "mcp__demo__add"} <= _declared(requests)


def test_a_batch_agent_reaches_nothing_of_the_users_config(world):
    status, requests = _batch(world, "run")
    seen = _results(requests)
    assert world["mark"] not in seen and str(SUM) not in seen and world["hits"] == []
    assert not {"web_search", "mcp__demo__add"} & _declared(requests)
    reach = status["reach"]
    assert reach["network"] == {"presets": [], "index": False, "allowed_domains": [], "whole": False,
                                "search": False}
    assert reach["mcp"] == {} and str(world["tmp"] / "notes") not in reach["extra_ro"]
    flags = [f["flag"] for f in status["flags"]]
    assert flags.count("host: github.test") == 1  # the bare `host:port/path` and the spliced scheme: one call
    assert not [f for f in flags if f.startswith(("network", "web search", "mcp server"))]


def test_a_batch_run_grants_mcp_and_web_search_only_when_asked_and_says_so(world):
    status, requests = _batch(world, "granted", "--mcp", "demo", "--web-search")
    seen = _results(requests)
    assert str(SUM) in seen and world["mark"] not in seen and world["hits"] == []  # the server it was given only
    assert {"web_search", "mcp__demo__add"} <= _declared(requests)
    reach = status["reach"]
    assert reach["network"]["search"] is True and list(reach["mcp"]) == ["demo"]
    flags = [f["flag"] for f in status["flags"]]
    assert "web search: on (the web holds the published fix)" in flags
    assert any(f.startswith("mcp server: demo (") for f in flags) and "tool: mcp__demo__add" in flags
    bad = subprocess.run([sys.executable, "-m", "coder", "batch", str(world["issues"]), "--repo", str(world["repo"]),
                          "--model", "scripted:x", "--mcp", "nope", "--output", str(world["tmp"] / "bad")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--mcp nope: your config has no [mcp.servers.nope] (it has demo)" in bad.stderr


def test_the_reach_layer_replaces_whatever_the_user_widened(monkeypatch, tmp_path):
    """Every key of the reach, set wide by the user's file and environment, is the batch's (closed) in a batch
    agent's config; a key outside the reach is refused rather than taken."""
    from coder.config.layers import CLOSED_REACH, REACH_KEYS, load_config

    config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[sandbox]\nallowed_domains = ["github.test"]\nextra_ro = ["{tmp_path}"]\nextra_rw = '
                      f'["{tmp_path}"]\nenv_allow = ["GH_HOST"]\nnetwork_presets = ["node"]\n\n[mcp.servers.demo]\n'
                      f'command = "{sys.executable}"\n\n[web]\nsearch_backend = "https://s.test/?q={{query}}"\n')
    monkeypatch.setenv("CODER_WEB_SEARCH", "on")
    monkeypatch.setenv("CODER_SANDBOX_EXTRA_RO", str(tmp_path))
    wide = load_config(tmp_path)
    assert wide.sandbox.allowed_domains and wide.mcp.servers and wide.web.search == "on"  # the plant is live
    monkeypatch.setenv("CODER_BATCH_REACH", json.dumps({"sandbox": {"network_presets": ["python"]}}))
    closed = load_config(tmp_path, {"sandbox": {"enabled": False, "allowed_domains": ["x.test"]}})
    for section, key in REACH_KEYS:
        want = ["python"] if key == "network_presets" else CLOSED_REACH[section][key]
        assert getattr(getattr(closed, section), key) == want, (section, key)
        assert closed.origin(f"{section}.{key}").layer == "batch"
    assert closed.reach_pinned and not wide.reach_pinned
    monkeypatch.setenv("CODER_BATCH_REACH", json.dumps({"sandbox": {"hide": []}}))
    with pytest.raises(ConfigError, match="sandbox.hide is not a key of the reach"):
        load_config(tmp_path)


@pytest.mark.parametrize(("text", "hosts"), [
    ("curl -s github.test:18438/fix.txt", ["github.test"]),
    ("python3 -c \"u.urlopen('ht'+'tp://github.test:1/fix.txt')\"", ["github.test"]),
    ("git clone git@github.com:pallets/flask.git", ["github.com"]),
    ("(curl -o out.txt files.pythonhosted.org)", ["files.pythonhosted.org"]),
    ("wget https://u:p@example.com/x; curl 10.1.2.3:80/x", ["example.com", "10.1.2.3"]),
    ("sed -n 1,20p app.py:12; pytest tests/test_app.py::test_x; cat src/x.egg-info/PKG-INFO", []),
    ("curl http://127.0.0.1:8000/x; self.host = config.host", []),
])
def test_the_trajectory_names_a_host_with_or_without_a_scheme(text, hosts):
    from coder.batch.reach import hosts_named

    assert hosts_named(text) == hosts
