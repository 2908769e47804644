"""Every test here names its loopback servers through the proxy's resolver (CODER_NETPROXY_HOSTS)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from netproxy_support import HOSTS_VAR, hosts_env, loopback_server, wheel_index


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The port of a loopback server holding a page and a wheel index; the test names resolve to it."""
    root = tmp_path_factory.mktemp("served")
    wheel_index(root)
    monkeypatch.setenv(HOSTS_VAR, hosts_env())
    with loopback_server(root) as port:
        yield port


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path
