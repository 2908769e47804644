"""Network by domain (issue 21): what coder's filtering proxy adds per request, and to a large download.

Usage: python benchmarks/netproxy.py [--quick] [--write-section FILE]

One loopback HTTP server (a page and a large file), named `bench.test` through the proxy's resolver; in the same
run, each measured the same way:
- direct: a new TCP connection per request from this process to the server (the floor);
- proxy, plain http: the same request in absolute form to coder's proxy over its Unix socket;
- proxy, CONNECT tunnel: CONNECT over the Unix socket, then the request through the tunnel (what HTTPS pays,
  without the TLS handshake, which the proxy does not touch);
- sandbox: the whole path a tool inside the sandbox takes: python in the bwrap sandbox, through the relay on its
  127.0.0.1:3128 to the socket and the proxy (http_proxy set by coder).
Throughput: one download of the large file each way (curl in the sandbox for the last one).
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coder.sandbox.network import HOSTS_VAR, network_for  # noqa: E402
from coder.sandbox.profile import SandboxConfig  # noqa: E402
from coder.sandbox.shell import PersistentShell  # noqa: E402


class _Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args: object) -> None:
        pass


def _serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a, **k: _Quiet(*a, directory=str(root), **k))
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, server.server_address[1]


def _read_response(sock: socket.socket) -> int:
    total = 0
    while data := sock.recv(1 << 16):
        total += len(data)
    return total


def _direct(port: int, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: bench.test\r\n\r\n".encode())
        return _read_response(s)


def _via_proxy(sock_path: Path, port: int, path: str) -> int:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock_path))
        s.sendall(f"GET http://bench.test:{port}{path} HTTP/1.0\r\nHost: bench.test\r\n\r\n".encode())
        return _read_response(s)


def _via_tunnel(sock_path: Path, port: int, path: str) -> int:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock_path))
        s.sendall(f"CONNECT bench.test:{port} HTTP/1.1\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert b" 200 " in head, head
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: bench.test\r\n\r\n".encode())
        return _read_response(s)


def _timed(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


_INSIDE = """
import socket, statistics, time
def get(path):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(("GET http://bench.test:%d%s HTTP/1.0\\r\\nHost: bench.test\\r\\n\\r\\n" % (PORT, path)).encode())
    n = 0
    while True:
        d = s.recv(65536)
        if not d: break
        n += len(d)
    s.close()
    return n
times = []
for _ in range(N):
    t = time.perf_counter(); get("/index.html"); times.append(time.perf_counter() - t)
print("MEDIAN", statistics.median(times) * 1000)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 requests and a 32 MiB file (else 500, 256 MiB)")
    parser.add_argument("--write-section", type=Path, help="write the Markdown section here")
    args = parser.parse_args()
    n, mib = (100, 32) if args.quick else (500, 256)
    tmp = Path(tempfile.mkdtemp(prefix="coder-bench-net-"))
    (tmp / "www").mkdir()
    (tmp / "www" / "index.html").write_text("hello\n" * 100)
    with open(tmp / "www" / "big.bin", "wb") as f:
        f.write(os.urandom(1 << 20) * mib)
    ws = tmp / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    server, port = _serve(tmp / "www")
    os.environ[HOSTS_VAR] = json.dumps({"bench.test": "127.0.0.1"})
    cfg = SandboxConfig.from_dict({"allowed_domains": ["bench.test"]})
    services: dict = {}
    network = network_for(services, cfg)
    assert network is not None
    sock = network.proxy.socket_path
    shell = PersistentShell(ws, cfg, network=network.link)
    shell.start()
    try:
        rows = []
        lat = {
            "direct (new TCP connection per request)": _timed(lambda: _direct(port, "/index.html"), n),
            "coder proxy, plain http (Unix socket)": _timed(lambda: _via_proxy(sock, port, "/index.html"), n),
            "coder proxy, CONNECT tunnel (Unix socket)": _timed(lambda: _via_tunnel(sock, port, "/index.html"), n),
        }
        script = _INSIDE.replace("PORT", str(port)).replace("N)", f"{n})")
        (ws / "bench_inside.py").write_text(script)
        out = shell.run("/usr/bin/python3 bench_inside.py", 120).output
        lat["inside the sandbox: relay 127.0.0.1:3128 + proxy"] = float(out.split("MEDIAN")[1].split()[0])
        size = mib << 20
        thr = {}
        for name, fn in (("direct", lambda: _direct(port, "/big.bin")),
                         ("coder proxy, CONNECT tunnel", lambda: _via_tunnel(sock, port, "/big.bin"))):
            t = time.perf_counter()
            got = fn()
            thr[name] = size / (1 << 20) / (time.perf_counter() - t)
            assert got >= size
        direct_curl = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}",
                                      f"http://127.0.0.1:{port}/big.bin"], capture_output=True, text=True)
        thr["host curl, direct"] = float(direct_curl.stdout.strip()) / (1 << 20)
        out = shell.run(f"curl -sS -o /dev/null -w '%{{speed_download}}' -p http://bench.test:{port}/big.bin", 300)
        thr["inside the sandbox: curl through relay + proxy (tunnel)"] = float(out.output.strip()) / (1 << 20)
        base = lat["direct (new TCP connection per request)"]
        for name, ms in lat.items():
            rows.append(f"| {name} | {ms:.3f} | {ms - base:+.3f} |")
        thr_rows = [f"| {name} | {mbs:.0f} |" for name, mbs in thr.items()]
    finally:
        shell.close()
        network.close()
        server.shutdown()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()[0]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/netproxy.py" + (" --quick" if args.quick else "") + \
        " --write-section benchmarks/sections/netproxy.md"
    text = "\n".join([
        "## Network by domain: proxy overhead (issue 21)", "",
        f"Command: `{command}` · date: {when} · machine: {os.cpu_count()} cores, load average {load:.1f} at the end "
        f"(shared with parallel work: noisy) · {n} requests per case (median), one {mib} MiB download per case; "
        "a loopback server named `bench.test` through the proxy's resolver.", "",
        "| request path (small page) | median ms | added vs direct |", "|---|---:|---:|", *rows, "",
        "| large download | MiB/s |", "|---|---:|", *thr_rows, "",
        "The proxy is an asyncio loop in coder's own process; a request through it costs one more connection "
        "(the Unix socket), the head parse and the domain verdict, and for plain http one rewritten request "
        "head. Inside the sandbox a request also crosses the relay (a thread per connection in a small Python "
        "process inside the sandbox). No TLS is terminated, so HTTPS pays the tunnel and nothing more. The "
        "download rows to compare are the two curl ones (same client); the Python rows share one interpreter "
        "(and its GIL) between the client and the proxy, which understates the proxy.", ""])
    print(text)
    if args.write_section:
        args.write_section.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
