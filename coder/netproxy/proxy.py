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
- A request names its host in one strict spelling (`domains.canonical_host`), or gets a 400: the verdict and
  the resolver must read the same name.
- The proxy resolves names itself (nothing inside the sandbox can resolve anything). Only public addresses are
  reached: loopback, link-local (cloud metadata), unspecified and multicast never; private ranges (the LAN, a
  container bridge, the host's own interfaces) only for a name or address the user listed exactly (a private
  package index), never through a wildcard, a preset or `*`, so DNS under an allowed wildcard (or rebinding)
  does not open the host's network. An address that `denied_domains` lists is refused whatever name led to it.
  Only `hosts` (the user's explicit name -> address map, `CODER_NETPROXY_HOSTS`; tests use it for loopback
  servers) may name any address.
- Bounded: at most MAX_CONNECTIONS at once (the sandbox cannot exhaust coder's file descriptors), a request
  head within HEAD_TIMEOUT, a tunnel idle for IDLE_TIMEOUT closes, and at most MAX_QUESTIONS questions per
  shell command (then unlisted hosts are refused without asking).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from coder.netproxy.domains import DomainPolicy, Verdict, normalize_host, refusal_message
from coder.netproxy.wire import connect, parse_head, pipe, respond, unwrapped

#: a user's answer to "may the sandbox reach HOST?": "once" (this shell command), "session", "always", "deny", or
#: "deny:WHY" (what the person said with it, for the model)
Asker = Callable[[str, int], str]
HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 10.0
QUESTION_TIMEOUT = 600.0  # a question nobody answers is a refusal
MAX_CONNECTIONS = 256
MAX_QUESTIONS = 5  # per shell command


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
        self._asked_now = 0  # questions during this command
        self._open = 0  # client connections being served
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    # ---- lifecycle --------------------------------------------------------------------------------------------
    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            # the loop's own complaints (a failed accept, a reset peer) would print on the user's screen: the
            # proxy is bounded (MAX_CONNECTIONS) and every connection handles its own errors
            loop.set_exception_handler(lambda _loop, _context: None)
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
            self._asked_now = 0

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
        never = self._never_reached(host)
        if never:  # asking would offer what is refused once allowed (issue 47: "allow 127.0.0.1?", then refused)
            return verdict, never
        if self.ask is None:
            with self._lock:
                self._refused_now.add(host)
            return verdict, refusal_message(host, verdict, "nobody can be asked (a headless run)")
        loop = asyncio.get_running_loop()
        future = self._pending.get(host)
        if future is None and self._asked_now >= MAX_QUESTIONS:
            with self._lock:
                self._refused_now.add(host)
            return verdict, refusal_message(host, verdict, f"this command already asked {MAX_QUESTIONS} questions")
        if future is None:
            self._asked_now += 1
            future = loop.create_future()
            threading.Thread(target=self._ask_thread, args=(loop, future, host, port), daemon=True,
                             name="coder-netproxy-ask").start()
            self._pending[host] = future
            future.add_done_callback(lambda _f: self._pending.pop(host, None))
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), QUESTION_TIMEOUT)
        except TimeoutError:
            answer = "deny"
        if answer in ("once", "session", "always"):
            with self._lock:
                return self.policy.verdict(host), ""
        with self._lock:
            self._refused_now.add(host)
        said = " ".join(answer.partition(":")[2].split())[:300] if answer.startswith("deny:") else ""
        return verdict, refusal_message(host, verdict, "you refused it when asked" + (f", saying: {said}" if said
                                                                                       else ""))

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

    def _never_reached(self, host: str) -> str:
        """Why `host` is refused whatever the user answers, when that is known without resolving a name: an address
        of the host itself or its link, written as an address or as `localhost` (`hosts` may still map it)."""
        if host in self.hosts:
            return ""
        name = host.strip("[]").lower()
        try:
            ip = unwrapped(ipaddress.ip_address(name.split("%", 1)[0]))
        except ValueError:
            if name == "localhost" or name.endswith(".localhost"):
                return (f"coder refused {host}: it names this machine (loopback), which the sandbox never reaches; "
                        "a server the model starts runs inside the sandbox, where `localhost` is its own")
            return ""
        if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
            return (f"coder refused {host}: an address of the host itself or its link (loopback, link-local, cloud "
                    "metadata), which the sandbox never reaches, so it is not asked about")
        return ""

    async def _addresses(self, host: str, port: int, verdict: Verdict) -> list[str] | str:
        """The addresses to try, or the reason none may be used. `verdict` allowed `host`: a private address is
        reachable only when it named `host` exactly (see the module docstring)."""
        if host in self.hosts:
            return [self.hosts[host]]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host.encode("ascii"), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            return f"coder could not resolve {host}: {exc}"
        exact = verdict.pattern == host
        addresses = []
        for info in infos:
            address = str(info[4][0])
            ip = unwrapped(ipaddress.ip_address(address.split("%", 1)[0]))
            if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
                return (f"coder refused {host}: it resolves to {address}, an address of the host itself or its "
                        "link (loopback, link-local, cloud metadata), which the sandbox never reaches")
            if not ip.is_global and not exact:
                return (f"coder refused {host}: it resolves to {address}, a private address, which only a name "
                        "listed exactly in allowed_domains may reach (not a wildcard, a preset or `*`)")
            with self._lock:
                denied = self.policy.verdict(str(ip))
            if denied.action == "deny":
                return refusal_message(f"{host} ({ip})", denied)
            addresses.append(address)
        return addresses

    # ---- one client connection --------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()  # the sandbox may not hold more of coder's file descriptors
            return
        self._open += 1
        try:
            await self._serve(reader, writer)
        except Exception:  # noqa: BLE001 - one bad request must never reach the loop's handler (stderr)
            await respond(writer, 400, "coder's proxy could not read this request")
        finally:
            self._open -= 1
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            request = parse_head(head)
            if isinstance(request, str):
                await respond(writer, 400, request)
                return
            method, host, port, rest = request
            self.stats.connections += 1
            verdict, message = await self._decide(host, port)
            if message:
                self._record(Access(host, port, False, verdict.source, verdict.pattern, message))
                await respond(writer, 403, message)
                return
            addresses = await self._addresses(host, port, verdict)
            if isinstance(addresses, str):
                self._record(Access(host, port, False, "address", verdict.pattern, addresses))
                await respond(writer, 403 if addresses.startswith("coder refused") else 502, addresses)
                return
            self._record(Access(host, port, True, verdict.source, verdict.pattern))
            up_reader, upstream = await connect(addresses, port)
            if upstream is None:
                await respond(writer, 502, f"coder could not connect to {host}:{port}: {up_reader}")
                return
            assert isinstance(up_reader, asyncio.StreamReader)
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await asyncio.gather(pipe(reader, upstream), pipe(up_reader, writer))
            else:
                upstream.write(rest)
                await upstream.drain()
                to_upstream = asyncio.ensure_future(pipe(reader, upstream))
                await pipe(up_reader, writer)
                to_upstream.cancel()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
