"""Is this machine's network what a repository's tests expect of the harness's containers?

The harness runs every instance in a Docker container with the internet. A few repositories' tests depend on it
(psf/requests: httpbin.org must answer, and a connect to the non-routable 10.255.255.1 must time out). Where
this machine's network differs (no internet names, or a gateway that accepts every TCP connection), those tests
fail for the gold patch too, and a local "not resolved" would be a verdict about the machine, not the patch. So
the evaluator asks once per process, before running such tests, and reports "could not evaluate here" with the
reason and the official command instead (coder/batch/evaluate.py).

The expectations are data (swebench_local.json `test_network_probe`): `reaches` lists host:port that must accept
a TCP connection, `times_out` lists host:port whose connection must neither complete nor be refused in time.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Sequence

#: seconds a reachable host gets to accept, and a tarpit must stay silent for
CONNECT_TIMEOUT = 3.0
TARPIT_WAIT = 0.5


def _split(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host, int(port)


def _connect(hostport: str, timeout: float) -> str:
    """'ok', 'timeout', or what went wrong (a resolver or socket error)."""
    host, port = _split(hostport)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return "ok"
    except socket.gaierror as exc:
        return f"does not resolve ({exc.strerror or exc})"
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return exc.strerror or str(exc)


@functools.lru_cache(maxsize=32)
def _missing(reaches: tuple[str, ...], times_out: tuple[str, ...]) -> str | None:
    problems = []
    for hostport in reaches:
        outcome = _connect(hostport, CONNECT_TIMEOUT)
        if outcome != "ok":
            problems.append(f"{hostport} is not reachable: {outcome}")
    for hostport in times_out:
        outcome = _connect(hostport, TARPIT_WAIT)
        if outcome == "ok":
            problems.append(f"{hostport} accepts connections (the tests expect a connect timeout there; a "
                            "gateway or proxy here answers every address)")
        elif outcome != "timeout":
            problems.append(f"{hostport} fails at once ({outcome}; the tests expect a connect timeout)")
    return "; ".join(problems) or None


def network_differs(reaches: Sequence[str], times_out: Sequence[str]) -> str | None:
    """Why this machine's network is not what the tests expect, or None when it is (or nothing is expected)."""
    if not reaches and not times_out:
        return None
    return _missing(tuple(reaches), tuple(times_out))
