"""Network by domain with the real bubblewrap sandbox, real curl, python and pip inside it, and loopback servers
named through the proxy's resolver: allowed hosts answer, denied and unlisted ones are refused with a message
that names the domain and the config key, nothing bypasses the proxy, and the proxy ends with the session."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from netproxy_support import PKG, Asker, bash_tool

from coder.netproxy.grants import load_grants
from coder.netproxy.proxy import Access
from coder.sandbox.network import NetHooks

LISTS = {"allowed_domains": ["allowed.test", "*.wild.test"], "denied_domains": ["denied.test"]}


def _host_address() -> str | None:
    """A non-loopback address of this host (where a service of the host could listen), if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.1", 1))  # no packet is sent: only the route is looked up
            return s.getsockname()[0]
    except OSError:
        return None


def test_allowed_answers_denied_and_unlisted_are_refused_by_name(git_repo: Path, state: Path, served: int) -> None:
    assert shutil.which("curl"), "curl is missing: apt-get install curl"
    events: list[Access] = []
    tool, ctx = bash_tool(git_repo, state, LISTS, NetHooks(report=events.append))
    try:
        ok = tool.run(tool.parse({"command": f"curl -sS http://allowed.test:{served}/ && "
                                  f"curl -sS -p http://sub.wild.test:{served}/"}), ctx)  # -p: a CONNECT tunnel
        assert ok.output.count("hello from the loopback server") == 2, ok.output
        assert "[network:" not in ok.output
        denied = tool.run(tool.parse({"command": f"curl -sS http://denied.test:{served}/"}), ctx)
        assert "coder refused denied.test" in denied.output and "[sandbox] denied_domains" in denied.output
        assert "hello" not in denied.output
        tunnel = tool.run(tool.parse({"command": f"curl -sS -p http://unlisted.test:{served}/"}), ctx)
        assert "hello" not in tunnel.output and tunnel.data["exit_code"] != 0
        # the model reads the refusal even when the client only says "CONNECT tunnel failed, response 403"
        assert "[network: coder refused unlisted.test: it is not in [sandbox] allowed_domains" in tunnel.output
        assert "--net-allow unlisted.test" in tunnel.output
        # *.wild.test is not wild.test
        apex = tool.run(tool.parse({"command": f"curl -sS http://wild.test:{served}/"}), ctx)
        assert "coder refused wild.test" in apex.output
    finally:
        tool.close()
    seen = {(e.host, e.allowed, e.source) for e in events}
    assert {("allowed.test", True, "allowed_domains"), ("sub.wild.test", True, "allowed_domains"),
            ("denied.test", False, "denied_domains"), ("unlisted.test", False, "unlisted"),
            ("wild.test", False, "unlisted")} <= seen


def test_no_route_around_the_proxy_and_no_dns(git_repo: Path, state: Path, served: int) -> None:
    tool, ctx = bash_tool(git_repo, state, LISTS)
    host_ip = _host_address()
    probe = f"""python3 - <<'EOF'
import socket
def attempt(what, fn):
    try:
        fn()
        print(what, "REACHED")
    except OSError as exc:
        print(what, "failed", type(exc).__name__)
attempt("loopback", lambda: socket.create_connection(("127.0.0.1", {served}), 2))
attempt("host", lambda: socket.create_connection(("{host_ip or '192.0.2.1'}", {served}), 2))
attempt("dns", lambda: socket.getaddrinfo("allowed.test", 80))
attempt("udp53", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 53)))
EOF
curl -sS --noproxy '*' http://127.0.0.1:{served}/ ; echo curl=$?"""
    try:
        out = tool.run(tool.parse({"command": probe}), ctx).output
    finally:
        tool.close()
    assert "REACHED" not in out, out
    for what in ("loopback", "host", "dns", "udp53"):
        assert f"{what} failed" in out, out
    assert "hello" not in out and "curl=7" in out


def test_questions_once_session_always_and_deny(git_repo: Path, state: Path, served: int) -> None:
    asker = Asker("once", "session", "deny", "always")
    tool, ctx = bash_tool(git_repo, state, LISTS, NetHooks(ask=asker, project_dir=git_repo))
    get = f"curl -sS http://unlisted.test:{served}/ http://unlisted.test:{served}/"
    try:
        once = tool.run(tool.parse({"command": get}), ctx)
        assert once.output.count("hello") == 2 and asker.asked == ["unlisted.test"]  # one question per command
        session = tool.run(tool.parse({"command": get}), ctx)  # "once" ended with the command: asked again
        assert session.output.count("hello") == 2 and len(asker.asked) == 2
        tool.run(tool.parse({"command": get}), ctx)
        assert len(asker.asked) == 2  # the session's answer holds
        refused = tool.run(tool.parse({"command": f"curl -sS http://files.allowed.test:{served}/"}), ctx)
        assert "coder refused files.allowed.test" in refused.output and "you refused it" in refused.output
        always = tool.run(tool.parse({"command": f"curl -sS -p http://sub2.unlisted.test:{served}/ || true"}), ctx)
        assert asker.asked[-1] == "sub2.unlisted.test" and "refused" not in always.output
    finally:
        tool.close()
    assert load_grants(git_repo) == ["sub2.unlisted.test"]  # kept outside the repository
    assert not (git_repo / ".coder" / "domains.json").exists()


def test_a_name_that_resolves_to_the_hosts_loopback_is_refused_even_when_allowed(git_repo: Path, state: Path,
                                                                                 served: int) -> None:
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": ["*"]})
    try:  # `localhost` is resolved by the system resolver (not the test's map): 127.0.0.1, the host's own
        out = tool.run(tool.parse({"command": f"NO_PROXY= no_proxy= curl -sS http://localhost:{served}/"}), ctx).output
    finally:
        tool.close()
    assert "hello" not in out and "coder refused localhost: it resolves to 127.0.0.1" in out


def test_pip_installs_from_a_loopback_index_through_the_proxy(git_repo: Path, state: Path, served: int) -> None:
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": ["allowed.test"]})
    try:
        result = tool.run(tool.parse({"command": f"/usr/bin/python3 -m pip install -q --no-cache-dir --target /tmp/t "
                                      f"--index-url http://allowed.test:{served}/simple/ --trusted-host allowed.test "
                                      f"{PKG} && PYTHONPATH=/tmp/t /usr/bin/python3 -c "
                                      "'import coder_nettest_pkg as m; print(m.VALUE)'", "timeout": 60}), ctx)
    finally:
        tool.close()
    assert "installed through the proxy" in result.output, result.output


def test_the_proxy_ends_with_the_session_and_without_lists_there_is_none(git_repo: Path, state: Path,
                                                                         served: int) -> None:
    tool, ctx = bash_tool(git_repo, state, LISTS)
    assert "hello" in tool.run(tool.parse({"command": f"curl -sS http://allowed.test:{served}/"}), ctx).output
    network = ctx.services["network"]
    sock = network.proxy.socket_path
    assert sock.exists() and network.proxy.alive
    tool.close()
    assert not network.proxy.alive and not sock.exists() and not network.folder.exists()
    plain, plain_ctx = bash_tool(git_repo, state, {})
    try:
        out = plain.run(plain.parse({"command": f"echo proxy=${{HTTP_PROXY:-none}}; "
                                                f"curl -sS http://allowed.test:{served}/"}), plain_ctx).output
    finally:
        plain.close()
    assert "proxy=none" in out and "hello" not in out and "network" not in plain_ctx.services
