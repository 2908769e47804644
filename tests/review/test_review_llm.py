"""The LLM stage through the scripted provider and through the real Anthropic SDK against the fake server:
checklist call, review call, one confirmation call per finding; only confirmed findings count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_support import PRICING  # noqa: I001

CHECKLIST = "- Is the discount applied once?\n- Are existing callers unaffected?\n"
REVIEW = {"findings": [
    {"file": "src/shop/pricing.py", "line": 8, "severity": "error",
     "message": "the discount is applied twice", "checklist_item": "Is the discount applied once?"},
    {"file": "src/shop/pricing.py", "line": 11, "severity": "warning", "message": "label lacks a docstring"},
]}


def script(tmp_path: Path, review: dict = REVIEW, confirm_docstring: bool = False) -> Path:
    path = tmp_path / "review-script.json"
    path.write_text(json.dumps({"turns": [
        {"when": "prepare the review of a code change", "text": CHECKLIST},
        {"when": "against a checklist", "text": "Here you go:\n```json\n" + json.dumps(review) + "\n```"},
        {"when": "discount is applied twice", "text": '{"confirmed": true, "severity": "error", "reason": "line 8"}'},
        {"when": "lacks a docstring", "text": json.dumps({"confirmed": confirm_docstring, "reason": "style only"})},
    ]}))
    return path


def test_only_confirmed_findings_count(shop_repo: Path, run_review, tmp_path: Path) -> None:
    from coder.models.registry import create_provider

    provider = create_provider(f"scripted:{script(tmp_path)}", {})
    patched = PRICING.replace("(1 - discount)", "(1 - discount) * (1 - discount)")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, ["llm"], task="apply the discount",
                        provider=provider)
    stage = result.stage("llm")
    assert [(f.message, f.severity, f.line, f.check) for f in result.findings] == [
        ("the discount is applied twice", "error", 8, "llm")]
    assert result.verdict == "fail"
    assert "2 checklist item(s); 2 finding(s) raised, 1 confirmed, 1 dropped" in stage.note
    assert "Is the discount applied once?" in stage.details


def test_clean_review_passes(shop_repo: Path, run_review, tmp_path: Path) -> None:
    from coder.models.registry import create_provider

    provider = create_provider(f"scripted:{script(tmp_path, review={'findings': []})}", {})
    result = run_review(shop_repo, {"src/shop/pricing.py": PRICING + "\nX = 1\n"}, ["llm"], provider=provider)
    assert result.verdict == "pass" and result.stage("llm").status == "pass"


def test_no_model_means_skipped_with_a_note(shop_repo: Path, run_review) -> None:
    result = run_review(shop_repo, {"src/shop/pricing.py": PRICING + "\nX = 1\n"}, ["llm"])
    assert result.verdict == "pass"
    assert result.stage("llm").status == "skipped" and "no model configured" in result.stage("llm").note


def test_llm_not_spent_on_a_patch_that_already_failed(shop_repo: Path, run_review, tmp_path: Path) -> None:
    from coder.models.registry import create_provider

    provider = create_provider(f"scripted:{script(tmp_path)}", {})
    result = run_review(shop_repo, {"src/shop/pricing.py": PRICING + "\n<<<<<<< HEAD\n"}, ["hygiene", "llm"],
                        provider=provider)
    assert result.stage("llm").status == "skipped" and "earlier stages failed" in result.stage("llm").note


def test_unparseable_model_answer_yields_no_findings(shop_repo: Path, run_review, tmp_path: Path) -> None:
    from coder.models.registry import create_provider

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"turns": [{"text": "I think it is fine", "when": ".", "repeat": True}]}))
    result = run_review(shop_repo, {"src/shop/pricing.py": PRICING + "\nX = 1\n"}, ["llm"],
                        provider=create_provider(f"scripted:{path}", {}))
    assert result.verdict == "pass" and "0 finding(s) raised" in result.stage("llm").note


def test_parse_helpers() -> None:
    from coder.review.llm import parse_checklist, parse_json

    assert parse_json('x ```json\n{"a": 1}\n``` y') == {"a": 1}
    assert parse_json('prefix {"confirmed": false} suffix') == {"confirmed": False}
    assert parse_json("no json") is None
    assert parse_checklist("Intro\n1. first\n2) second\n- third\n* fourth\n") == ["first", "second", "third",
                                                                                 "fourth"]


def test_llm_stage_through_the_anthropic_sdk_and_fake_server(shop_repo: Path, run_review, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.models.registry import create_provider
    from coder_testkit.fake_server import FakeServer

    with FakeServer(script(tmp_path)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        provider = create_provider("anthropic:claude-sonnet-4-6", {})
        patched = PRICING.replace("(1 - discount)", "(1 - discount) * (1 - discount)")
        result = run_review(shop_repo, {"src/shop/pricing.py": patched}, ["llm"], provider=provider)
    assert [f.message for f in result.findings] == ["the discount is applied twice"]
    assert len(server.requests) == 4  # checklist, review, two confirmations
