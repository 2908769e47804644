"""A small real Python project (src layout, pytest) in a git repo, and a helper that applies edits and reviews
the work tree against HEAD."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from review_support import PRICING, TESTS, _git, checks  # noqa: F401 - used by the fixtures

from coder.config.layers import settings


@pytest.fixture
def shop_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "shop"
    (repo / "src" / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "shop" / "__init__.py").write_text("")
    (repo / "src" / "shop" / "pricing.py").write_text(PRICING)
    (repo / "tests" / "test_pricing.py").write_text(TESTS)
    (repo / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0.1"\n\n'
                                         '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo


@pytest.fixture
def run_review() -> Callable:
    """run_review(repo, {path: new content or None to delete}, stages=[...], task=..., config=...)."""
    from coder.review.pipeline import review
    from coder.vcs.repo import Repo

    def run(repo: Path, edits: dict[str, str | bytes | None], stages: list[str] | None = None, task: str = "",
            config: dict | None = None, provider=None):
        for rel, content in edits.items():
            path = repo / rel
            if content is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, bytes):
                    path.write_bytes(content)
                else:
                    path.write_text(content)
        cfg = dict(config or {})
        review_cfg = dict(cfg.get("review", {}))
        if stages is not None:
            review_cfg["stages"] = stages
        cfg["review"] = review_cfg
        opened = Repo.open(repo)
        return review(opened, opened.diff(), task, provider, settings(cfg))

    return run




@pytest.fixture
def g_init() -> Callable:
    """g_init(tmp_path, {path: content}) -> a repo with those files committed."""

    def make(base: Path, files: dict[str, str]) -> Path:
        repo = base / "proj"
        repo.mkdir()
        for rel, content in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(content)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "initial")
        return repo

    return make
