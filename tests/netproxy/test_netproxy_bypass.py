"""Attacks on network by domain found by red-teaming (2026-11-25), each with the real bubblewrap sandbox, a real
upstream the test owns and raw proxy requests made inside the sandbox: other spellings of a denied host, the
host's own network reached through an allowed wildcard, a flood of connections, and malformed requests. Each
attack has its control (the same request, spelled plainly or listed exactly, does what the lists say)."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from netproxy_support import bash_tool

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.netproxy.domains import canonical_host


def _host_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.1", 1))  # no packet is sent: only the route is looked up
        address = s.getsockname()[0]
    assert not address.startswith("127."), "this test needs a non-loopback interface (a private address)"
    return address


class _Seen(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.seen.append(self.path)
        body = b"UPSTREAM-SAW " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def host_service() -> Iterator[tuple[str, int, list[str]]]:
    """A service of the host on its private address (as a database or an admin page would be)."""
    address = _host_address()
    seen: list[str] = []
    handler = type("Seen", (_Seen,), {"seen": seen})
    server = http.server.ThreadingHTTPServer((address, 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield address, server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def _connects(tool: Any, ctx: Any, targets: list[str]) -> dict[str, str]:
    """Raw CONNECT requests through the sandbox's relay; the status line of each answer."""
    script = "import socket, sys\nfor t in sys.argv[1:]:\n" \
             "    s = socket.create_connection(('127.0.0.1', 3128), 5)\n" \
             "    s.sendall(('CONNECT %s HTTP/1.1\\r\\n\\r\\n' % t).encode('utf-8'))\n" \
             "    line = s.recv(300).split(b'\\r\\n')[0].decode('latin-1')\n" \
             "    if line.endswith('established'):\n" \
             "        s.sendall(b'GET /via-' + t.encode('utf-8').hex().encode() + b' HTTP/1.0\\r\\n\\r\\n')\n" \
             "        reply = b''\n" \
             "        while chunk := s.recv(300):\n" \
             "            reply += chunk\n" \
             "        line += ' ' + reply.decode('latin-1').split('\\r\\n')[-1]\n" \
             "    print('RESULT', t.encode('utf-8').hex(), line)\n"
    (ctx.workspace / "probe.py").write_text(script)
    args = " ".join(f"$'{t}'" for t in targets)
    out = tool.run(tool.parse({"command": f"python3 probe.py {args}"}), ctx).output
    results = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, hexed, status = line.split(" ", 2)
            results[bytes.fromhex(hexed).decode("utf-8")] = status
    assert len(results) == len(targets), out
    return results


def test_other_spellings_of_a_denied_address_are_refused(git_repo: Path, state: Path, host_service) -> None:
    address, port, seen = host_service
    a, b, c, d = (int(x) for x in address.split("."))
    decimal, hexa = str((a << 24) | (b << 16) | (c << 8) | d), f"0x{a:x}.{b}.{c}.{d}"
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": ["*", address], "denied_domains": [address]})
    try:
        got = _connects(tool, ctx, [f"{decimal}:{port}", f"{hexa}:{port}", f"{a}.{b}.{(c << 8) | d}:{port}",
                                    f"[::ffff:{address}]:{port}", f"{address}\\u00ad:{port}", f"{address}:{port}"])
    finally:
        tool.close()
    assert seen == [], got  # nothing reached the service
    for target, status in got.items():
        assert " 200 " not in status, (target, status)
    assert " 403 " in got[f"{address}:{port}"]  # control: the plain spelling is the denied one
    assert " 403 " in got[f"[::ffff:{address}]:{port}"]  # the mapped form is read as the address itself
    assert " 400 " in got[f"{decimal}:{port}"] and " 400 " in got[f"{hexa}:{port}"]


def test_a_wildcard_does_not_open_the_hosts_private_network_but_an_exact_listing_does(
        git_repo: Path, state: Path, host_service) -> None:
    address, port, seen = host_service
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": ["*"]})
    try:
        wide = _connects(tool, ctx, [f"{address}:{port}"])[f"{address}:{port}"]
    finally:
        tool.close()
    assert " 403 " in wide and "private address" in wide and seen == []
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": [address]})  # the user names it: a private index
    try:
        exact = _connects(tool, ctx, [f"{address}:{port}"])[f"{address}:{port}"]
    finally:
        tool.close()
    assert "established" in exact and "UPSTREAM-SAW /via-" in exact and len(seen) == 1


def test_a_flood_of_connections_is_capped_and_malformed_requests_get_an_answer(git_repo: Path, state: Path,
                                                                               served: int) -> None:
    tool, ctx = bash_tool(git_repo, state, {"allowed_domains": ["allowed.test"]})
    flood = """python3 - <<'EOF'
import socket, time
held = []
for _ in range(300):  # more than the proxy serves at once (MAX_CONNECTIONS)
    try:
        held.append(socket.create_connection(('127.0.0.1', 3128), 5))
    except OSError:
        break
print('HELD', len(held))
for s in held:
    s.close()
bad_requests = (b'CONNECT allowed.test:99999 HTTP/1.1', b'GET http://[::1/ HTTP/1.1',
                b'CONNECT ' + b'a' * 70 + b'.test:80 HTTP/1.1')
for bad in bad_requests:
    for _ in range(50):  # the proxy frees the flood's slots as it sees them close
        try:
            s = socket.create_connection(('127.0.0.1', 3128), 5)
            s.sendall(bad + b'\\r\\n\\r\\n')
            answer = s.recv(100)
        except OSError:
            answer = b''
        if answer:
            break
        time.sleep(0.1)
    print('BAD', answer.split(b'\\r\\n')[0].decode())
EOF"""
    try:
        out = tool.run(tool.parse({"command": flood}), ctx).output
        after = tool.run(tool.parse({"command": f"curl -sS http://allowed.test:{served}/"}), ctx).output
    finally:
        tool.close()
    assert out.count("BAD HTTP/1.1 400") == 3, out
    assert "hello from the loopback server" in after  # the proxy still serves once the flood is gone


@pytest.mark.parametrize("host", ["secr\u00adet.corp.test", "3221225986", "0xc0.0.2.2", "192.0.514", "ex\u00b2.test",
                                  "a..b", "-a.test", "*.x.test", ""])
def test_hosts_without_one_plain_spelling_have_no_canonical_form(host: str) -> None:
    assert canonical_host(host) is None


def test_canonical_hosts() -> None:
    assert canonical_host("PyPI.org.") == "pypi.org"
    assert canonical_host("[::ffff:10.0.0.1]") == "10.0.0.1"
    assert canonical_host("2001:db8::1") == "2001:db8::1"
    assert canonical_host("files_1.example.com") == "files_1.example.com"


def test_network_true_with_a_deny_list_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="denied_domains"):
        settings({"sandbox": {"network": True, "denied_domains": ["evil.test"]}})


def test_an_address_never_reached_is_refused_without_a_question(tmp_path: Path) -> None:
    """Issue 47: web_fetch of http://127.0.0.1/ asked "allow 127.0.0.1?", then refused it once allowed. Loopback,
    link-local (cloud metadata) and `localhost` are refused at once, and nobody is asked; an unlisted public name
    (the control) is still asked about."""
    from coder.netproxy.client import FetchError, fetch
    from coder.netproxy.domains import DomainPolicy
    from coder.netproxy.proxy import NetProxy

    asked: list[str] = []
    proxy = NetProxy(DomainPolicy.from_lists(["pypi.org"], [], []), tmp_path / "proxy.sock",
                     ask=lambda host, port: asked.append(host) or "deny")
    proxy.start()
    try:
        for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest/", "http://localhost/", "http://0.0.0.0/"):
            with pytest.raises(FetchError, match="never reaches"):
                fetch(proxy.socket_path, url, max_bytes=1000, timeout=10)
        assert asked == []
        with pytest.raises(FetchError, match="refused it when asked"):
            fetch(proxy.socket_path, "http://unlisted.example/", max_bytes=1000, timeout=10)
        assert asked == ["unlisted.example"]
    finally:
        proxy.close()
