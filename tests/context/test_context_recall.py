"""Issue 45: the recall benchmark (benchmarks/context_recall.py, benchmarks/context.py). What counts as a fact the
model learnt from an output, how a request keeps it (in the text, one read_output away, credited to a summary), and
the sanity check: the raw history and compaction off keep every fact, a small compaction window loses some."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from coder.context.replay import load_trajectory
from coder.models.types import ModelRequest, ToolResultBlock
from coder.models.wire import build_anthropic_body

ROOT = Path(__file__).resolve().parents[2]
TASK = "The helper that normalises rows crashes on an empty table. Fix it without changing the public API."
FOUND = "./src/tabular/rows_util.py:1145:def _normalise_rows(table, width):"
CODE = "\n".join(["def _normalise_rows(table, width):", "    _validate_width(width)",
                  "    rows = [_pad_row(row, width) for row in table]", "    return rows or [[]]", "",
                  *(f"# {n}: rows are padded to the table's width; an empty table has no width" for n in range(20))])


def _recall():  # noqa: ANN202 - a module of benchmarks/, imported by path
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import context_recall

        return context_recall
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def trajectory(filler: int = 20) -> dict:
    """A mini-swe-agent run: a search finds a function, the agent reads it, then many unrelated steps with long
    outputs, then it acts again on what the first two outputs said."""
    actions = [("grep -rn \"def _normalise_rows\" .", FOUND),
               ("sed -n '1145,1170p' src/tabular/rows_util.py", CODE),
               ("grep -n \"_pad_row\" src/tabular/rows_util.py", "1146:    rows = [_pad_row(row, width) for row in t]")]
    actions += [(f"cat docs/notes_{i}.txt", f"note {i}\n" + "lorem ipsum dolor sit amet\n" * 120)
                for i in range(filler)]
    actions += [("sed -n '1145,1150p' src/tabular/rows_util.py && grep -n _validate_width src/tabular/rows_util.py",
                 CODE)]
    messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": TASK}]
    for i, (command, output) in enumerate(actions):
        messages.append({"role": "assistant", "content": f"Step {i}.", "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}",
                         "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>"})
    return {"trajectory_format": "mini-swe-agent-1.1", "messages": messages, "info": {}}


def test_a_fact_is_learnt_from_an_output_not_from_the_task_or_the_model(tmp_path: Path) -> None:
    cr = _recall()
    path = tmp_path / "t.traj.json"
    path.write_text(json.dumps(trajectory(filler=2)))
    replay = load_trajectory(path)
    steps = cr.learnt_facts(replay.system, replay.messages).steps
    texts = [{(f.kind, f.text) for f in s} for s in steps]
    assert texts[0] == set(), "the model named _normalise_rows itself, before any output: not learnt"
    assert texts[1] == {("line", "1145"), ("path", "src/tabular/rows_util.py")}
    assert texts[2] == {("ident", "_pad_row"), ("path", "src/tabular/rows_util.py"), ("quote", "_pad_row")}
    assert texts[-1] == {("line", "1145"), ("ident", "_validate_width"), ("path", "src/tabular/rows_util.py")}
    assert ("ident", "_normalise_rows") not in set().union(*texts)
    assert not {f.kind for f in cr.candidates("print(KeyError, __init__)")}, "builtins and dunders are not facts"
    assert cr.occurs("1145", "line 1145: x") and not cr.occurs("1145", "11450") and not cr.occurs("_pad", "_pad_row")


def test_where_a_request_keeps_a_fact(tmp_path: Path) -> None:
    """In the text; one read_output away (a masked stub's handle); only in a summary, credited three ways."""
    cr = _recall()
    path = tmp_path / "t.traj.json"
    path.write_text(json.dumps(trajectory(filler=2)))
    replay = load_trajectory(path)
    facts = cr.learnt_facts(replay.system, replay.messages)
    turns = [i for i, m in enumerate(replay.messages) if m.role == "assistant"]

    def body(messages: list) -> dict:
        return build_anthropic_body(ModelRequest(replay.system, messages, []), "claude-sonnet-4-5")

    raw = [(body(replay.messages[:i]), False, 0) for i in turns]
    whole = cr.score(facts, raw).result()
    assert whole["recall"] == whole["recall_read"] == dict.fromkeys(cr.CREDITS, 1.0) and whole["facts"] >= 6
    # the last step's request with the task alone: lost; with a stub naming the outputs' handles: one read_output
    # away (what a masked output or a handoff's call log leaves)
    bare = body(replay.messages[:1])
    steps = [(b, False, 0) for b, _, _ in raw[:-1]]
    lost = cr.score(facts, [*steps, (bare, False, 0)]).result()
    assert lost["recall"]["nothing"] < 1.0 and lost["lost_step_share"]["nothing"] > 0
    handles = [f"output://{cr.digest(b.content)}" for m in replay.messages for b in m.content
               if isinstance(b, ToolResultBlock)]
    reread = body(replay.messages[:1])
    reread["messages"].append({"role": "user", "content": " ".join(handles)})
    kept = cr.score(facts, [*steps, (reread, False, 0)]).result()
    assert kept["recall"]["nothing"] == lost["recall"]["nothing"] and kept["recall_read"]["nothing"] == 1.0
    # the same facts only in a summary request before the step: credited by `everything`, not by `nothing`
    summary = body(replay.messages[: turns[-1]])
    summary["messages"].append({"role": "user", "content": cr.SUMMARY_MARKER})
    credited = cr.score(facts, [*steps, (summary, True, 400), (bare, False, 0)]).result()
    assert credited["recall"]["nothing"] == lost["recall"]["nothing"]
    assert credited["recall"]["everything"] == 1.0
    assert lost["recall"]["nothing"] <= credited["recall"]["extractive"] <= 1.0


def run_benchmark(traj: Path, *args: str, code: int = 0) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "context.py"), "--json", *args, str(traj)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == code, done.stderr[-3000:]
    return json.loads(done.stdout)["this checkout"]["total"], done.stderr


def test_the_sanity_check_raw_and_compaction_off_keep_every_fact(tmp_path: Path) -> None:
    """Through real sessions: the raw history and a session that never compacts keep every fact (recall 1.0 in
    the request); compacting early with no turn kept loses from the request a fact only a long output held, which
    the handoff's call log leaves one read_output away. The gate holds recall: recorded with compaction off, the
    early compaction fails it although it costs less."""
    traj = tmp_path / "t.traj.json"
    traj.write_text(json.dumps(trajectory()))
    gate = tmp_path / "gate.json"
    off, _ = run_benchmark(traj, "--context", "compact_at=1.0", "--quick", "--record", "--gate-file", str(gate))
    assert off["raw_recall"]["recall"]["nothing"] == 1.0 and off["summaries"] == 0
    assert off["recall"]["recall"] == off["recall"]["recall_read"] == dict.fromkeys(("nothing", "extractive",
                                                                                      "everything"), 1.0)
    assert off["recall"]["lost_step_share"]["nothing"] == 0.0 and off["recall"]["facts"] >= 8
    assert json.loads(gate.read_text())["recall"] == 1.0
    early, line = run_benchmark(traj, "--context", "compact_at=2000", "--context", "recent_turns=0", "--context",
                                "mask_target=0.01", "--quick", "--gate-file", str(gate), code=1)
    assert early["summaries"] >= 1 and early["raw_recall"]["recall"]["nothing"] == 1.0
    assert early["recall"]["recall"]["nothing"] < 1.0 and early["recall"]["recall_read"]["nothing"] == 1.0
    assert early["recall"]["recall"]["everything"] >= early["recall"]["recall"]["nothing"]
    assert early["ours_cost_usd"] < off["ours_cost_usd"] and "FAIL" in line and "recall 0." in line
