"""One instance from start to prediction: workspace, prompt, headless session, patch, trajectories.

`process_instance` is a plain module-level function of picklable arguments so the same code runs in a thread
of the local scheduler and as a Ray task on another machine. It never raises: whatever goes wrong becomes the
instance's status (state "crashed" when no prediction could be made, so a resumed run retries it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import CoderError, PromptError
from coder.base.resources import PromptTemplate, parse_template, placeholders, template
from coder.batch.ahead import WorkspacesAhead
from coder.batch.instances import Instance
from coder.batch.outputs import InstanceStatus, atomic_write, patch_stats
from coder.batch.reach import agent_reach, git_reach, instance_reach, reach_flags, scan_trajectory
from coder.batch.runner import AgentRequest, AgentResult, export_session, run_agent
from coder.batch.testbed import enter_testbed
from coder.batch.trajectory import write_mini_trajectory
from coder.batch.workspace import (
    Workspace,
    WorkspaceError,
    borrowed_objects,
    changed_files,
    create_workspace,
    ensure_mirror,
    git,
    remove_workspace,
    settle_index,
    workspace_patch,
)
from coder.config.layers import settings
from coder.review.pipeline import review
from coder.vcs.repo import Repo

#: the task each instance's agent gets (prompts/swebench_instance.md) and what a template may use
INSTANCE_TEMPLATE = "swebench_instance.md"
INSTANCE_VARIABLES = ("problem_statement", "repo", "instance_id", "base_commit", "hints")
_OLD_SYNTAX = re.compile(r"(?<!\{)\{(" + "|".join(INSTANCE_VARIABLES) + r")\}(?!\})")


@dataclass
class RunConfig:
    """Everything an instance run needs; plain data so it pickles to Ray workers."""

    run_dir: Path
    model: str = "scripted:"
    repos_dir: Path | None = None
    cache_dir: Path = Path("~/.cache/coder/mirrors")
    allow_network: bool = False
    workers: int = 1
    max_turns: int | None = 50
    max_cost: float | None = None
    wall_time: float | None = 1800.0
    total_cost: float | None = None
    redo: bool = False
    exclude_new_tests: bool = False
    keep_workspaces: bool = False
    prompt_template: Path | None = None
    include_hints: bool = False  # SWE-bench's standard setting leaves hints_text out
    source_repo: Path | None = None  # issue-list mode: the user's repository (read only, cloned)
    branches: bool = False  # issue-list mode: also create branch coder/<id> in source_repo
    backend: str = "local"
    address: str | None = None
    progress: bool = True
    #: instance_id -> its environment (`coder swebench run`; see coder/batch/testbed.py enter_testbed)
    testbeds: dict[str, Any] = field(default_factory=dict)
    #: network presets for the agent's sandbox (coder/netproxy: python = PyPI), so it can install a missing test
    #: dependency; empty by default, so SWE-bench runs stay comparable (no network, as the harness's agents)
    network_presets: list[str] = field(default_factory=list)
    #: MCP servers of the user's config the run lets its agents use (`--mcp NAME`: name -> the server's table);
    #: none by default, whatever the user's config holds; each is recorded and flagged (coder/batch/reach.py)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: web search for the agents (`--web-search`): off by default, recorded and flagged when on
    web_search: bool = False
    #: paths kept from every agent's sandbox (coder/batch/reach.py): mirrors, dataset, run folder, caches
    hide: list[str] = field(default_factory=list)
    #: independent attempts per instance; the one with the strongest evidence is submitted (coder/batch/attempts.py)
    attempts: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


@dataclass
class InstanceOutcome:
    status: InstanceStatus
    patch: str | None
    files: dict[str, str] = field(default_factory=dict)  # extra artifacts by file name (for remote workers)


def model_for(inst: Instance, model: str, attempt: int = 0) -> str:
    """`scripted:DIR` gives each instance the script DIR/<instance_id>.json (attempt k of several:
    DIR/<instance_id>.<k>.json when there is one)."""
    if model.startswith("scripted:"):
        target = Path(model.split(":", 1)[1]).expanduser()
        if target.is_dir():
            own = target / f"{inst.instance_id}.{attempt}.json"
            script = own if attempt and own.is_file() else target / f"{inst.instance_id}.json"
            if not script.is_file():
                raise CoderError(f"no script for {inst.instance_id}: {script} does not exist")
            return f"scripted:{script}"
    return model


def instance_template(path: Path | None) -> PromptTemplate:
    """The built-in task template, or the user's `--prompt-template`: the one strict `{{name}}` syntax, any of
    INSTANCE_VARIABLES and nothing else (PromptError, before any instance starts). A template still written in
    the old `{name}` syntax is refused by name rather than sent to the model with its placeholders unfilled."""
    if path is None:
        return template(INSTANCE_TEMPLATE, INSTANCE_VARIABLES)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"--prompt-template {path}: cannot be read ({exc})") from None
    old = _OLD_SYNTAX.search(text)
    if old:
        raise PromptError(f"--prompt-template {path}: {old.group(0)} is the old syntax; write {{{{{old.group(1)}}}}} "
                          "(templates use {{name}}, so single braces in code stay literal).")
    loaded = parse_template(str(path), text, placeholders(text))
    unknown = sorted(loaded.variables - set(INSTANCE_VARIABLES))
    if unknown:
        takes = ", ".join("{{" + v + "}}" for v in INSTANCE_VARIABLES)
        raise PromptError(f"--prompt-template {path}: unknown variable {unknown[0]} (it may use {takes}).")
    return loaded


def render_prompt(inst: Instance, template_path: Path | None, include_hints: bool = False) -> str:
    hints = f"\n<hints>\n{inst.hints_text.strip()}\n</hints>\n" if include_hints and inst.hints_text.strip() else ""
    values = {"problem_statement": inst.problem_statement.strip(), "repo": inst.repo or "this repository",
              "instance_id": inst.instance_id, "base_commit": inst.base_commit, "hints": hints}
    loaded = instance_template(template_path)
    return loaded.render(**{k: v for k, v in values.items() if k in loaded.variables})


class InstanceInterrupted(CoderError):
    """The user stopped the batch while this instance was starting: not a crash, just not done yet."""


def workspace_dir(inst: Instance, cfg: RunConfig, work_root: Path | None = None) -> Path:
    return Path(work_root or cfg.run_dir) / "workspaces" / inst.instance_id


def make_workspace(inst: Instance, cfg: RunConfig, ws_dir: Path) -> Workspace:
    """The instance's checkout at its base commit, from its mirror (or the user's repository), its index
    settled so that taking the patch afterwards does not hash the whole tree again."""
    mirror = cfg.source_repo or ensure_mirror(inst.repo, cfg.repos_dir, Path(cfg.cache_dir).expanduser(),
                                              cfg.allow_network)
    ws = create_workspace(mirror, inst.base_commit, ws_dir)
    settle_index(ws.path)
    return ws


def process_instance(inst: Instance, cfg: RunConfig, work_root: Path | None = None,
                     ahead: WorkspacesAhead | None = None, attempt: int = 0) -> InstanceOutcome:
    """`ahead` (the local backend's) may have made the workspace already, and removes it afterwards. `attempt`
    k > 0: one of several attempts (coder/batch/attempts.py), in `instances/<id>/attempts/<k>/` and a workspace
    of its own."""
    root = Path(work_root or cfg.run_dir)
    inst_dir = root / "instances" / inst.instance_id
    ws_dir = workspace_dir(inst, cfg, work_root)
    if attempt:
        inst_dir = inst_dir / "attempts" / str(attempt)
        ws_dir = ws_dir if attempt == 1 else ws_dir.with_name(f"{inst.instance_id}.{attempt}")
    status = InstanceStatus(instance_id=inst.instance_id, worker=socket.gethostname())
    started = time.monotonic()
    try:
        return _process(inst, cfg, inst_dir, ws_dir, status, ahead, attempt, root.resolve() != Path(cfg.run_dir)
                        .resolve())
    except Exception as exc:  # noqa: BLE001 - one instance must never take the batch down
        status.state = "interrupted" if isinstance(exc, InstanceInterrupted) else "crashed"
        status.exit_reason = "interrupted" if isinstance(exc, InstanceInterrupted) else "error"
        status.error = str(exc) if isinstance(exc, CoderError) else f"{type(exc).__name__}: {exc}"
        status.duration_s = time.monotonic() - started
        status.finished_at = time.time()
        if not isinstance(exc, CoderError):
            try:
                inst_dir.mkdir(parents=True, exist_ok=True)
                (inst_dir / "crash.log").write_text(traceback.format_exc(), encoding="utf-8")
            except OSError:
                pass
        return InstanceOutcome(status, None)
    finally:
        if not cfg.keep_workspaces:  # in the background when the local backend's housekeeping is there
            (ahead.remove if ahead is not None else remove_workspace)(ws_dir)


def _process(inst: Instance, cfg: RunConfig, inst_dir: Path, ws_dir: Path, status: InstanceStatus,
             ahead: WorkspacesAhead | None, attempt: int, remote: bool) -> InstanceOutcome:
    if inst_dir.exists():  # a previous attempt (killed, crashed or --redo): start clean
        shutil.rmtree(inst_dir, ignore_errors=True)
    inst_dir.mkdir(parents=True, exist_ok=True)
    model = model_for(inst, cfg.model, attempt)
    status.model = cfg.model
    prompt_file = inst_dir / "prompt.md"
    prompt_file.write_text(render_prompt(inst, cfg.prompt_template, cfg.include_hints), encoding="utf-8")

    ws = (ahead.take(ws_dir) if ahead is not None else None) or make_workspace(inst, cfg, ws_dir)
    git_record = git_reach(ws.path, ws.base_commit)  # before the environment's setup commit and the agent
    agent_env = enter_testbed(cfg.testbeds.get(inst.instance_id), ws, prompt_file, inst_dir)
    shown = [p for p in agent_env.pop("CODER_SANDBOX_EXTRA_RO", "").split(os.pathsep) if p]
    reach = agent_reach(cfg.network_presets, [*shown, *borrowed_objects(ws.path)], cfg.mcp_servers, cfg.web_search)
    status.reach, hidden, exposed = instance_reach(ws.path, git_record, inst.repo, cfg.hide, reach)
    agent_env = {**agent_env, "CODER_SANDBOX_HIDE": os.pathsep.join(hidden)}

    result = run_agent(AgentRequest(workspace=ws.path, prompt_file=prompt_file, state_dir=inst_dir / "state",
                                    model=model, max_turns=cfg.max_turns, max_cost=cfg.max_cost,
                                    wall_time=cfg.wall_time, log_path=inst_dir / "agent.log", extra_env=agent_env,
                                    reach=reach))
    if result.returncode == 130 and not result.session_id:  # Ctrl+C before the agent got going: rerun on resume
        raise InstanceInterrupted("interrupted before the agent started")
    if result.exit_reason == "error" and not result.session_id and result.turns == 0:
        # The CLI never got going (bad flags, missing key): that is infrastructure, not an agent outcome.
        message = result.error or "no error message"
        if not message.startswith("coder run exited"):
            message = f"coder run exited {result.returncode}: {message}"
        raise WorkspaceError(message)
    patch = workspace_patch(ws.path, ws.base_commit, cfg.exclude_new_tests)
    _fill_status(status, result, patch, cfg.model)
    if attempt and patch.strip():  # best of N ranks the attempts by the reviewer's verdict after their evidence
        status.verdict = review_verdict(ws.path, patch, inst.problem_statement)
    if result.exit_reason == "interrupted":
        status.state = "interrupted"

    events = export_session(inst_dir / "state", result.session_id, inst_dir / "events.jsonl")
    status.flags = [{"flag": flag, "turn": 0, "evidence": ""} for flag in reach_flags(status.reach)]
    status.flags += scan_trajectory(events, hidden, exposed, status.reach["vendored"])
    write_mini_trajectory(inst_dir / f"{inst.instance_id}.traj.json", inst.instance_id, events,
                          exit_reason=result.exit_reason, patch=patch, cost_usd=result.cost_usd,
                          model=result.model or model, config={"max_turns": cfg.max_turns,
                                                               "max_cost": cfg.max_cost,
                                                               "wall_time": cfg.wall_time})
    # an artefact, as events.jsonl and the trajectory (status.json, written after it, is what counts as done)
    atomic_write(inst_dir / "result.json", json.dumps(result.to_dict(), indent=1), durable=False)
    if cfg.branches and cfg.source_repo is not None and patch.strip():
        _make_branch(ws.path, cfg.source_repo, inst, attempt_ref(inst, attempt) if attempt else branch_ref(inst))
    files: dict[str, str] = {}
    for name in ("events.jsonl", f"{inst.instance_id}.traj.json", "result.json", "prompt.md") if remote else ():
        path = inst_dir / name
        if path.is_file():
            files[name] = path.read_text(encoding="utf-8")
    return InstanceOutcome(status, patch, files)


#: what an instance's status takes over from the agent's result as it is
_FROM_RESULT = ("exit_reason", "turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                "cost_usd", "duration_s", "session_id", "error", "evidence")


def _fill_status(status: InstanceStatus, result: AgentResult, patch: str, model: str) -> None:
    added, removed = patch_stats(patch)
    for name in _FROM_RESULT:
        setattr(status, name, getattr(result, name))
    status.submitted = result.exit_reason == "done" and bool(patch.strip())
    status.patch_files = changed_files(patch)
    status.patch_added, status.patch_removed = added, removed
    status.model = model  # what the user asked for: one model_name_or_path for the whole run
    status.finished_at = time.time()


#: the reviewer's stages that rank attempts: everything but its tests (the evidence) and the model's review
RANKING_STAGES = ["apply", "parse", "lint", "hygiene", "gaming"]


def review_verdict(workspace: Path, patch: str, task: str) -> str:
    """The reviewer's mechanical verdict on an attempt's patch (pass, warn, fail), or "" when it could not run."""
    try:
        return review(Repo.open(workspace), patch, task, None, settings({"review": {"stages": RANKING_STAGES}})).verdict
    except (CoderError, OSError):
        return ""


def branch_ref(inst: Instance) -> str:
    """The branch an issue's fix gets in the user's repository (`--branches`)."""
    return f"refs/heads/coder/{inst.instance_id}"


def attempt_ref(inst: Instance, attempt: int) -> str:
    """Where attempt k of several keeps its commit until one is chosen: not a branch (`git branch` does not list
    it), so no attempt but the chosen one ever becomes coder/<id> (coder/batch/attempts.py moves it there)."""
    return f"refs/coder-attempts/{inst.instance_id}/{attempt}"


def _make_branch(ws: Path, source_repo: Path, inst: Instance, ref: str) -> None:
    """Commit the workspace and fetch that commit into the user's repository as `ref`.

    Only a ref is created there; the user's checkout, index and current branch are untouched."""
    git(ws, "add", "-A")
    title = inst.problem_statement.strip().splitlines()[0][:60] if inst.problem_statement.strip() else ""
    git(ws, "commit", "-q", "--no-verify", "-m", f"coder: {inst.instance_id}: {title}".strip())
    git(source_repo, "fetch", "-q", str(ws), f"+HEAD:{ref}", protocols="file")
