"""The batch's fork server (coder/batch/runner.py, coder/batch/agent_warm.py, coder/cli/warm.py) imports and
computes ahead what every agent process would otherwise do again per instance. An agent forked from a process in
the fork server's state runs a whole scripted instance (a command in the bubblewrap shell, an edit of a Python
file, the answer) and imports no module and builds no parser of its own; the control shows that the same child,
forked from a process that only imported coder.cli.main, does both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder.batch.runner import export_session
from coder.batch.workspace import create_workspace

ROOT = Path(__file__).resolve().parents[2]

#: a process in the fork server's state (or, with --cold, one that imported only the CLI's entry), forking the
#: agent of one instance as runner.run_agent does, and recording what that child imported and whether it built a
#: parser
CHILD = r"""
import importlib, json, os, sys, atexit
from pathlib import Path
from coder.batch import runner
model, ws, state, out, mode = sys.argv[1:6]
names = runner.preload_names(model) if mode == "warm" else ["coder.cli.main"]
for name in names:
    importlib.import_module(name)  # the fork server's own preload skips a name that does not import: not here
before = set(sys.modules)
import coder.cli.main as cli_main
built = []
real_build = cli_main.build_parser
def counting_build():
    built.append(1)
    return real_build()
cli_main.build_parser = counting_build
pid = os.fork()
if pid == 0:
    atexit.register(lambda: Path(out).write_text(json.dumps({"imported": sorted(set(sys.modules) - before),
                                                            "parsers_built": len(built)})))
    req = runner.AgentRequest(workspace=Path(ws), prompt_file=Path(state) / "prompt.md", state_dir=Path(state),
                              model=model)
    runner._agent_main(runner.agent_args(req), ws, {**os.environ, "CODER_STATE_DIR": state},
                       state + "/agent.out", state + "/agent.log", None)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""

TURNS = [{"text": "Looking at calc.py.", "tool_calls": [{"name": "bash", "input": {"command": "cat calc.py"}}]},
         {"text": "Fixing the sign.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
             "command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}}]},
         {"text": "Fixed."}]


def _forked_agent(swe, tmp_path: Path, mode: str) -> tuple[dict, list[dict]]:
    ws = create_workspace(swe.mirror, swe.base_commit, tmp_path / f"ws-{mode}").path
    state = tmp_path / f"state-{mode}"
    state.mkdir()
    (state / "prompt.md").write_text("add() subtracts; fix it.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": TURNS}))
    out = tmp_path / f"imported-{mode}.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, f"scripted:{script}", str(ws), str(state), str(out), mode],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, (proc.stdout, proc.stderr, (state / "agent.log").read_text())
    result = json.loads((state / "agent.out").read_text().strip().splitlines()[-1])
    assert result["exit_reason"] == "done", result
    assert "a + b" in (ws / "calc.py").read_text()
    return json.loads(out.read_text()), export_session(state, result["session_id"], tmp_path / f"events-{mode}")


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_a_forked_agent_imports_nothing_and_builds_no_parser(swe, tmp_path, mode):
    seen, events = _forked_agent(swe, tmp_path, mode)
    start = next(e for e in events if e["type"] == "session_start")
    assert start["sandbox"] == "bubblewrap"  # the command ran in the sandbox, whatever was warmed
    cat = next(e for e in events if e["type"] == "tool_call_finished" and e["tool"] == "bash")
    assert not cat["is_error"] and "return a - b" in cat["output"]
    if mode == "warm":
        assert seen == {"imported": [], "parsers_built": 0}, \
            "the agent imported these per instance: add them to runner.PRELOAD"
    else:  # control: the same child without the fork server's preload imports the tools, yaml...
        assert {"yaml", "coder.tools.bash.tool"} <= set(seen["imported"]), seen
        assert seen["parsers_built"] == 1


def test_the_fork_server_starts_before_the_first_agent_with_the_whole_preload(tmp_path):
    """start_fork_server (called by the batch before its first instance) starts the real fork server at once, with
    runner.preload_names: coder's modules, then the warm-ups last."""
    code = ("import time\nfrom multiprocessing import forkserver\nfrom coder.batch import runner\n"
            "runner.start_fork_server('scripted:x')\npid = forkserver._forkserver._forkserver_pid\n"
            "for _ in range(100):  # forked at once; its cmdline is the server's once it has exec'ed\n"
            "    cmdline = open(f'/proc/{pid}/cmdline').read().replace(chr(0), ' ')\n"
            "    if 'forkserver' in cmdline:\n        break\n    time.sleep(0.05)\n"
            "print(pid)\nprint(cmdline)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    pid, cmdline = proc.stdout.split("\n", 1)
    assert int(pid) > 0 and "multiprocessing.forkserver" in cmdline
    assert "'yaml'" in cmdline and "'coder.tools.bash.tool'" in cmdline
    assert cmdline.index("'coder.cli.main'") < cmdline.index("'coder.batch.agent_warm'") < \
        cmdline.index("'coder.cli.warm'")
