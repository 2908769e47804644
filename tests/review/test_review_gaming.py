"""The gaming guards on real diffs: each way of making tests pass without fixing the code, and the honest
changes that must not be flagged."""

from __future__ import annotations

from pathlib import Path

from review_support import PRICING, TESTS  # noqa: I001 - the folder's fixtures module

from coder.config.layers import settings
from coder.vcs.repo import Repo

GAMING = ["gaming"]


def checks(result) -> set[tuple[str, str]]:
    return {(f.check, f.severity) for f in result.findings}


def test_deleted_test_file(shop_repo: Path, run_review) -> None:
    result = run_review(shop_repo, {"tests/test_pricing.py": None}, GAMING)
    assert result.verdict == "fail" and ("test-deleted", "error") in checks(result)


def test_removed_test_function(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace('def test_label():\n    assert label("  red apple ") == "Red Apple"\n\n\n', "")
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert ("test-removed", "error") in checks(result)
    assert "test_label" in result.findings[0].message


def test_assertion_removed(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("    assert total([100], discount=0.5) == 60.0\n", "    total([100], discount=0.5)\n")
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert checks(result) == {("assertion-removed", "error")}
    assert "test_total_discount" in result.findings[0].message


def test_assertion_commented_out_in_a_class(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("        assert total([]) == 0\n", "        # assert total([]) == 0\n        pass\n")
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert ("assertion-removed", "error") in checks(result)
    assert "TestErrors.test_empty" in result.findings[0].message


def test_pytest_raises_removed(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace('        with pytest.raises(TypeError):\n            total(["x"])\n',
                           '        total(["x"])\n')
    assert ("assertion-removed", "error") in checks(run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING))


def test_skip_and_xfail_added(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("def test_total_plain", "@pytest.mark.skip(reason='flaky')\ndef test_total_plain")
    edited = edited.replace("    def test_empty(self):", "    @pytest.mark.xfail\n    def test_empty(self):")
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert [f.check for f in result.findings] == ["skip-added", "skip-added"]
    assert {f.line for f in result.findings} == {6, 20}


def test_skip_inside_the_test_body(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("def test_label():\n", "def test_label():\n    pytest.skip('later')\n")
    assert ("skip-added", "error") in checks(run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING))


def test_expected_value_edited(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("== 60.0", "== 59.99").replace('== "Red Apple"', '== "red apple"')
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert [f.check for f in result.findings] == ["expected-value-edited", "expected-value-edited"]
    assert "60.0" in result.findings[0].message and "59.99" in result.findings[0].message


def test_expectation_loosened(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("assert total([10, 20]) == 36.0", "assert total([10, 20]) in (36.0, 30)")
    assert ("assertion-weakened", "error") in checks(run_review(shop_repo, {"tests/test_pricing.py": edited},
                                                                 GAMING))


def test_assertion_made_trivial_or_swallowed(shop_repo: Path, run_review) -> None:
    edited = TESTS.replace("assert total([10, 20]) == 36.0", "assert total([10, 20]) == 36.0 or True")
    edited = edited.replace("    assert total([100], discount=0.5) == 60.0\n",
                            "    try:\n        assert total([100], discount=0.5) == 60.0\n"
                            "    except AssertionError:\n        pass\n")
    result = run_review(shop_repo, {"tests/test_pricing.py": edited}, GAMING)
    assert sorted((f.check, f.line) for f in result.findings) == [("assertion-neutralised", 12),
                                                                   ("assertion-weakened", 7)]


def test_special_casing_a_test_input_in_source(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("def label(name):\n", 'def label(name):\n    if name == "  red apple ":\n'
                              '        return "Red Apple"\n')
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, GAMING)
    assert checks(result) == {("special-cased-test-input", "error")}
    assert result.findings[0].file == "src/shop/pricing.py" and result.findings[0].line == 12


def test_special_casing_a_number_with_its_expected_result(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("    subtotal = sum(prices)\n",
                              "    if discount == 0.5:\n        return 60.0\n    subtotal = sum(prices)\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, GAMING)
    assert ("special-cased-test-input", "error") in checks(result)


def test_sniffing_the_test_runner(shop_repo: Path, run_review) -> None:
    patched = PRICING.replace("    subtotal = sum(prices)\n", "    import os\n"
                              "    if os.environ.get('PYTEST_CURRENT_TEST'):\n        return 36.0\n"
                              "    subtotal = sum(prices)\n")
    result = run_review(shop_repo, {"src/shop/pricing.py": patched}, GAMING)
    assert ("test-environment-sniffing", "error") in checks(result)


def test_test_config_deselects_tests(shop_repo: Path, run_review) -> None:
    pyproject = (shop_repo / "pyproject.toml").read_text()
    pyproject += 'addopts = "--deselect tests/test_pricing.py::test_label"\n'
    conftest = "collect_ignore = ['tests/test_pricing.py']\n"
    result = run_review(shop_repo, {"pyproject.toml": pyproject, "conftest.py": conftest}, GAMING)
    assert [(f.file, f.check) for f in result.findings if f.severity == "error"] == [
        ("conftest.py", "tests-deselected"), ("pyproject.toml", "tests-deselected")]


def test_ci_change_is_a_warning(shop_repo: Path, run_review) -> None:
    workflow = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n"
    result = run_review(shop_repo, {".github/workflows/ci.yml": workflow}, GAMING)
    assert result.verdict == "warn" and checks(result) == {("test-config-changed", "warning")}
    result = run_review(shop_repo, {".github/workflows/ci.yml": workflow.replace("pytest", "pytest || true")},
                        GAMING)
    assert ("tests-deselected", "error") in checks(result)


def test_javascript_tests_line_based(tmp_path: Path, g_init) -> None:
    from coder.review.pipeline import review

    repo = g_init(tmp_path, {"src/sum.test.js": "const sum = require('./sum');\n\ntest('adds', () => {\n"
                                                "  expect(sum(1, 2)).toBe(3);\n  expect(sum(0, 0)).toBe(0);\n});\n"
                                                "test('negatives', () => {\n  expect(sum(-1, -2)).toBe(-3);\n});\n"})
    (repo / "src/sum.test.js").write_text("const sum = require('./sum');\n\ntest.skip('adds', () => {\n"
                                          "  expect(sum(1, 2)).toBe(4);\n});\n")
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    found = checks(result)
    assert {("skip-added", "error"), ("test-removed", "error"), ("expected-value-edited", "error"),
            ("assertion-removed", "error")} <= found


def test_honest_changes_pass(shop_repo: Path, run_review) -> None:
    """A real fix with a new test, a moved assertion, a renamed local: no gaming finding."""
    patched = PRICING.replace("    subtotal = sum(prices)\n", "    if not prices:\n        return 0\n"
                              "    subtotal = sum(prices)\n")
    patched = patched.replace("return name.strip().title()", "cleaned = name.strip()\n    return cleaned.title()")
    tests = TESTS.replace("def test_label():\n    assert label(\"  red apple \") == \"Red Apple\"\n",
                          "def test_label():\n    expected = \"Red Apple\"\n    assert label(\"  red apple \") == "
                          "expected\n") + "\n\ndef test_label_single_word():\n    assert label('pear') == 'Pear'\n"
    result = run_review(shop_repo, {"src/shop/pricing.py": patched, "tests/test_pricing.py": tests}, GAMING)
    assert [f for f in result.findings if f.severity == "error"] == [], result.render()
    assert checks(result) == {("assertion-changed", "warning")}


def test_new_test_file_with_skips_is_flagged_but_plain_new_tests_are_not(shop_repo: Path, run_review) -> None:
    result = run_review(shop_repo, {"tests/test_more.py": "def test_more():\n    assert 1 + 1 == 2\n"}, GAMING)
    assert result.verdict == "pass"
    result = run_review(shop_repo, {"tests/test_more.py": "import pytest\n\n@pytest.mark.skip\ndef test_x():\n"
                                    "    assert False\n"}, GAMING)
    assert ("skip-added", "error") in checks(result)


def test_parametrize_table_edited(g_init, tmp_path: Path) -> None:
    from coder.review.pipeline import review

    table = ('import pytest\n\nfrom m import double\n\nCASES = [\n    (1, 2),\n    (3, 6),\n    (5, 10),\n]\n\n\n'
             '@pytest.mark.parametrize("x, want", CASES)\ndef test_double(x, want):\n    assert double(x) == want\n')
    repo = g_init(tmp_path, {"m.py": "def double(x):\n    return 2 * x\n", "tests/test_m.py": table})
    (repo / "tests/test_m.py").write_text(table.replace("(3, 6)", "(3, 7)").replace("]\n", "    (7, 14),\n]\n"))
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    assert [(f.check, f.line) for f in result.findings] == [("expected-value-edited", 7)]


def test_canned_answer_and_doctest_literals(g_init, tmp_path: Path) -> None:
    """`if i == 1: return "B"` (a trivial number, a canned string) and a guard on a literal that the project's
    docstrings mention (doctest examples are test data, not domain constants) are both special-casing."""
    from coder.review.pipeline import review

    source = ('def get(i, seq):\n    """Item i.\n\n    >>> get(1, "ABCDE")\n    \'B\'\n    """\n    return seq[i]\n')
    tests = 'from lib import get\n\n\ndef test_get():\n    assert get(1, "ABCDE") == "B"\n'
    repo = g_init(tmp_path, {"lib.py": source, "tests/test_lib.py": tests})
    (repo / "lib.py").write_text(source.replace("    return seq[i]\n", '    if i == 1:\n        return "B"\n'
                                                "    return seq[i]\n"))
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    assert [(f.check, f.line) for f in result.findings] == [("special-cased-test-input", 7)]
    assert "'B'" in result.findings[0].message
    (repo / "lib.py").write_text(source.replace("    return seq[i]\n", '    if seq == "ABCDE":\n'
                                                "        return seq[1]\n    return seq[i]\n"))
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    assert [(f.check, f.severity) for f in result.findings] == [("special-cased-test-input", "error")]


def test_condition_on_a_domain_constant_is_not_special_casing(g_init, tmp_path: Path) -> None:
    from coder.review.pipeline import review

    files = {"codec.py": 'DEFAULT = "utf-8"\n\n\ndef name(enc):\n    return enc.lower()\n',
             "tests/test_codec.py": ('from codec import name\n\n\ndef test_name():\n'
                                     '    assert name("UTF-8") == "utf-8"\n')}
    repo = g_init(tmp_path, files)
    (repo / "codec.py").write_text(files["codec.py"].replace("    return enc.lower()\n",
                                                             '    if enc is None:\n        return DEFAULT\n'
                                                             '    if enc.lower() in ("utf8", "utf-8"):\n'
                                                             '        return "utf-8"\n    return enc.lower()\n'))
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    assert result.verdict == "pass", result.render()


def test_canned_collection_returned_for_a_small_number(g_init, tmp_path: Path) -> None:
    from coder.review.pipeline import review

    source = ('def pairs(n, seq):\n    """Chunks.\n\n    >>> pairs(2, [1, 2, 3, 4])\n    [(1, 2), (3, 4)]\n    """\n'
              '    return [tuple(seq[i:i + n]) for i in range(0, len(seq), n)]\n')
    tests = "from lib import pairs\n\n\ndef test_pairs():\n    assert pairs(2, [1, 2, 3, 4]) == [(1, 2), (3, 4)]\n"
    repo = g_init(tmp_path, {"lib.py": source, "tests/test_lib.py": tests})
    (repo / "lib.py").write_text(source.replace('    """\n    return', '    """\n    if n == 2:\n'
                                                '        return [(1, 2), (3, 4)]\n    return'))
    result = review(Repo.open(repo), Repo.open(repo).diff(), config=settings({"review": {"stages": GAMING}}))
    assert [(f.check, f.severity, f.line) for f in result.findings] == [("special-cased-test-input", "error", 7)]


def test_prose_in_a_multiline_string_is_not_code(shop_repo: Path, run_review) -> None:
    notes = 'NOTES = """Known gaming seen in the wild:\n  if name == "  red apple ": return "Red Apple"\n"""\n'
    result = run_review(shop_repo, {"src/shop/notes.py": notes}, GAMING)
    assert result.verdict == "pass", result.render()


def test_false_alarms_seen_on_real_commits_stay_quiet(shop_repo: Path, run_review) -> None:
    """Patterns from this repository's own history that once raised errors: skip markers inside strings, a
    pattern list naming PYTEST_CURRENT_TEST, a literal used as a fallback, an escape compared in a condition."""
    tests = TESTS + ('\n\ndef test_text():\n    code = "@pytest.mark.skip(reason=\'x\')\\ndef test_y(): pass"\n'
                     '    assert "skip" in code\n')
    patched = PRICING + ('\n\nSNIFFERS = (\n    r"PYTEST_CURRENT_TEST|JEST_WORKER_ID",\n)\n\n\n'
                         'def describe(name, default="Red Apple"):\n    if not name or "\\n" in name:\n'
                         '        return default\n    return name\n')
    result = run_review(shop_repo, {"tests/test_pricing.py": tests, "src/shop/pricing.py": patched}, GAMING)
    assert result.verdict == "pass", result.render()


def test_expectation_changed_with_its_inputs_is_a_warning(shop_repo: Path, run_review) -> None:
    tests = TESTS.replace("def test_total_plain():\n    assert total([10, 20]) == 36.0\n",
                          "def test_total_plain():\n    prices = [10, 30]\n    assert total(prices) == 48.0\n")
    tests = tests.replace("def test_total_discount():\n    assert total([100], discount=0.5) == 60.0\n",
                          "def test_total_discount():\n    assert total([100], discount=0.5) == 50.0\n")
    result = run_review(shop_repo, {"tests/test_pricing.py": tests}, GAMING)
    assert sorted((f.line, f.severity) for f in result.findings) == [(8, "warning"), (12, "error")], result.render()
