"""The filtering proxy: one asyncio loop in a thread of coder's own process, listening on a Unix socket.

Why this shape:
- A thread of the session's process, not a child process: it cannot outlive the session (it ends with `close()`
  and, at the latest, with the process), and questions and events reach the engine as plain calls.
- A Unix socket in a private folder, bound read-only into the sandbox: the sandbox's network namespace stays
  empty (loopback only), so nothing inside reaches anything except through this decision point; a relay inside
  (`relay.py`) offers it as 127.0.0.1:3128 to tools that only speak TCP proxies.
- HTTP CONNECT for HTTPS and anything else tunnelled (no TLS interception: the proxy sees the host name of the
  CONNECT line, never the traffic), and plain `http://` requests in absolute form, forwarded one request per
  connection (`Connection: close`), so a second request on a kept-alive connection cannot ride on the first
  one's verdict.
- The proxy resolves names itself (nothing inside the sandbox can resolve anything); addresses on the host's
  loopback, link-local (cloud metadata at 169.254.169.254), unspecified or multicast ranges are refused even for
  an allowed name, so an allowed wildcard whose DNS points at 127.0.0.1 does not open the host's own services.
  Only `hosts` (the user's explicit name -> address map, `CODER_NETPROXY_HOSTS`; tests use it for loopback
  servers) may name such an address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from coder.netproxy.domains import DomainPolicy, Verdict, normalize_host, refusal_message

#: a user's answer to "may the sandbox reach HOST?": "once" (this shell command), "session", "always", "deny"
Asker = Callable[[str, int], str]
HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 20.0
HEAD_TIMEOUT = 30.0
_HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "upgrade"})


@dataclass(frozen=True)
class Access:
    """One host the sandbox tried to reach, as the event stream records it."""

    host: str
    port: int
    allowed: bool
    source: str  # allowed_domains / preset python / answer session / denied_domains / unlisted / address
    pattern: str | None
    message: str = ""


@dataclass
class ProxyStats:
    connections: int = 0
    refused: int = 0
    hosts: set[str] = field(default_factory=set)


class NetProxy:
    """Start with `start()`, stop with `close()`. `ask` is None in headless runs (unlisted hosts are refused);
    `report` receives one Access per host and verdict per shell command (`new_command` starts a command);
    `save_always` stores an "always" answer."""

    def __init__(self, policy: DomainPolicy, socket_path: Path, ask: Asker | None = None,
                 report: Callable[[Access], None] | None = None, hosts: dict[str, str] | None = None,
                 save_always: Callable[[str], None] | None = None) -> None:
        self.policy = policy
        self.socket_path = socket_path
        self.ask = ask
        self.report = report
        self.hosts = {normalize_host(k): v for k, v in (hosts or {}).items()}
        self.save_always = save_always
        self.stats = ProxyStats()
        self._lock = threading.Lock()
        self._reported: set[tuple[str, bool]] = set()
        self._refused_now: set[str] = set()  # unlisted hosts refused during this command: asked once only
        self._refusals: list[str] = []
        self._pending: dict[str, asyncio.Future[str]] = {}
        self._ask_lock = threading.Lock()  # one question at a time
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    # ---- lifecycle --------------------------------------------------------------------------------------------
    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_unix_server(self._handle, path=str(self.socket_path), limit=HEAD_LIMIT))
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                self._server.close()
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                loop.run_until_complete(asyncio.sleep(0))
                loop.close()

        self._thread = threading.Thread(target=run, name="coder-netproxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise OSError(f"the network proxy could not listen on {self.socket_path}: {failure[0]}")

    def close(self) -> None:
        """Stop listening, end every open tunnel, remove the socket. Idempotent."""
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        try:
            self.socket_path.unlink()
        except OSError:
            pass

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ---- per command ------------------------------------------------------------------------------------------
    def new_command(self) -> None:
        """A shell command starts: "once" answers and the per-command records begin again."""
        with self._lock:
            self.policy.new_command()
            self._reported.clear()
            self._refused_now.clear()
            self._refusals.clear()

    def take_refusals(self) -> list[str]:
        """The refusal messages since the command started, one per host (for the model's note)."""
        with self._lock:
            out, self._refusals = self._refusals, []
            return out

    # ---- decisions --------------------------------------------------------------------------------------------
    async def _decide(self, host: str, port: int) -> tuple[Verdict, str]:
        """(verdict, refusal message or "")."""
        with self._lock:
            verdict = self.policy.verdict(host)
            if verdict.action == "ask" and host in self._refused_now:
                return verdict, refusal_message(host, verdict, "it was refused earlier in this command")
        if verdict.action == "deny":
            return verdict, refusal_message(host, verdict)
        if verdict.action == "allow":
            return verdict, ""
        if self.ask is None:
            with self._lock:
                self._refused_now.add(host)
            return verdict, refusal_message(host, verdict, "nobody can be asked (a headless run)")
        loop = asyncio.get_running_loop()
        future = self._pending.get(host)
        if future is None:
            future = loop.create_future()
            threading.Thread(target=self._ask_thread, args=(loop, future, host, port), daemon=True,
                             name="coder-netproxy-ask").start()
            self._pending[host] = future
            future.add_done_callback(lambda _f: self._pending.pop(host, None))
        answer = await asyncio.shield(future)
        if answer in ("once", "session", "always"):
            with self._lock:
                return self.policy.verdict(host), ""
        with self._lock:
            self._refused_now.add(host)
        return verdict, refusal_message(host, verdict, "you refused it when asked")

    def _ask_thread(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[str], host: str,
                    port: int) -> None:
        """A daemon thread per question (one question at a time): a question nobody answers never holds up the
        interpreter's exit, as a pool's worker would."""
        with self._ask_lock:
            answer = self._ask(host, port)
        try:
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(answer))
        except RuntimeError:  # the proxy was closed meanwhile
            pass

    def _ask(self, host: str, port: int) -> str:
        """Runs in a question thread; a failing frontend counts as a refusal."""
        with self._lock:  # a second connection queued behind the first question: already answered
            if self.policy.verdict(host).action == "allow":
                return "once"
        try:
            answer = self.ask(host, port) if self.ask is not None else "deny"
        except Exception:  # noqa: BLE001 - a broken question must not kill the proxy
            answer = "deny"
        if answer in ("once", "session", "always"):
            with self._lock:
                self.policy.grant(host, answer)
            if answer == "always" and self.save_always is not None:
                try:
                    self.save_always(normalize_host(host))
                except OSError:
                    pass
        return answer

    def _record(self, access: Access) -> None:
        with self._lock:
            key = (access.host, access.allowed)
            first = key not in self._reported
            self._reported.add(key)
            if not access.allowed:
                self.stats.refused += 1
                if first:
                    self._refusals.append(access.message)
            else:
                self.stats.hosts.add(access.host)
        if first and self.report is not None:
            try:
                self.report(access)
            except Exception:  # noqa: BLE001 - an event sink must not break a download
                pass

    async def _addresses(self, host: str, port: int) -> list[str] | str:
        """The addresses to try, or the reason none may be used."""
        if host in self.hosts:
            return [self.hosts[host]]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return f"coder could not resolve {host}: {exc}"
        addresses = []
        for info in infos:
            address = str(info[4][0])
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            mapped = getattr(ip, "ipv4_mapped", None) or ip
            if mapped.is_loopback or mapped.is_link_local or mapped.is_unspecified or mapped.is_multicast:
                return (f"coder refused {host}: it resolves to {address}, an address of the host itself or its "
                        "link (loopback, link-local, cloud metadata), which the sandbox never reaches")
            addresses.append(address)
        return addresses

    # ---- one client connection --------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            request = _parse_head(head)
            if isinstance(request, str):
                await _respond(writer, 400, request)
                return
            method, host, port, rest = request
            self.stats.connections += 1
            verdict, message = await self._decide(host, port)
            if message:
                self._record(Access(host, port, False, verdict.source, verdict.pattern, message))
                await _respond(writer, 403, message)
                return
            addresses = await self._addresses(host, port)
            if isinstance(addresses, str):
                self._record(Access(host, port, False, "address", verdict.pattern, addresses))
                await _respond(writer, 403 if addresses.startswith("coder refused") else 502, addresses)
                return
            self._record(Access(host, port, True, verdict.source, verdict.pattern))
            up_reader, upstream = await _connect(addresses, port)
            if upstream is None:
                await _respond(writer, 502, f"coder could not connect to {host}:{port}: {up_reader}")
                return
            assert isinstance(up_reader, asyncio.StreamReader)
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
            else:
                upstream.write(rest)
                await upstream.drain()
                to_upstream = asyncio.ensure_future(_pipe(reader, upstream))
                await _pipe(up_reader, writer)
                to_upstream.cancel()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()


def _parse_head(head: bytes) -> tuple[str, str, int, bytes] | str:
    """(method, host, port, the head to send upstream) or what is wrong with the request."""
    text = head.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "coder's proxy expects an HTTP proxy request"
    method, target, version = parts
    if method == "CONNECT":
        host, sep, port_text = target.rpartition(":")
        if not sep or not port_text.isdigit():
            return f"CONNECT needs host:port, not {target!r}"
        return method, normalize_host(host), int(port_text), b""
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return (f"coder's proxy forwards http:// URLs and CONNECT tunnels only, not {target[:100]!r} "
                "(for https, the client must use CONNECT)")
    try:
        port = url.port or 80
    except ValueError:
        return f"bad port in {target[:100]!r}"
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    headers = [line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    out = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
    return method, normalize_host(url.hostname), port, out.encode("latin-1")


async def _connect(addresses: list[str], port: int) -> tuple[asyncio.StreamReader | str, asyncio.StreamWriter | None]:
    error = "no address"
    for address in addresses:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT)
            return reader, writer
        except (TimeoutError, OSError) as exc:
            error = str(exc) or type(exc).__name__
    return error, None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _respond(writer: asyncio.StreamWriter, status: int, message: str) -> None:
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
