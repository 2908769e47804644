"""Finding the repository, diffs (work tree with new files, index, commits), the diff parser, and commit messages."""

from __future__ import annotations

import json
from pathlib import Path

from coder.vcs.message import commit_message, fallback_message, normalise
from coder.vcs.patch import parse_diff
from coder.vcs.repo import Repo


def test_the_repository_is_found_from_a_subdirectory_and_not_outside(git_repo: Path, tmp_path: Path) -> None:
    assert Repo.open(git_repo / "src").root == git_repo.resolve()
    assert Repo.open(git_repo / "src" / "app.py").root == git_repo.resolve()
    outside = tmp_path / "plain"
    outside.mkdir()
    assert Repo.find(outside) is None
    assert Repo.find(tmp_path / "missing") is None


def test_diff_includes_new_files_and_respects_index(git_repo: Path, g) -> None:
    assert not Repo.open(git_repo).has_changes() and Repo.open(git_repo).diff() == ""
    (git_repo / "src" / "new.py").write_text("x = 1\n")
    (git_repo / "README.md").write_text("# demo\nmore\n")
    text = Repo.open(git_repo).diff()
    files = {f.path: f for f in parse_diff(text)}
    assert files["src/new.py"].status == "added" and files["README.md"].status == "modified"
    assert files["README.md"].added[0].text == "more" and files["README.md"].added[0].number == 2
    assert Repo.open(git_repo).diff(staged=True) == ""
    g(git_repo, "add", "README.md")
    assert [f.path for f in parse_diff(Repo.open(git_repo).diff(staged=True))] == ["README.md"]
    g(git_repo, "commit", "-q", "-m", "readme")
    committed = parse_diff(Repo.open(git_repo).diff(commit="HEAD"))
    assert [f.path for f in committed] == ["README.md"]
    root_commit = g(git_repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert {f.path for f in parse_diff(Repo.open(git_repo).diff(commit=root_commit))} == {"README.md", "src/app.py"}
    assert Repo.open(git_repo).diff(base="HEAD~1", include_untracked=False).count("diff --git") == 1


def test_parse_diff_line_numbers_deletions_binary_and_odd_lines() -> None:
    text = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n keep\n--- removed dashes\n"
        "+++ added pluses\n keep\n keep2\n"
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        "diff --git a/img.png b/img.png\nnew file mode 100644\nBinary files /dev/null and b/img.png differ\n"
    )
    a, gone, img = parse_diff(text)
    assert a.removed[0].text == "-- removed dashes" and a.removed[0].number == 2
    assert a.added[0].text == "++ added pluses" and a.added[0].number == 2
    assert gone.status == "deleted" and gone.removed[0].text == "x"
    assert img.binary and img.status == "added" and img.path == "img.png"


def test_fallback_message_is_conventional_with_trailer(git_repo: Path) -> None:
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    text = Repo.open(git_repo).diff()
    msg = commit_message(text, "Fix the greeting so it says hi.", None, "")
    header, _, rest = msg.partition("\n\n")
    assert header == "fix(app): fix the greeting so it says hi"
    assert "src/app.py: modified (+1 -1)" in rest
    assert msg.rstrip().endswith("Generated-by: coder")
    files = parse_diff(text)
    assert fallback_message(files, "").startswith("chore(app): update src/app.py\n\n- src/app.py")
    tests_only = parse_diff("diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n"
                            "+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert fallback_message(tests_only, "cover the parser").startswith("test: cover the parser")


def test_normalise_model_answers() -> None:
    files = parse_diff("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert normalise("```\nfeat(api): Add the thing.\n\nBody line.\nSigned-off-by: x\n```", files, "") == (
        "feat(api): add the thing\n\nBody line.")
    assert normalise("Updated stuff", files, "fix a crash").startswith("fix: updated stuff")
    long = normalise("feat: " + "word " * 40, files, "")
    assert len(long.splitlines()[0]) <= 72
    assert normalise("", files, "") is None


def test_commit_message_with_scripted_model(git_repo: Path, tmp_path: Path) -> None:
    from coder.models.registry import create_provider
    from coder.review.gate import model_asker

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "fix(app): say hi instead of hello\n\nUsers asked for it."}]}))
    provider = create_provider(f"scripted:{script}", {})
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    msg = commit_message(Repo.open(git_repo).diff(), "greet with hi", model_asker(provider), "claude-test")
    assert msg == "fix(app): say hi instead of hello\n\nUsers asked for it.\n\nGenerated-by: coder (claude-test)\n"


def test_same_size_edit_right_after_a_commit_is_seen(git_repo: Path, g) -> None:
    """git's racy-entry check: a private copy of the index must keep its mtime, or an edit of the same size in
    the same second as the last index write is invisible to `git add -A` (a lost checkpoint, an empty review)."""
    from coder.vcs.checkpoints import Checkpoints

    for i in range(5):
        (git_repo / "x.txt").write_text(f"v{i}+a\n")
        g(git_repo, "add", "x.txt")
        g(git_repo, "commit", "-q", "-m", f"v{i}")
        cps = Checkpoints(Repo.open(git_repo), f"racy{i}")
        (git_repo / "x.txt").write_text(f"v{i}-a\n")  # same size, same second
        assert f"+v{i}-a" in Repo.open(git_repo).diff()
        assert cps.snapshot("turn") is not None
