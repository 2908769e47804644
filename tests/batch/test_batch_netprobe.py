"""Tests that need the harness's internet: checked against this machine's network first, and reported as
"could not evaluate here" (with the official command) where it differs, never as "not resolved".

Real loopback sockets stand for the internet: a listener that accepts, a closed port that refuses, and a tarpit
(a listener whose accept queue is full, so a new SYN is dropped and the connect times out, as 10.255.255.1 does
from the harness's containers)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from batch_fixtures import GOLD_PATCH

from coder.batch.envprep import coverage_table, describe, prepare_envs
from coder.batch.envs import load_spec_table
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances
from coder.batch.netprobe import network_differs


@pytest.fixture
def listener() -> Iterator[str]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        yield f"127.0.0.1:{srv.getsockname()[1]}"


@pytest.fixture
def closed_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture
def tarpit() -> Iterator[str]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    address = srv.getsockname()
    fillers = []
    for _ in range(8):  # fill the accept queue until a connect no longer completes at once
        c = socket.socket()
        c.settimeout(0.2)
        try:
            c.connect(address)
        except TimeoutError:
            c.close()
            break
        fillers.append(c)
    else:
        pytest.fail("the loopback tarpit never filled; this kernel accepts past the backlog")
    yield f"127.0.0.1:{address[1]}"
    for c in fillers:
        c.close()
    srv.close()


def test_nothing_expected_means_nothing_differs():
    assert network_differs([], []) is None


def test_reachable_and_unreachable_hosts(listener, closed_port):
    assert network_differs([listener], []) is None
    why = network_differs([closed_port], [])
    assert why and closed_port in why and "not reachable" in why
    why = network_differs(["no-such-host.invalid:80"], [])
    assert why and "does not resolve" in why


def test_a_tarpit_must_time_out(listener, closed_port, tarpit):
    assert network_differs([], [tarpit]) is None
    why = network_differs([], [listener])  # a gateway answering every address, as on this very machine
    assert why and "accepts connections" in why
    why = network_differs([], [closed_port])
    assert why and "fails at once" in why


def _network_spec(swe, probe: dict) -> None:
    specs = json.loads(swe.specs.read_text())
    specs["repos"]["acme/calc"].update(test_network=True, test_network_probe=probe)
    swe.specs.write_text(json.dumps(specs))


def _eval(swe, env_cache, out):
    cfg = EvalConfig(output=out, repos_dir=swe.repos_dir, cache_dir=env_cache, specs=load_spec_table(swe.specs),
                     dataset_path=str(swe.dataset))
    preds = {"acme__calc-1": {"instance_id": "acme__calc-1", "model_name_or_path": "t", "model_patch": GOLD_PATCH}}
    return evaluate(load_instances(swe.dataset)[:1], preds, cfg)


def test_a_network_unlike_the_harness_is_could_not_evaluate(swe, env_cache, tmp_path, closed_port, listener):
    _network_spec(swe, {"reaches": [closed_port], "times_out": [listener]})
    report = _eval(swe, env_cache, tmp_path / "eval")
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and r["needs_official_harness"] is True
    assert "need the internet" in r["error"] and closed_port in r["error"] and "accepts connections" in r["error"]
    assert report["needs_official_harness"] == ["acme__calc-1"] and report["unresolved_ids"] == []
    assert "--instance_ids acme__calc-1" in report["official_command"]
    # the coverage report (`coder swebench envs`) says it too: the environment builds, its tests cannot run here
    states = prepare_envs(load_instances(swe.dataset)[:1], load_spec_table(swe.specs), env_cache, build=False)
    (state,) = states.values()
    assert state.status == "ready" and "need the internet" in describe(state)
    assert "need the internet" in coverage_table([state])


def test_a_network_like_the_harness_runs_the_tests(swe, env_cache, tmp_path, listener, tarpit):
    _network_spec(swe, {"reaches": [listener], "times_out": [tarpit]})
    report = _eval(swe, env_cache, tmp_path / "eval")
    assert report["instances"]["acme__calc-1"]["status"] == "resolved"
    assert report["needs_official_harness"] == []
