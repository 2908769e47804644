"""The tracker over a session's events, with the real tree probe on a real git repository: what a shell command
changed (the probe sees the files; the test writes them as the command would have), which runs came after the last
change, what covers the change, and the state the turn ends with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.base import events as ev
from coder.evidence.probe import TreeProbe
from coder.evidence.record import Evidence
from coder.evidence.replay import replay_evidence, write_targets
from coder.evidence.tracker import EvidenceTracker, is_code
from coder.tools.registry import builtin_by_protocol
from coder.vcs.repo import Repo

SHELL, EDITOR = builtin_by_protocol("bash_"), builtin_by_protocol("text_editor_")
PASSED, FAILED = "..\n2 passed in 0.02s\n", "F.\n1 failed, 1 passed in 0.03s\n"
DATA = Path(__file__).with_name("data")


class Session:
    """Events as a session emits them, on a real repository with the real probe."""

    def __init__(self, repo: Path, project: list[str] | None = None) -> None:
        self.repo = repo
        self.tracker = EvidenceTracker(TreeProbe(Repo.open(repo), repo.parent / "state"), self.read, project, None,
                                       str(repo))
        self.tracker.observe(ev.UserMessage("fix add"))
        self.n = 0

    def read(self, rel: str) -> str | None:
        path = self.repo / rel
        return path.read_text() if path.is_file() else None

    def edit(self, rel: str, text: str) -> None:
        (self.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.repo / rel).write_text(text)
        self.n += 1
        self.tracker.observe(ev.ToolCallFinished(f"t{self.n}", EDITOR, {"command": "create", "path": rel,
                                                                         "file_text": text}, "ok", False, [rel]))

    def shell(self, command: str, output: str = "", code: int = 0, writes: dict[str, str] | None = None) -> None:
        for rel, text in (writes or {}).items():  # what the command did to the tree
            (self.repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.repo / rel).write_text(text)
        self.n += 1
        self.tracker.observe(ev.ToolCallFinished(f"t{self.n}", SHELL, {"command": command}, output, False, [], 0.1,
                                                 {"exit_code": code, "cwd": str(self.repo)}))

    def record(self, final: str = "") -> Evidence | None:
        return self.tracker.record(final)


def calc_repo(git_repo: Path) -> Path:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 3)"
                                                      " == 5\n")
    (git_repo / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    return git_repo


def test_states_after_the_last_change(git_repo: Path) -> None:
    s = Session(calc_repo(git_repo))
    s.shell("python -m pytest -q tests/test_calc.py", FAILED, 1)
    s.edit("calc.py", "def add(a, b):\n    return a + b\n")
    record = s.record("All tests pass now.")
    assert record is not None and record.state == "unverified" and record.earlier == 1
    assert record.changed == ["calc.py"] and record.unsupported_claim and record.claim == "All tests pass now."
    s.shell("python -m pytest -q tests/test_calc.py", FAILED, 1)
    record = s.record()
    assert record is not None and record.state == "failed" and record.runs[0].counts == {
        "passed": 1, "failed": 1, "errors": 0, "skipped": 0}
    s.shell("python -m pytest -q tests/test_calc.py", PASSED, 0)  # the same command's latest result counts
    record = s.record("All tests pass now.")
    assert record is not None and record.state == "verified" and not record.unsupported_claim
    assert record.runs[-1].why == "tests/test_calc.py is named after a changed module"


def test_a_shell_made_change_after_the_tests_undoes_the_proof(git_repo: Path) -> None:
    s = Session(calc_repo(git_repo))
    s.edit("calc.py", "def add(a, b):\n    return a + b\n")
    s.shell("pytest -q", PASSED)
    assert (s.record() or Evidence("")).state == "verified"
    s.shell("sed -i 's/a + b/b + a/' calc.py", writes={"calc.py": "def add(a, b):\n    return b + a\n"})
    record = s.record()
    assert record is not None and record.state == "unverified" and record.reason == "no test ran after the last change"
    # a change and the run on one line: the change came first
    s.shell("sed -i 's/b + a/a + b/' calc.py && pytest -q", PASSED, writes={"calc.py": "def add(a, b):\n"
                                                                                       "    return a + b\n"})
    assert (s.record() or Evidence("")).state == "verified"
    s.shell("pytest -q; git apply more.patch", PASSED, writes={"calc.py": "def add(a, b):\n    return a+b\n"})
    assert (s.record() or Evidence("")).state == "unverified"  # it may have written after its run


def test_what_covers_the_change(git_repo: Path) -> None:
    (calc_repo(git_repo) / "tests" / "check_sum.py").write_text("from calc import add\n\ndef test_sum():\n"
                                                                "    assert add(1, 1) == 2\n")
    s = Session(git_repo, project=["./check.sh"])
    s.edit("calc.py", "def add(a, b):\n    return a + b\n")
    s.shell("pytest -q tests/test_other.py", PASSED)
    record = s.record()
    assert record is not None and record.state == "unverified" and not record.runs[0].covers
    assert record.reason == "the runs after the last change do not cover it"
    s.shell("pytest -q tests/check_sum.py", PASSED)  # named after nothing, but it imports the changed module
    record = s.record()
    assert record is not None and record.state == "verified" and "imports calc" in record.runs[-1].why
    s.shell("./check.sh", "all good", 0)
    assert record is not None and s.record().runs[-1].why == "the project's test command"  # type: ignore[union-attr]


def test_scripts_the_model_wrote(git_repo: Path) -> None:
    s = Session(calc_repo(git_repo))
    s.edit("calc.py", "def add(a, b):\n    return a + b\n")
    s.shell("cat > repro.py <<'EOF'\nimport calc\nassert calc.add(2, 3) == 5\nEOF",
            writes={"repro.py": "import calc\nassert calc.add(2, 3) == 5\n"})
    s.shell("python repro.py", "", 0)
    record = s.record()
    assert record is not None and record.state == "verified" and record.changed == ["calc.py"]  # the proof is not
    assert record.runs[0].kind == "script" and record.runs[0].why == "it imports calc"  # part of the change
    s.shell("python repro.py 2>&1 | head", "Traceback (most recent call last):\nAssertionError\n", 0)
    assert (s.record() or Evidence("")).state == "failed"  # its exit status is head's; the output says it raised


def test_no_code_no_record(git_repo: Path) -> None:
    s = Session(calc_repo(git_repo))
    s.edit("README.md", "# calc\n")
    s.shell("python -m pytest -q", PASSED, writes={"tests/__pycache__/test_calc.cpython-311.pyc": "bytes"})
    assert s.record() is None  # a document alone needs no tests, and what running the tests left is no change
    s.edit("calc.py", "def add(a, b):\n    return a + b\n")
    s.shell("sed -i 's/a + b/a - b/' calc.py", writes={"calc.py": "def add(a, b):\n    return a - b\n"})
    assert s.record() is None  # changed back: no change left to prove


def test_replay_of_a_recorded_run() -> None:
    """The benchmark's replay on runs of our own making, in mini-swe-agent's format (tests/evidence/data)."""
    states = {}
    for path in sorted((DATA / "runs").glob("*.traj.json")):
        data = json.loads(path.read_text())
        record = replay_evidence(data["messages"], data["info"]["submission"])
        states[path.name.split(".")[0]] = (record.state if record else None, bool(record and record.unsupported_claim))
    assert states == {"verified_run": ("verified", False), "claim_after_patch": ("unverified", True),
                      "failing_tests": ("failed", False)}


def test_write_targets() -> None:
    assert write_targets("sed -i 's/a/b/' x.py y.py && cat x.py") == ({"x.py", "y.py"}, False)
    assert write_targets("cat > /testbed/r.py << 'EOF'\nprint(1)\nEOF") == ({"/testbed/r.py"}, False)
    assert write_targets("cd /testbed && patch -p1 < fix.diff") == (set(), True)
    assert write_targets("git diff -- a.py > patch.txt") == ({"patch.txt"}, False)


@pytest.mark.parametrize(("path", "code"), [
    ("calc.py", True), ("src/app.TS", True), ("Makefile", True), ("requirements-dev.txt", True),
    ("CMakeLists.txt", True), ("pyproject.toml", True), (".eslintrc", True), ("ci/deploy.yaml", True),
    ("README.md", False), ("notes.txt", False), ("parent_ran", False), ("LICENSE", False), ("out.log", False),
    ("pkg/__pycache__/m.cpython-311.pyc", False), ("pkg/m.pyc", False), ("calc.egg-info/PKG-INFO", False),
    (".pytest_cache/v/cache/lastfailed", False), ("node_modules/x/index.js", False),
])
def test_what_is_code(path: str, code: bool) -> None:
    """A positive list: a marker file a command touched (`touch parent_ran`) is no change to prove."""
    assert is_code(path) is code
