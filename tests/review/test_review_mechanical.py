"""The mechanical stages on real diffs: apply, parse, lint (ruff, changed lines only), hygiene."""

from __future__ import annotations

import shutil
from pathlib import Path

from review_support import PRICING  # noqa: I001

from coder.config.layers import settings
from coder.vcs.repo import Repo

MECH = ["apply", "parse", "lint", "hygiene"]


def checks(result) -> set[tuple[str, str]]:
    return {(f.check, f.severity) for f in result.findings}


def test_clean_change_passes_every_mechanical_stage(shop_repo: Path, run_review) -> None:
    patched = PRICING + "\n\ndef count(items):\n    return len(list(items))\n"
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, MECH)
    assert result.verdict == "pass", result.render()
    assert [s.status for s in result.stages] == ["pass", "pass", "pass", "pass"]


def test_conflict_markers(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("TAX_RATE = 0.2\n", "<<<<<<< HEAD\nTAX_RATE = 0.2\n=======\nTAX_RATE = 0.25\n"
                              ">>>>>>> feature\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, ["hygiene"])
    markers = [f for f in result.findings if f.check == "conflict-marker"]
    assert [f.line for f in markers] == [3, 5, 7] and result.verdict == "fail"


def test_rst_underline_is_not_a_conflict_marker(shop_repo: Path, run_review) -> None:
    result = run_review(shop_repo, {"docs/index.rst": "Title\n=======\n\nText.\n"}, ["hygiene"])
    assert result.verdict == "pass"


def test_secrets(shop_repo: Path, run_review) -> None:
    settings = ('AWS_KEY = "AKIAZ7QWERTYUIOPASDF"\n'
                'api_key = "q8Fz2LmN7xPwR4tK9vB1"\n'
                'EXAMPLE_KEY = "AKIAIOSFODNN7EXAMPLE"\n'
                'token = os.environ["TOKEN"]\n'
                'CHECKSUM = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n'
                'blob = "hQ7rT2mZ9pX4vL8nK3wB6yC1dF5gJ0sA2eR7tY9uI4oP"\n')
    result = run_review(shop_repo, {"src/shop/settings.py": settings}, ["hygiene"])
    by_line = {f.line: (f.check, f.severity) for f in result.findings}
    assert by_line == {1: ("secret", "error"), 2: ("secret", "error"), 6: ("secret", "warning")}, result.render()
    key = "sk-ant-api03-" + "Zx9" * 12
    result = run_review(shop_repo, {"README.md": f"export ANTHROPIC_API_KEY={key}\n"}, ["hygiene"])
    readme = [f for f in result.findings if f.file == "README.md"]
    assert [(f.check, f.severity) for f in readme] == [("secret", "error")] and "Anthropic" in readme[0].message


def test_debug_leftovers(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("    subtotal = sum(prices)\n", "    breakpoint()\n    print(prices)\n"
                              "    subtotal = sum(prices)\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched, "web/app.js": "function f() {\n  debugger;\n}\n"},
                        ["hygiene"])
    assert {(f.file, f.line, f.severity) for f in result.findings} == {
        ("src/shop/pricing.py", 7, "error"), ("src/shop/pricing.py", 8, "warning"), ("web/app.js", 2, "error")}


def test_print_in_a_cli_module_is_fine(shop_repo: Path, run_review) -> None:
    cli = "import argparse\n\n\ndef main():\n    print('hello')\n"
    result = run_review(shop_repo, {"src/shop/cli.py": cli, "tests/test_cli.py": "def test_x():\n    print(1)\n"},
                        ["hygiene"])
    assert result.verdict == "pass"


def test_large_binary(shop_repo: Path, run_review) -> None:
    blob = bytes(range(256)) * 8 * 1024  # 2 MiB, with NUL bytes: binary to git
    result = run_review(shop_repo, {"assets/big.bin": blob, "assets/icon.png": b"\x89PNG\r\n\x1a\n\0\0"},
                        ["apply", "hygiene"])
    assert [(f.file, f.check, f.severity) for f in result.findings] == [("assets/big.bin", "large-binary", "error")]
    assert result.stage("apply").status == "pass"


def test_syntax_errors_python_and_javascript(shop_repo: Path, run_review) -> None:
    broken = PRICING.replace("def label(name):", "def label(name)")
    result = run_review(shop_repo, {"src/shop/pricing.py": broken, "web/x.js": "function f( {\n  return 1;\n}\n",
                                    "web/ok.ts": "export const n: number = 1;\n"}, ["parse"])
    assert {(f.file, f.check, f.severity) for f in result.findings} == {
        ("src/shop/pricing.py", "syntax", "error"), ("web/x.js", "syntax", "error")}
    assert next(f for f in result.findings if f.file == "src/shop/pricing.py").line == 11
    assert "3 file(s) parsed" in result.stage("parse").note


def test_file_broken_before_the_change_is_only_a_warning(g_init, tmp_path: Path) -> None:
    from coder.review.pipeline import review
    from coder.vcs.repo import Repo

    repo = g_init(tmp_path, {"legacy.py": "def f(:\n    pass\n"})
    (repo / "legacy.py").write_text("def f(:\n    pass\nx = 1\n")
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": ["parse"]}}))
    assert [(f.check, f.severity) for f in result.findings] == [("syntax", "warning")]


def test_ruff_reports_only_changed_lines(shop_repo: Path, run_review) -> None:
    assert shutil.which("ruff"), "ruff is missing: pip install ruff (dev extra)"
    # old debt: an unused import on an unchanged line; new: an undefined name on a changed line
    (shop_repo / "src" / "shop" / "pricing.py").write_text("import os\n" + PRICING)
    from review_support import _git  # noqa: I001

    _git(shop_repo, "commit", "-qam", "debt")
    patched = "import os\n" + PRICING.replace("return name.strip().title()", "return nmae.strip().title()")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, ["lint"])
    assert [(f.line, f.severity, f.message.split()[0]) for f in result.findings] == [(13, "error", "F821")]
    assert result.verdict == "fail"


def test_ruff_uses_project_config(shop_repo: Path, run_review) -> None:
    pyproject = (shop_repo / "pyproject.toml").read_text() + '\n[tool.ruff.lint]\nselect = ["E711"]\n'
    from review_support import _git  # noqa: I001

    (shop_repo / "pyproject.toml").write_text(pyproject)
    _git(shop_repo, "commit", "-qam", "ruff config")
    patched = PRICING.replace("    subtotal = sum(prices)\n", "    if prices == None:\n        prices = []\n"
                              "    subtotal = sum(prices)\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, ["lint"])
    assert [(f.line, f.severity, f.message.split()[0]) for f in result.findings] == [(7, "warning", "E711")]
    assert "project's config" in result.stage("lint").note


def test_diff_that_does_not_apply(shop_repo: Path) -> None:
    from coder.review.pipeline import review

    stale = ("diff --git a/src/shop/pricing.py b/src/shop/pricing.py\n--- a/src/shop/pricing.py\n"
             "+++ b/src/shop/pricing.py\n@@ -2,3 +2,3 @@\n \n-TAX_RATE = 0.3\n+TAX_RATE = 0.4\n \n")
    result = review(Repo.open(shop_repo), stale, config=settings({"review": {"stages": ["apply", "parse", "tests"]}}))
    assert result.verdict == "fail" and result.findings[0].check == "apply"
    assert result.stage("tests").status == "skipped" and "does not apply" in result.stage("tests").note


def test_empty_diff(shop_repo: Path) -> None:
    from coder.review.pipeline import review

    result = review(Repo.open(shop_repo), "", config=settings({"review": {"stages": ["apply", "tests", "llm"]}}))
    assert result.verdict == "pass" and all(s.status == "skipped" for s in result.stages)


def test_diff_against_a_commit_is_reviewed_from_the_object_store(shop_repo: Path) -> None:
    """A patch from elsewhere (a batch run) is reviewed as applied to its base, not as the disk is."""
    from coder.review.pipeline import review

    patch = ("diff --git a/src/shop/pricing.py b/src/shop/pricing.py\n--- a/src/shop/pricing.py\n"
             "+++ b/src/shop/pricing.py\n@@ -2,3 +2,3 @@\n \n-TAX_RATE = 0.2\n+TAX_RATE = (0.2\n \n")
    result = review(Repo.open(shop_repo), patch, config=settings({"review": {"stages": ["apply", "parse"]}}))
    assert (shop_repo / "src/shop/pricing.py").read_text() == PRICING  # the disk was never touched
    assert result.stage("apply").status == "pass"
    assert [(f.check, f.severity) for f in result.findings] == [("syntax", "error")]
