"""What the sandbox leaves that runs later, round two: the red team's ways around the kinds (issue 43, item 6).

Each test plants with the real sandbox (a headless `coder run`, or the bash tool with nobody to ask), then uses the
thing as the user would later, outside coder, and a control plants the same on the host and shows that it runs.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from repo_support import git
from security_run_support import BASH_MODES, MODE_IDS, take_fired
from test_security_left_behind import STALE, _run, _shell, _users_git, _venv, outside, repo

from coder.vcs.repo import Repo

__all__ = ["outside", "repo"]  # fixtures


def _fsmonitor(outside: Path) -> str:
    return f"[core]\\n\\tfsmonitor = {outside / 'evil.sh'} fsmonitor\\n"


def _bash(repo: Path, tmp_path: Path, *commands: str) -> list[str]:
    """Each command through the bash tool, in one shell, nobody to ask (as headless); the outputs."""
    tool, ctx, _ = _shell(repo, tmp_path / "state", None)
    try:
        tool.run(tool.parse({"command": "true"}), ctx)  # the baseline
        return [tool.run(tool.parse({"command": command}), ctx).output for command in commands]
    finally:
        tool.close()


# ---- a link where git reads config ---------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "flags"), BASH_MODES, ids=MODE_IDS)
def test_an_included_config_file_made_a_link_is_removed(repo: Path, outside: Path, mode: str,
                                                        flags: tuple[str, ...]) -> None:
    """`include.path ../.gitconfig`, no such file yet: the shell makes `.gitconfig` a link to a file that sets
    core.fsmonitor. git follows the link; so does the check (any link there is refused)."""
    git(repo, "config", "include.path", "../.gitconfig")
    plant = f"mkdir -p docs && printf '{_fsmonitor(outside)}' > docs/notes.txt && ln -s docs/notes.txt .gitconfig"
    output, reports = _run(repo, plant + " && echo PLANTED", mode, flags)
    assert "PLANTED" in output and ".gitconfig" in output and "symbolic link" in output, output
    assert reports and reports[0]["items"][0]["kind"] == "gitconfig"
    assert not os.path.lexists(repo / ".gitconfig")
    _users_git(repo, "status")
    assert take_fired(outside) == []
    (repo / ".gitconfig").symlink_to("docs/notes.txt")  # control: the same link, made outside coder
    _users_git(repo, "status")
    assert "evil:fsmonitor" in take_fired(outside)


def test_a_linked_folder_on_an_include_path_is_removed(repo: Path, outside: Path) -> None:
    """`include.path ../conf/git.inc`: the shell writes `sub/git.inc` and links `conf` to `sub`. The link is the
    sandbox's: removed, never "could not remove it"."""
    git(repo, "config", "include.path", "../conf/git.inc")
    plant = f"mkdir -p sub && printf '{_fsmonitor(outside)}' > sub/git.inc && ln -s sub conf && echo PLANTED"
    output, reports = _run(repo, plant, "auto", ())
    assert "PLANTED" in output and "could not" not in output, output
    assert reports and "the link conf" in reports[0]["items"][0]["done"]
    assert not os.path.lexists(repo / "conf")
    _users_git(repo, "status")
    assert take_fired(outside) == []
    (repo / "conf").symlink_to("sub")  # control
    _users_git(repo, "status")
    assert "evil:fsmonitor" in take_fired(outside)


def test_a_hooks_folder_replaced_by_a_link_is_removed(repo: Path, outside: Path, tmp_path: Path) -> None:
    """husky's layout (`core.hooksPath .husky/_`): the shell replaces the folder with a link to one it filled."""
    (repo / ".husky" / "_").mkdir(parents=True)
    git(repo, "config", "core.hooksPath", ".husky/_")
    hook = f"printf '#!/bin/sh\\n{outside / 'evil.sh'} hook\\n' > .cache-x/pre-commit && chmod +x .cache-x/pre-commit"
    (output,) = _bash(repo, tmp_path, f"mkdir -p .cache-x && {hook} && printf '*\\n' > .cache-x/.gitignore && "
                      "rm -rf .husky/_ && ln -s ../.cache-x .husky/_ && echo PLANTED")
    assert "PLANTED" in output and "could not remove" not in output and ".husky/_: a git hook" in output, output
    assert not os.path.lexists(repo / ".husky" / "_")
    _users_git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    assert take_fired(outside) == []
    (repo / ".husky" / "_").symlink_to("../.cache-x")  # control
    _users_git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    assert take_fired(outside) == ["evil:hook"]


# ---- kinds that do not depend on what the sandbox can change ---------------------------------------------------

def _activated_git(repo: Path) -> None:
    env = {**os.environ, "PATH": f"{repo / '.venv' / 'bin'}:{os.environ['PATH']}"}
    subprocess.run(["git", "--version"], cwd=repo, env=env, capture_output=True, timeout=120)


def test_a_venv_stays_a_venv_when_the_command_removes_its_pyvenv_cfg(repo: Path, outside: Path,
                                                                     tmp_path: Path) -> None:
    _venv(repo)
    plant = (f"rm -f .venv/pyvenv.cfg && printf '#!/bin/sh\\n{outside / 'evil.sh'} venv-git\\n' > .venv/bin/git && "
             "chmod +x .venv/bin/git && echo PLANTED")
    first, second = _bash(repo, tmp_path, "echo 'home = /tmp' >> .venv/pyvenv.cfg; echo CHANGED",
                          "grep -c 'home = /tmp' .venv/pyvenv.cfg; " + plant)
    # a change to pyvenv.cfg (its home decides which Python runs) is asked about itself: refused, restored
    assert "CHANGED" in first and ".venv/pyvenv.cfg" in first and "restored" in first, first
    assert second.startswith("0\n") and "PLANTED" in second, second
    assert ".venv/bin/git" in second and "nobody could be asked" in second, second
    assert not os.path.lexists(repo / ".venv" / "bin" / "git")
    _activated_git(repo)
    assert take_fired(outside) == []
    subprocess.run(["sh", "-c", plant], cwd=repo, check=True, capture_output=True, timeout=60)  # control
    _activated_git(repo)
    assert take_fired(outside) == ["evil:venv-git"]


EXTENSION = r"""
#include <Python.h>
#include <stdio.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "mod", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_mod(void) {
    FILE *f = fopen(MARKER, "a"); if (f) { fputs("so ", f); fclose(f); }
    return PyModule_Create(&def);
}
"""


def _users_python(repo: Path, code: str, python: str = sys.executable) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-c", code], cwd=repo, env=env, capture_output=True, timeout=120)


def test_extension_modules_and_sitecustomize_are_refused(repo: Path, outside: Path, tmp_path: Path) -> None:
    """A compiled `mod.<suffix>.so` beside `mod.py` runs at the next `import mod` (the import system prefers it);
    a `sitecustomize.py` in a venv's site-packages at every start of that Python."""
    import sysconfig
    from importlib.machinery import EXTENSION_SUFFIXES
    source = tmp_path / "ext.c"
    source.write_text(EXTENSION)
    built = repo / "ext.bin"  # the user's file, of no kind (so the shell can copy it)
    proc = subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                           f"-DMARKER=\"{outside / 'marker'}\"", str(source), "-o", str(built)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"needs gcc and the Python headers (apt-get install gcc python3-dev): {proc.stderr}"
    site = _venv(repo)
    so = f"mod{EXTENSION_SUFFIXES[0]}"
    custom = f"{site.relative_to(repo)}/sitecustomize.py"
    plant = f"cp ext.bin {so} && echo \"open('{outside / 'marker'}', 'a').write('site ')\" > {custom} && echo PLANTED"
    (output,) = _bash(repo, tmp_path, plant)
    assert "PLANTED" in output and f"{so}: a compiled extension" in output and "sitecustomize.py: a site" in output
    assert not (repo / so).exists() and not (site / "sitecustomize.py").exists()
    _users_python(repo, "import mod")
    _users_python(repo, "pass", str(repo / ".venv" / "bin" / "python"))
    assert take_fired(outside) == []
    subprocess.run(["sh", "-c", plant], cwd=repo, check=True, capture_output=True, timeout=60)  # control
    _users_python(repo, "import mod")
    _users_python(repo, "pass", str(repo / ".venv" / "bin" / "python"))
    assert sorted(take_fired(outside)) == ["site", "so"]


CONFTEST = "open({marker!r}, 'a').write('conftest ')\n"


def _users_pytest(repo: Path) -> None:
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=repo,
                   capture_output=True, timeout=300)


def test_a_conftest_hidden_by_a_self_ignoring_gitignore_is_refused(repo: Path, outside: Path, tmp_path: Path) -> None:
    """`tests/.gitignore` ignores itself and `conftest.py`: git status, /diff and the review show neither, and the
    user's next pytest runs the conftest. A conftest git shows is not asked about."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    conftest = CONFTEST.format(marker=str(outside / "marker"))
    plant = (f"printf 'conftest.py\\n.gitignore\\n' > tests/.gitignore && printf \"{conftest}\" > tests/conftest.py"
             " && echo PLANTED")
    hidden, visible = _bash(repo, tmp_path, plant, "mkdir -p lib && echo 'X = 1' > lib/conftest.py && echo VISIBLE")
    assert "PLANTED" in hidden and "tests/conftest.py: a conftest.py git ignores" in hidden, hidden
    assert not (repo / "tests" / "conftest.py").exists()
    assert "VISIBLE" in visible and "lib/conftest.py" not in visible and (repo / "lib" / "conftest.py").exists()
    _users_pytest(repo)
    assert take_fired(outside) == []
    subprocess.run(["sh", "-c", plant], cwd=repo, check=True, capture_output=True, timeout=60)  # control
    assert "tests/conftest" not in git(repo, "status", "--porcelain", "--untracked-files=all")  # hidden from git
    _users_pytest(repo)
    assert take_fired(outside) == ["conftest"]


def test_a_conftest_hidden_by_a_later_command_is_refused(repo: Path, outside: Path, tmp_path: Path) -> None:
    """The conftest is written in plain sight (git shows it: not asked), the next command hides it."""
    conftest = CONFTEST.format(marker=str(outside / "marker"))
    first, second = _bash(repo, tmp_path, f"mkdir -p tests && printf \"{conftest}\" > tests/conftest.py && echo MADE",
                          "printf 'conftest.py\n.gitignore\n' > tests/.gitignore && echo HIDDEN")
    assert first.strip() == "MADE", first
    assert "HIDDEN" in second and "tests/conftest.py: a conftest.py git ignores" in second, second
    assert not (repo / "tests" / "conftest.py").exists()


def test_outside_a_repository_a_conftest_is_not_asked_about(tmp_path: Path) -> None:
    """Nothing shows any file there (no git status, no review), so a conftest.py is no more hidden than the rest."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (output,) = _bash(folder, tmp_path, "mkdir -p tests && echo 'X = 1' > tests/conftest.py && echo MADE")
    assert output.strip() == "MADE" and (folder / "tests" / "conftest.py").exists()


# ---- the index: a tracked change hidden with assume-unchanged or skip-worktree ---------------------------------

@pytest.mark.parametrize("bit", ["--assume-unchanged", "--skip-worktree"])
def test_a_tracked_change_hidden_by_an_index_bit_is_shown(repo: Path, outside: Path, tmp_path: Path,
                                                          bit: str) -> None:
    plant = f"echo \"open('{outside / 'marker'}', 'a').write('mod ')\" >> mod.py && git update-index {bit} mod.py"
    (output,) = _bash(repo, tmp_path, plant + " && echo PLANTED")
    assert "PLANTED" in output and "mod.py" in output and "bit cleared" in output, output
    assert git(repo, "status", "--porcelain").strip() == "M mod.py"  # the user sees the change
    assert git(repo, "ls-files", "-v", "mod.py").startswith("H ")
    # control: the same bit set by the user hides the change from git status; coder's snapshot still has it
    git(repo, "update-index", bit, "mod.py")
    assert git(repo, "status", "--porcelain").strip() == ""
    snapshot = Repo.open(repo).worktree_tree()
    assert "marker" in git(repo, "cat-file", "-p", f"{snapshot}:mod.py")
    assert git(repo, "ls-files", "-v", "mod.py")[0] in "hS"  # the user's index keeps the user's bit


# ---- a hard link in a folder that is not watched ---------------------------------------------------------------

def test_a_file_of_a_kind_rewritten_through_a_hard_link_is_seen(repo: Path, outside: Path, tmp_path: Path) -> None:
    """The user's own `.venv/bin/tool` and `__pycache__/mod.*.pyc`, rewritten through hard links made in
    `node_modules/h/` (a folder not watched), which the command then removes: no event names them."""
    _venv(repo)
    tool = repo / ".venv" / "bin" / "tool"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    _users_python(repo, "import mod")
    pyc = next((repo / "__pycache__").glob("mod.*.pyc")).relative_to(repo)
    bytecode = STALE.format(marker=str(outside / "marker"))
    bytecode = bytecode.replace("importlib.util.cache_from_source('mod.py')", "'node_modules/h/a'")
    plant = (f"mkdir -p node_modules/h && ln {pyc} node_modules/h/a && python3 -c {shlex.quote(bytecode)} && "
             f"ln .venv/bin/tool node_modules/h/b && printf '#!/bin/sh\\n{outside / 'evil.sh'} tool\\n' > "
             "node_modules/h/b && rm -rf node_modules")
    (output,) = _bash(repo, tmp_path, plant)
    assert "PLANTED" in output and ".venv/bin/tool" in output and str(pyc) in output, output
    assert not tool.exists() and not (repo / pyc).exists()
    env = {**os.environ, "PATH": f"{repo / '.venv' / 'bin'}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", "tool"], cwd=repo, env=env, capture_output=True, timeout=60)
    _users_python(repo, "import mod")
    assert take_fired(outside) == []
    tool.write_text("#!/bin/sh\nexit 0\n")  # control: the user's files again, the same plant outside coder
    tool.chmod(0o755)
    pyc_path = next((repo / "__pycache__").glob("mod.*.pyc"))
    assert pyc_path.relative_to(repo) == pyc
    subprocess.run(["sh", "-c", plant], cwd=repo, check=True, capture_output=True, timeout=60)
    subprocess.run(["sh", "-c", "tool"], cwd=repo, env=env, capture_output=True, timeout=60)
    _users_python(repo, "import mod")
    assert sorted(take_fired(outside)) == ["evil:tool", "pyc"]
