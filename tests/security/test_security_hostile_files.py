"""Files a hostile repository ships that coder parses on the host (the second red-team pass): each gets one clear
line, never a traceback, a hang or gigabytes.

- `.coder/config.toml` with a number of 5,000 digits (tomllib's int() refuses it with a ValueError) or arrays
  nested 100,000 deep (a RecursionError), and `.mcp.json` nested as deep: every coder start in an untrusted
  repository ended in a traceback, before any question.
- YAML front matter (agents, commands, skills) with aliases: ten lines expand to a billion entries ("billion
  laughs"; six levels took 5.7 s and 252 MB, each level ten times more).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from coder.base.errors import ConfigError
from coder.base.keylines import MAX_FLOW_DEPTH, yaml_with_lines
from coder.ext.manifests import AgentFile, read_markdown

REPO = Path(__file__).resolve().parents[2]
DEEP = 100_000
FILES = {
    "huge-number": (".coder/config.toml", "x = " + "1" * 5000 + "\n"),
    "deep-array": (".coder/config.toml", "x = " + "[" * DEEP + "]" * DEEP + "\n"),
    "deep-mcp-json": (".mcp.json", '{"mcpServers": {"a": ' + "[" * DEEP + "]" * DEEP + "}}"),
    "wrong-type": (".coder/config.toml", "hooks = 5\n"),
}


@pytest.mark.parametrize("case", sorted(FILES))
def test_a_hostile_config_file_gets_one_line_not_a_traceback(git_repo: Path, case: str) -> None:
    rel, text = FILES[case]
    (git_repo / rel).parent.mkdir(parents=True, exist_ok=True)
    (git_repo / rel).write_text(text)
    script = git_repo.parent / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}))
    proc = subprocess.run([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}",
                           "--permission-mode", "plan", "go"], cwd=git_repo, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    if proc.returncode == 0:  # read as untrusted: the session goes on, the file is listed as unreadable
        assert rel in proc.stderr and "done" in proc.stdout, proc.stderr
    else:
        assert proc.returncode == 2, proc.stderr
        assert f"{rel}" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def _laughs(levels: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["a"] * 10) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, levels)]
    return "---\nname: x\ndescription: y\n" + "\n".join(lines) + "\n---\nprompt\n"


def test_yaml_aliases_in_a_front_matter_are_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "laughs.md"
    path.write_text(_laughs(9))  # 10^9 entries once expanded
    before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    with pytest.raises(ConfigError, match=r"laughs\.md: the front matter is not valid YAML \(aliases"):
        read_markdown(AgentFile, path)
    assert time.monotonic() - started < 30  # a hang would be hours; the memory is the real measure
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB
    # control: the same front matter without its aliases reads
    path.write_text("---\nname: x\ndescription: y\n---\nprompt\n")
    assert read_markdown(AgentFile, path)[1] == "prompt\n"


def test_a_front_matter_nested_thousands_deep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.md"
    # refused before PyYAML reads it: its scanner is quadratic in the depth (20,000 levels took minutes of CPU
    # under load, past the integration tier's timeout) and its composer recurses per level
    path.write_text("---\nname: " + "[" * 20_000 + "]" * 20_000 + "\n---\nprompt\n")
    with pytest.raises(ConfigError, match="deep.md: the front matter is not valid YAML"):
        read_markdown(AgentFile, path)


def test_the_depth_line_falls_between_a_hundred_and_a_hundred_and_one() -> None:
    data, _ = yaml_with_lines("a: " + "[" * MAX_FLOW_DEPTH + "]" * MAX_FLOW_DEPTH)  # control: at the line, loads
    assert isinstance(data["a"], list)
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        yaml_with_lines("a: " + "[" * (MAX_FLOW_DEPTH + 1) + "]" * (MAX_FLOW_DEPTH + 1))
