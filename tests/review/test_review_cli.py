"""`coder review` end to end through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_support import PRICING, TESTS, _git  # noqa: I001

from coder.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_and_exit_codes(shop_repo: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(shop_repo / "src")  # any directory inside the repository
    code, out, _ = run(["review", "--json"], capsys)
    assert code == 0 and json.loads(out) == {"verdict": "pass", "findings": [], "stages": []}
    (shop_repo / "src/shop/pricing.py").write_text(PRICING + "\n\ndef size(x):\n    return len(x)\n")
    code, out, _ = run(["review", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass"
    assert [s["name"] for s in data["stages"]] == ["apply", "parse", "lint", "hygiene", "gaming", "tests", "llm"]
    llm = data["stages"][-1]
    assert llm["status"] == "skipped" and "no model configured" in llm["note"]
    (shop_repo / "tests/test_pricing.py").write_text(TESTS.replace("== 60.0", "== 61.0"))
    code, out, _ = run(["review", "--json", "--no-tests"], capsys)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    assert {"file": "tests/test_pricing.py", "line": 11, "severity": "error", "check": "expected-value-edited",
            "stage": "gaming"}.items() <= data["findings"][0].items()
    assert next(s for s in data["stages"] if s["name"] == "tests")["status"] == "skipped"


def test_human_output_staged_commit_and_base(shop_repo: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(shop_repo)
    (shop_repo / "src/shop/pricing.py").write_text(PRICING.replace("def label(name):", "def label(name):\n"
                                                                   "    breakpoint()"))
    code, out, err = run(["review", "--staged", "--no-tests"], capsys)
    assert code == 0 and "nothing to review: the index has no changes" in out
    _git(shop_repo, "add", "-A")
    code, out, err = run(["review", "--staged", "--no-tests"], capsys)
    assert code == 1 and "verdict: FAIL" in out and "debugger call left in" in out
    assert "reviewing the index" in err and "hygiene" in err  # progress on stderr
    _git(shop_repo, "commit", "-qm", "oops")
    code, out, _ = run(["review", "--commit", "HEAD", "--json", "--no-tests"], capsys)
    assert code == 1 and json.loads(out)["findings"][0]["check"] == "debug-leftover"
    code, out, _ = run(["review", "--base", "HEAD~1", "--json", "--no-tests"], capsys)
    assert code == 1
    code, out, _ = run(["review", "--json"], capsys)  # work tree == HEAD now
    assert code == 0 and json.loads(out)["verdict"] == "pass"
    root = _git(shop_repo, "rev-list", "--max-parents=0", "HEAD").strip()
    code, out, _ = run(["review", "--commit", root, "--json", "--no-tests"], capsys)
    assert code == 0 and json.loads(out)["verdict"] in ("pass", "warn")


def test_user_errors_are_one_line(tmp_path: Path, shop_repo: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["review"], capsys)
    assert code == 2 and "not inside a git repository" in err and "Traceback" not in err
    monkeypatch.chdir(shop_repo)
    code, _, err = run(["review", "--commit", "nope"], capsys)
    assert code == 2 and "'nope' is not a commit" in err
    with pytest.raises(SystemExit):
        main(["review", "--staged", "--commit", "HEAD"])  # mutually exclusive


def test_help_does_not_import_heavy_modules() -> None:
    import subprocess
    import sys

    code = ("import sys; from coder.review import cli; import argparse; p = argparse.ArgumentParser(); "
            "cli.register(p.add_subparsers()); "
            "print(sorted(m for m in sys.modules if m.startswith(('git', 'tree_sitter', 'anthropic', "
            "'coder.review.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "['coder.review.cli']"
