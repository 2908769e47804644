"""The review-fix loop end to end through the real Anthropic SDK and the fake server: a patch that breaks a test
is reviewed, the findings go to the "agent" (a model call whose answer is the new file), the fix is reviewed,
and only then is the commit made."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from review_support import PRICING  # noqa: I001

from coder.config.layers import settings
from coder.vcs.repo import Repo

FIXED = PRICING + "\n\ndef count(prices):\n    return len(prices)\n"
BROKEN = FIXED.replace("(1 + TAX_RATE)", "(1 - TAX_RATE)")  # the task's change, plus a regression


def head_message(repo: Path) -> str:
    return subprocess.run(["git", "log", "-1", "--format=%B"], cwd=repo, capture_output=True, text=True).stdout


def agent(provider, repo: Path, seen: list[str]):
    """One agent turn: the feedback goes to the model; its answer is the new content of pricing.py."""
    from coder.models.types import Message, ModelRequest

    def fix_round(feedback: str) -> None:
        seen.append(feedback)
        answer = provider.complete(ModelRequest(system="You fix code.", messages=[Message.user_text(feedback)]))
        (repo / "src/shop/pricing.py").write_text(answer.message.text())

    return fix_round


def test_failing_patch_is_fixed_from_the_findings_then_committed(shop_repo: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.models.registry import create_provider
    from coder.review.gate import GateRequest, review_and_commit
    from coder_testkit.fake_server import FakeServer

    script = tmp_path / "agent.json"
    script.write_text(json.dumps({"turns": [
        {"when": "Review verdict: FAIL", "text": FIXED},
        {"when": "Write the git commit message", "text": "feat(pricing): add count"},
    ]}))
    (shop_repo / "src/shop/pricing.py").write_text(BROKEN)  # the agent's first, broken patch
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=shop_repo, capture_output=True, text=True).stdout
    with FakeServer(script) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        provider = create_provider("anthropic:claude-sonnet-4-6", {})
        seen: list[str] = []
        config = settings({"review": {"stages": ["apply", "parse", "lint", "hygiene", "gaming", "tests"]}})
        gate = review_and_commit(GateRequest(Repo.open(shop_repo), "add a count function",
                                             agent(provider, shop_repo, seen), provider, config, max_rounds=2,
                                             model_name="claude-sonnet-4-6"))
        requests = server.requests
    assert [r.verdict for r in gate.reviews] == ["fail", "pass"] and gate.rounds == 1, gate.message
    assert "test_total_plain fails" in seen[0] and "Review verdict: FAIL" in seen[0]
    assert "test_total_plain" in json.dumps(requests[0])  # the findings reached the model through the SDK
    assert gate.committed, gate.message
    message = head_message(shop_repo)
    assert message.startswith("feat(pricing): add count")
    assert "Generated-by: coder (claude-sonnet-4-6)" in message
    assert (shop_repo / "src/shop/pricing.py").read_text() == FIXED
    parent = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=shop_repo, capture_output=True, text=True).stdout
    assert parent == head  # exactly one commit, made after the fix


def test_no_commit_while_the_review_fails_unless_overridden(shop_repo: Path, tmp_path: Path) -> None:
    from coder.models.registry import create_provider
    from coder.review.gate import GateRequest, review_and_commit

    script = tmp_path / "stubborn.json"
    script.write_text(json.dumps({"turns": [{"when": "Review verdict", "repeat": True, "text": BROKEN}]}))
    provider = create_provider(f"scripted:{script}", {})
    (shop_repo / "src/shop/pricing.py").write_text(BROKEN)
    config = settings({"review": {"stages": ["gaming", "tests"]}})
    seen: list[str] = []
    gate = review_and_commit(GateRequest(Repo.open(shop_repo), "x", agent(provider, shop_repo, seen), None, config,
                                         max_rounds=1))
    assert not gate.committed and gate.rounds == 1 and len(seen) == 1
    assert "still fails after 1 fix round" in gate.message
    assert head_message(shop_repo).strip() == "initial"
    asked: list[str] = []
    gate = review_and_commit(GateRequest(Repo.open(shop_repo), "x", agent(provider, shop_repo, seen), None, config,
                                         max_rounds=0,
                                         override=lambda result: asked.append(result.verdict) or True,
                                         message="fix: forced"))
    assert gate.committed and gate.overridden and asked == ["fail"]
    assert head_message(shop_repo).startswith("fix: forced")
