"""The tests stage: detection, related tests first, the sandbox, failures blamed only when new."""

from __future__ import annotations

from pathlib import Path

from review_support import PRICING, TESTS, _git  # noqa: I001

from coder.config.layers import settings
from coder.vcs.repo import Repo

TESTS_ONLY = ["tests"]


def test_breaking_change_fails_with_the_failing_test_named(shop_repo: Path, run_review) -> None:
    broken = PRICING.replace("(1 + TAX_RATE)", "(1 - TAX_RATE)")
    result = run_review(shop_repo, {"src/shop/pricing.py": broken}, TESTS_ONLY)
    stage = result.stage("tests")
    assert result.verdict == "fail" and stage.status == "fail"
    failing = sorted(f.message.split()[0] for f in result.findings)
    assert failing == ["tests/test_pricing.py::test_total_discount", "tests/test_pricing.py::test_total_plain"]
    assert "related tests failed" in stage.note
    feedback = result.feedback()
    assert "test_total_plain" in feedback and "assert" in feedback  # the pytest output reaches the agent


def test_correct_change_passes_and_runs_related_tests_in_the_sandbox(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("    subtotal = sum(prices)\n", "    import os\n"
                              "    assert os.environ.get('CODER_SANDBOX') == '1'\n    subtotal = sum(prices)\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, TESTS_ONLY)
    assert result.verdict == "pass", result.render() + result.stage("tests").details
    assert "related tests passed (1 file(s))" in result.stage("tests").note
    assert not (shop_repo / ".pytest_cache").exists()  # the review leaves no cache behind


def test_related_tests_found_by_import_and_by_name(shop_repo: Path) -> None:
    from coder.review.context import ReviewContext
    from coder.review.testing import related_python_tests

    (shop_repo / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    (shop_repo / "tests" / "test_uses.py").write_text("from shop import pricing\n\n\ndef test_u():\n"
                                                      "    assert pricing.TAX_RATE\n")
    # a dotted import (the pattern `git grep -E` got read `[\w.]` as three characters: never matched, issue 49)
    (shop_repo / "tests" / "test_dotted.py").write_text("from shop.pricing import TAX_RATE\n\n\ndef test_d():\n"
                                                        "    assert TAX_RATE\n")
    _git(shop_repo, "add", "-A")
    _git(shop_repo, "commit", "-qm", "more tests")
    (shop_repo / "src" / "shop" / "pricing.py").write_text(PRICING + "\nX = 1\n")
    ctx = ReviewContext(Repo.open(shop_repo), Repo.open(shop_repo).diff())
    assert related_python_tests(ctx) == ["tests/test_dotted.py", "tests/test_pricing.py", "tests/test_uses.py"]


def test_failure_that_existed_before_is_a_warning(shop_repo: Path, run_review) -> None:
    (shop_repo / "tests" / "test_pricing.py").write_text(TESTS + "\n\ndef test_known_bug():\n"
                                                         "    assert total([1]) == 1\n")
    _git(shop_repo, "commit", "-qam", "a failing test")
    patched = PRICING.replace("def label(name):", "def label(name: str) -> str:")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, TESTS_ONLY)
    assert result.verdict == "warn", result.render()
    assert [(f.check, f.severity) for f in result.findings] == [("tests-already-failing", "warning")]


def test_timeout_is_a_warning_not_a_pass(shop_repo: Path, run_review) -> None:
    slow = TESTS + "\n\ndef test_slow():\n    import time\n    time.sleep(30)\n"
    config = {"review": {"tests": {"timeout": 4}}}
    result = run_review(shop_repo, {"tests/test_pricing.py": slow}, TESTS_ONLY, config=config)
    assert result.verdict == "warn" and result.findings[0].check == "tests-timeout"
    assert result.stage("tests").duration < 15


def test_custom_command_and_full_suite(shop_repo: Path, run_review) -> None:
    config = {"review": {"tests": {"command": "echo custom-suite-ran; exit 3"}}}
    result = run_review(shop_repo, {"README.md": "docs\n"}, TESTS_ONLY, config=config)
    assert result.verdict == "fail" and "exit 3" in result.findings[0].message
    assert "custom-suite-ran" in result.stage("tests").details


def test_no_test_command_detected(g_init, tmp_path: Path) -> None:
    from coder.review.pipeline import review

    repo = g_init(tmp_path, {"notes.txt": "a\n"})
    (repo / "notes.txt").write_text("b\n")
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": TESTS_ONLY}}))
    assert result.verdict == "pass" and result.stage("tests").status == "skipped"
    assert "no test command detected" in result.stage("tests").note


def test_review_of_the_index_runs_tests_on_the_staged_tree(shop_repo: Path) -> None:
    """Staged: a good change; unstaged on top: a breaking one. The review of the index must pass."""
    from coder.review.pipeline import review

    good = PRICING.replace("def label(name):", "def label(name: str) -> str:")
    (shop_repo / "src/shop/pricing.py").write_text(good)
    _git(shop_repo, "add", "src/shop/pricing.py")
    (shop_repo / "src/shop/pricing.py").write_text(good.replace("(1 + TAX_RATE)", "(1 - TAX_RATE)"))
    repo, config = Repo.open(shop_repo), settings({"review": {"stages": TESTS_ONLY}})
    result = review(repo, repo.diff(staged=True), config=config)
    assert result.verdict == "pass", result.render()
    result = review(repo, repo.diff(), config=config)
    assert result.verdict == "fail"
