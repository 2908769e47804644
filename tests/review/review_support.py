"""Shared data and helpers of the review tests (imported as `review_support`; fixtures stay in conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

PRICING = '''"""Prices for the shop."""

TAX_RATE = 0.2


def total(prices, discount=0):
    subtotal = sum(prices)
    return round(subtotal * (1 - discount) * (1 + TAX_RATE), 2)


def label(name):
    return name.strip().title()
'''

TESTS = '''import pytest

from shop.pricing import label, total


def test_total_plain():
    assert total([10, 20]) == 36.0


def test_total_discount():
    assert total([100], discount=0.5) == 60.0


def test_label():
    assert label("  red apple ") == "Red Apple"


class TestErrors:
    def test_empty(self):
        assert total([]) == 0

    def test_bad_input(self):
        with pytest.raises(TypeError):
            total(["x"])
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout

def checks(result) -> set[tuple[str, str]]:
    """(check, severity) pairs of a result, for compact assertions."""
    return {(f.check, f.severity) for f in result.findings}
