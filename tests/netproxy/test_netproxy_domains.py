"""Domain patterns, presets, deny-wins, and the `[sandbox]` keys' validation (pure logic, no sandbox)."""

from __future__ import annotations

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.netproxy.domains import DomainPolicy, refusal_message


def test_exact_wildcard_and_deny_wins() -> None:
    policy = DomainPolicy.from_lists(["pypi.org", "*.pythonhosted.org", "*.example.com"], ["evil.example.com"],
                                     [])
    assert policy.verdict("PyPI.org.").action == "allow"
    assert policy.verdict("files.pythonhosted.org").pattern == "*.pythonhosted.org"
    assert policy.verdict("pythonhosted.org").action == "ask"  # the apex is not below itself
    assert policy.verdict("notpypi.org").action == "ask"
    assert policy.verdict("evilpythonhosted.org").action == "ask"
    denied = policy.verdict("evil.example.com")
    assert denied.action == "deny" and denied.source == "denied_domains"
    policy.grant("evil.example.com", "session")  # not even a user's answer beats the deny list
    assert policy.verdict("evil.example.com").action == "deny"


def test_presets_and_answers() -> None:
    policy = DomainPolicy.from_lists([], ["crates.io"], ["python", "rust"])
    assert policy.verdict("files.pythonhosted.org").source == "preset python"
    assert policy.verdict("crates.io").action == "deny"
    assert policy.verdict("static.crates.io").action == "allow"
    policy.grant("docs.example.org", "once")
    assert policy.verdict("docs.example.org").source == "answer once"
    policy.new_command()
    assert policy.verdict("docs.example.org").action == "ask"


def test_refusal_names_the_domain_and_the_key() -> None:
    policy = DomainPolicy.from_lists(["a.org"], ["b.org"], [])
    assert "b.org" in refusal_message("b.org", policy.verdict("b.org"))
    assert "[sandbox] denied_domains" in refusal_message("b.org", policy.verdict("b.org"))
    text = refusal_message("c.org", policy.verdict("c.org"))
    assert "[sandbox] allowed_domains" in text and "--net-allow c.org" in text


@pytest.mark.parametrize(("section", "needle"), [
    ({"allowed_domains": ["https://pypi.org"]}, "no scheme"),
    ({"allowed_domains": ["pypi.org:443"]}, "no scheme, port"),
    ({"denied_domains": ["ev*l.com"]}, "a wildcard is"),
    ({"network_presets": ["perl"]}, "unknown preset 'perl'"),
    ({"allowed_domains": "pypi.org"}, 'expected a list of strings, like ["pypi.org"]'),
    ({"network": True, "allowed_domains": ["pypi.org"]}, "use one or the other"),
])
def test_bad_sandbox_keys_are_named(section: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match="sandbox") as err:
        settings({"sandbox": section})
    assert needle in str(err.value)


def test_good_sandbox_keys_are_normalized() -> None:
    cfg = settings({"sandbox": {"allowed_domains": ["PyPI.org", "*.Pythonhosted.org", "10.0.0.5"],
                                "network_presets": ["node"]}}).sandbox
    assert cfg.allowed_domains == ["pypi.org", "*.pythonhosted.org", "10.0.0.5"]


def test_batch_presets_are_off_by_default_and_reach_the_agent_through_its_environment(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from coder.batch.cli import register
    from coder.batch.instance_run import RunConfig
    from coder.config.layers import load_config, user_config_path

    assert RunConfig(run_dir=tmp_path).network_presets == []  # SWE-bench runs stay comparable
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["swebench", "run", "--dataset", "d", "--net-preset", "python"])
    assert args.net_preset == ["python"]
    assert parser.parse_args(["swebench", "run", "--dataset", "d"]).net_preset == []
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text('[sandbox]\nnetwork_presets = ["node"]\n')
    monkeypatch.setenv("CODER_NETWORK_PRESETS", "python")
    assert load_config(tmp_path).sandbox.network_presets == ["node", "python"]
    monkeypatch.setenv("CODER_BATCH_REACH", '{"sandbox": {"network_presets": ["python"]}}')  # `--net-preset python`
    assert load_config(tmp_path).sandbox.network_presets == ["python"]  # the batch's alone, not the user's node
