"""The proxy's wire: reading a proxy request's head (one strict host spelling, the Host header the URL's), connecting,
copying bytes with an idle limit, and the refusal clients show. Pure functions over asyncio streams; the decisions
are coder/netproxy/proxy.py's."""

from __future__ import annotations

import asyncio
import ipaddress
from urllib.parse import urlsplit

from coder.netproxy.domains import canonical_host

CONNECT_TIMEOUT = 20.0
IDLE_TIMEOUT = 600.0  # a tunnel with no byte either way for this long is closed
_HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "upgrade"})


def parse_head(head: bytes) -> tuple[str, str, int, bytes] | str:
    """(method, host, port, the head to send upstream) or what is wrong with the request."""
    text = head.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "coder's proxy expects an HTTP proxy request"
    method, target, version = parts
    if method == "CONNECT":
        host, sep, port_text = target.rpartition(":")
        if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return f"CONNECT needs host:port, not {target[:100]!r}"
        name = canonical_host(host)
        if name is None:
            return f"coder's proxy reads host names in plain ASCII (or IP addresses) only, not {host[:100]!r}"
        return method, name, int(port_text), b""
    try:
        url = urlsplit(target)
        hostname = url.hostname
    except ValueError:
        return f"coder's proxy cannot read the URL {target[:100]!r}"
    if url.scheme != "http" or not hostname:
        return (f"coder's proxy forwards http:// URLs and CONNECT tunnels only, not {target[:100]!r} "
                "(for https, the client must use CONNECT)")
    try:
        port = url.port or 80
    except ValueError:
        return f"bad port in {target[:100]!r}"
    name = canonical_host(hostname)
    if name is None or not 0 < port < 65536:
        return f"coder's proxy reads host names in plain ASCII (or IP addresses) only, not {target[:100]!r}"
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    # the Host header is the URL's (a different one would ask the allowed server for another site)
    headers = [line for line in lines[1:]
               if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS | {"host"}]
    host_header = f"[{name}]" if ":" in name else name
    if url.port:
        host_header += f":{url.port}"
    out = "\r\n".join([f"{method} {path} {version}", f"Host: {host_header}", *headers, "Connection: close", "",
                        ""])
    return method, name, port, out.encode("latin-1")


async def connect(addresses: list[str], port: int) -> tuple[asyncio.StreamReader | str, asyncio.StreamWriter | None]:
    error = "no address"
    for address in addresses:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT)
            return reader, writer
        except (TimeoutError, OSError) as exc:
            error = str(exc) or type(exc).__name__
    return error, None


def unwrapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo), or the address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            return inner
    return ip


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await asyncio.wait_for(reader.read(1 << 16), IDLE_TIMEOUT):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError, TimeoutError):
        pass


async def respond(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """A refusal clients show: the reason phrase (pip and curl -v print it) and the body both carry it."""
    reason = message.replace("\r", " ").replace("\n", " ")
    body = (message + "\n").encode("utf-8", errors="replace")
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Coder-Refusal: {status}\r\n\r\n")
    try:
        writer.write(head.encode("latin-1", errors="replace") + body)
        await writer.drain()
    except (ConnectionError, OSError):
        pass
