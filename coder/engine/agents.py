"""The agents of a session (issue 36): subagents run to their end or in the background, in the session's tree or
in an isolated one, each followed as it works; the session's `AgentControl` (coder/tools/agents/control.py).

- **Background.** `start(..., background=True)` returns at once; the agent runs on a thread of its own, after a
  free slot (`[agents] max_running`, default 4: more wait "queued"). Its end is news the parent model reads
  after its next step (`news`), or that wakes an idle session (`wake_pending`; the frontends and `coder run`
  send it as a turn of its own). `read`, `wait` and `stop` follow it.
- **Isolation.** A background agent that can write works in an isolated tree (coder/engine/agent_trees.py) made from
  the session's work tree as it is at the start; what it changed comes back as a patch that `merge` reviews
  (the patch reviewer, `[agents] review_stages`) and merges three ways, all or nothing, or that `discard` drops.
  A foreground agent (the parent waits) works in the session's tree as before: nothing else writes there.
- **Spend you can see.** Each agent's tokens and cost are counted as its requests end, added to the session's
  cost at once (`Session.add_cost`: the session's `max_cost` covers its agents, and when it is reached every
  agent is stopped), and said in an `AgentUpdate` event with what the agent waits on.
- **Stopping.** `stop` sets the agent's cancel event (its model stream and its running tool stop) and closes its
  tools, which closes its sandbox and everything running in it; the session's end stops them all
  (`close`), and removes their trees. A killed process leaves them to the janitor (coder/engine/agent_janitor.py).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from coder.base import events as ev
from coder.config.sections import AgentsSettings
from coder.engine.agent_runs import (
    PROGRESS_LINES,
    AgentRun,
    discard_run,
    ended_text,
    merge_run,
    read_text,
)
from coder.engine.agent_trees import AgentTrees, inside
from coder.engine.session import Session
from coder.engine.session_parts import TurnOutcome
from coder.engine.subagents import ChildRun, Parent, open_child
from coder.ext.agents import agent_permission, load_agents
from coder.tools.agents.control import AGENT_CONTROL
from coder.tools.base import PermissionClass, ToolResult, one_line
from coder.tools.registry import describe
from coder.vcs import worktrees
from coder.vcs.repo import Repo

#: how long a stop waits for the agent's thread before closing its tools under it (seconds)
STOP_GRACE = 10.0


class Agents:
    """The session's agents (see the module docstring). Thread-safe: agents run on their own threads."""

    def __init__(self, parent: Parent, settings: AgentsSettings, repo: Repo | None, checkpointer: Any = None) -> None:
        self.parent, self.settings, self.repo, self.checkpointer = parent, settings, repo, checkpointer
        self.runs: dict[str, AgentRun] = {}
        self._changed = threading.Condition()
        self._slots = threading.Semaphore(max(1, settings.max_running))
        self._session: Session | None = None
        self._closed = False
        self.trees = AgentTrees(settings, parent.session_id, repo)

    def attach(self, session: Session) -> None:
        """The session the agents belong to: its cost includes theirs, its limit stops them."""
        self._session = session

    # ---- AgentControl: starting ---------------------------------------------------------------------------
    def permission(self, agent: str) -> PermissionClass:
        definition = self.parent.agents.get(agent)
        return "read" if definition is None else agent_permission(definition)

    def start(self, agent: str, prompt: str, description: str, *, background: bool, by: str = "model") -> ToolResult:
        definition = self.parent.agents.get(agent)
        if definition is None:
            return ToolResult(f"Unknown agent {agent!r}. Available: {', '.join(sorted(self.parent.agents))}. (Agent "
                              "definitions are read when the session starts: from your config dir, and from the "
                              "repository's .coder/agents/ only when the workspace is trusted.)", True)
        if self._closed:
            return ToolResult("The session is closing; no agent starts now.", True)
        isolated = background and agent_permission(definition) != "read"
        if isolated and self.repo is None:
            return ToolResult(f"Agent {agent!r} can change files, so in the background it works in its own git "
                              "worktree, and this workspace is not a git repository. Run it without `background` "
                              "(it then works in this tree while you wait).", True)
        with self._changed:
            ident = f"a{len(self.runs) + 1}"
            run = AgentRun(ident, agent, description, prompt, background, by)
            self.runs[ident] = run
        workspace, cwd = self.parent.tool_ctx.workspace, self.parent.tool_ctx.cwd
        extra_ro: list[str] = []
        if isolated:
            try:
                run.tree = self.trees.make(ident)
            except worktrees.VcsError as exc:
                with self._changed:
                    del self.runs[ident]
                return ToolResult(f"Could not make agent {ident}'s worktree: {exc}", True)
            workspace, cwd = run.tree.path, inside(run.tree.path, workspace, cwd)
            extra_ro = [str(run.tree.repo.objects_dir())]
        if not background:
            run.cancel = self.parent.tool_ctx.cancel  # the parent's interrupt (and wall time) stop it too
        child = ChildRun(ident, definition, prompt, description, workspace, cwd, run.cancel, background,
                         extra_ro=extra_ro, observe=lambda event: self._observe(run, event))
        run.session_id = child.session_id
        self.parent.record(ev.AgentStarted(ident, agent, description, child.session_id, background, by,
                                           str(run.tree.path) if run.tree else "", run.tree.base if run.tree else ""))
        if not background:
            self._run(run, child)
            return self._foreground_result(run)
        run.thread = threading.Thread(target=self._run, args=(run, child), name=f"coder-agent-{ident}", daemon=True)
        run.thread.start()
        where = f" in its own worktree ({run.tree.path}, branch {run.tree.branch})" if run.tree else ""
        return ToolResult(f"Started agent {run.title()} in the background{where}. You will read of its end after a "
                          "later tool call (or be woken when you are idle); until then you can follow, wait for or "
                          "stop it by its id.", data={"agent": ident, "background": True})

    # ---- running one ----------------------------------------------------------------------------------------
    def _run(self, run: AgentRun, child_run: ChildRun) -> None:
        """The agent's whole life, on its own thread (background) or the caller's. A background agent holds a slot
        from its start until its end is recorded, so the next one starts only after that."""
        holding = False
        try:
            if run.background:
                self._set(run, state="queued")
                while not self._slots.acquire(timeout=0.2):
                    if run.cancel.is_set():
                        raise _Stopped
                holding = True
                if run.cancel.is_set():
                    raise _Stopped
            child = open_child(self.parent, child_run)
            run.session, run.session_id, run.mode = child, child.id, child.parts.policy.mode
            self._set(run, state="running", waiting="the model")
            try:
                outcome = child.send(run.prompt)
            finally:
                child.close("stopped" if run.stopped else "done")
            self.parent.store.set_status(child.id, "stopped" if run.stopped else outcome.reason)
            run.report = outcome.final_text or "(the agent gave no report)"
            run.error = run.error or outcome.error or ""
            state = "stopped" if run.stopped else outcome.reason
        except _Stopped:
            state = "stopped"
        except Exception as exc:  # noqa: BLE001 - an agent's failure is its result, never the session's crash
            state, run.error = "error", f"{type(exc).__name__}: {exc}"
        try:
            self.trees.read_back(run)
            self._set(run, state=state, waiting="", ended=time.monotonic())
            self.parent.record(ev.AgentEnded(run.ident, run.state, run.turns, round(run.cost_usd, 6), run.report,
                                             run.error, list(run.files), run.result))
        finally:
            if holding:
                self._slots.release()

    def _observe(self, run: AgentRun, event: ev.Event) -> None:
        """Follow one event of the agent: its spend, what it waits on, a line of progress."""
        if isinstance(event, ev.TextDelta | ev.ToolOutput):
            return
        if isinstance(event, ev.UsageEvent):
            run.turns += 1
            run.cost_usd += event.cost_usd
            run.input_tokens += event.input_tokens + event.cache_read_tokens + event.cache_write_tokens
            run.output_tokens += event.output_tokens
            self._spent(event.cost_usd)
            self._set(run, waiting="tools" if run.live else "")
            return
        if isinstance(event, ev.PermissionRequest):
            self._set(run, waiting=f"your answer: may it run {describe(event.tool, event.input).title}?")
            return
        if isinstance(event, ev.ToolCallRequested):
            title = describe(event.tool, event.input).title
            self._note(run, f"· {title}")
            self._set(run, waiting=title)
        elif isinstance(event, ev.ToolCallFinished):
            self._note(run, f"  {'✗' if event.is_error else '✓'} {describe(event.tool, event.input).title}")
            self._set(run, waiting="the model")
        elif isinstance(event, ev.AssistantMessage):
            texts = [b.get("text", "") for b in event.message.get("content", []) if b.get("type") == "text"]
            if any(t.strip() for t in texts):
                self._note(run, "> " + one_line(" ".join(texts), 200))

    def _note(self, run: AgentRun, line: str) -> None:
        with self._changed:
            run.progress.append(line)
            if len(run.progress) > PROGRESS_LINES:
                drop = len(run.progress) - PROGRESS_LINES
                del run.progress[:drop]
                run.read_to = max(0, run.read_to - drop)

    def _spent(self, usd: float) -> None:
        session = self._session
        if session is None or usd <= 0:
            return
        session.add_cost(usd)
        if session.stats.cost_usd >= session.parts.limits.max_cost:
            for other in list(self.runs.values()):
                if other.live and other.background:
                    other.error = "the session's cost limit was reached"
                    self._cancel(other)

    def _set(self, run: AgentRun, **changes: Any) -> None:
        with self._changed:
            for name, value in changes.items():
                setattr(run, name, value)
            self._changed.notify_all()
        total = self._session.stats.cost_usd if self._session is not None else 0.0
        self.parent.relay(ev.AgentUpdate(run.ident, run.state, run.turns, round(run.cost_usd, 6), run.input_tokens,
                                         run.output_tokens, round(run.elapsed, 1), run.waiting, round(total, 6)))

    # ---- AgentControl: following --------------------------------------------------------------------------
    def wait(self, idents: list[str], timeout: float, cancel: threading.Event) -> ToolResult:
        unknown = [i for i in idents if i not in self.runs]
        if unknown:
            return self._unknown(unknown[0])
        watched = [self.runs[i] for i in idents] if idents else [r for r in self.runs.values() if r.live]
        if not watched:
            return ToolResult(self.news() or "No agent is running.")
        deadline = time.monotonic() + timeout
        with self._changed:
            while all(r.live for r in watched) and not cancel.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.5))
        ended = [r for r in watched if not r.live]
        if not ended:
            why = "interrupted" if cancel.is_set() else f"{timeout:.0f}s passed"
            return ToolResult(f"[{why}; still running: " + "; ".join(r.line() for r in watched) + "]")
        # an agent whose end was already told is said again in one line, never nothing (issue 47: waiting on an
        # agent that had ended returned an empty result)
        earlier = [f"Agent {r.title()} had already ended ({r.state}); its report came with that news (`read` "
                   "shows it again)." for r in ended if r.told]
        return ToolResult("\n\n".join([*earlier, self.news(only=ended)]).strip() + self._still_running())

    def stop(self, ident: str, wait: bool = True) -> ToolResult:
        """Stop agent `ident`; `wait`: until its thread has ended (at most STOP_GRACE), else return at once (a
        frontend's thread that must not block)."""
        run = self.runs.get(ident)
        if run is None:
            return self._unknown(ident)
        if not run.live:
            return ToolResult(f"Agent {run.title()} already ended: {run.state}.")
        self._cancel(run)
        if run.thread is not None and wait:
            run.thread.join(STOP_GRACE)
        return ToolResult(f"Stopped agent {run.title()}: {run.state}." + self._pending_note(run))

    def _cancel(self, run: AgentRun) -> None:
        """Stop the agent's model stream and running tool now; its thread closes its tools (and sandbox) on the
        way out, or a closer thread does after STOP_GRACE if it does not come out."""
        run.stopped = True
        run.cancel.set()
        if run.background:
            threading.Thread(target=self._force_close, args=(run,), daemon=True).start()

    def _force_close(self, run: AgentRun) -> None:
        if run.thread is not None:
            run.thread.join(STOP_GRACE)
            if run.thread.is_alive() and run.session is not None:
                for tool in run.session.parts.tools.values():
                    try:
                        tool.close()
                    except Exception:  # noqa: BLE001 - best effort: the process goes anyway
                        pass

    def listing(self) -> ToolResult:
        if not self.runs:
            return ToolResult("No agents in this session.")
        return ToolResult("\n".join(run.line() for run in self.runs.values()))

    def read(self, ident: str) -> ToolResult:
        run = self.runs.get(ident)
        if run is None:
            return self._unknown(ident)
        text, data = read_text(run, self.parent.tool_ctx.state_dir)
        return ToolResult(text, data=data)

    def patch_text(self, ident: str) -> str:
        """The unified diff of an agent's patch that is waiting to be merged ("" when there is none)."""
        run = self.runs.get(ident)
        if run is None or not run.pending_patch or run.tree is None:
            return ""
        return worktrees.patch(run.tree.repo, run.tree.base, run.result)

    def merge(self, ident: str, *, despite_review: bool = False) -> ToolResult:
        run = self.runs.get(ident)
        if run is None:
            return self._unknown(ident)
        return merge_run(run, self.parent, self.settings, self.checkpointer, despite_review)

    def discard(self, ident: str) -> ToolResult:
        run = self.runs.get(ident)
        return self._unknown(ident) if run is None else discard_run(run, self.parent)

    def _unknown(self, ident: str) -> ToolResult:
        known = ", ".join(self.runs) or "none yet"
        return ToolResult(f"No agent {ident!r} in this session (agents: {known}).", True)

    def _foreground_result(self, run: AgentRun) -> ToolResult:
        """What the `task` call that waited for `run` returns: its report, as before issue 36."""
        run.told = True
        report = run.report or "(the subagent gave no report)"
        if run.state != "done":
            report += f"\n[subagent {run.agent} stopped: {run.state}" + (f": {run.error}" if run.error else "") + "]"
        data = {"subagent_session": run.session_id, "agent": run.agent, "ident": run.ident, "mode": run.mode,
                "turns": run.turns, "agent_cost_usd": round(run.cost_usd, 6)}
        return ToolResult(report, run.state == "error", data=data)

    def news(self, only: list[AgentRun] | None = None) -> str:
        """What the parent model has not heard yet: the agents that ended, each with its report (and marked as
        told). `only` limits it to those."""
        with self._changed:
            fresh = [r for r in (only if only is not None else self.runs.values()) if not r.live and not r.told]
            for run in fresh:
                run.told = True
        return "\n\n".join(ended_text(run, self.parent.tool_ctx.state_dir) for run in fresh)

    def _still_running(self) -> str:
        live = self.running()
        return ("\n\n[still running: " + "; ".join(r.line() for r in live) + "]") if live else ""

    def _pending_note(self, run: AgentRun) -> str:
        return "" if not run.pending_patch else " It left a patch to merge or discard."

    # ---- the session's side -------------------------------------------------------------------------------
    def running(self) -> list[AgentRun]:
        return [r for r in self.runs.values() if r.live]

    def wake_pending(self) -> bool:
        """An agent the model started in the background ended and the model has not heard of it: an idle session
        should take a turn to read it."""
        return any(r.background and r.by == "model" and not r.live and not r.told for r in self.runs.values())

    def wait_any(self, timeout: float, cancel: threading.Event | None = None) -> bool:
        """Block until some running agent ends (True) or `timeout` passes or `cancel` is set (False)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            live = [r for r in self.runs.values() if r.live]
            while live and all(r.live for r in live):
                left = deadline - time.monotonic()
                if left <= 0 or (cancel is not None and cancel.is_set()):
                    return False
                self._changed.wait(min(left, 0.5))
        return bool(live)

    def stop_all(self) -> None:
        for run in self.running():
            self._cancel(run)

    def close(self) -> None:
        """The session ends: every agent stops and every tree goes. A patch nobody merged is saved in the
        session's folder first, and the session says where."""
        self._closed = True
        self.stop_all()
        for run in list(self.runs.values()):
            if run.thread is not None:
                run.thread.join(STOP_GRACE * 2)
            if run.tree is None:
                continue
            if run.pending_patch:
                saved = self.trees.save_patch(run, self.parent.tool_ctx.state_dir)
                if saved is not None:
                    self.parent.record(ev.ErrorEvent(f"agent {run.title()}: its patch was not merged; it is saved "
                                                     f"as {saved} (`git apply` it to use it)"))
            worktrees.forget(run.tree)
        self.trees.close()

class _Stopped(Exception):
    """Stopped before it started (while queued)."""


def install_agents(parent: Parent, repo: Repo | None, checkpointer: Any) -> Agents:
    """Read the agent definitions once (the repository's only when `config.trusted`) and give the session's
    tools its agents (`ctx.services[AGENT_CONTROL]`)."""
    parent.agents = load_agents(parent.tool_ctx.workspace, trusted=parent.config.trusted,
                                repo_files=parent.config.repo_files,
                                plugin_dirs=parent.config.plugin_dirs.get("agents", []))
    agents = Agents(parent, parent.config.agents, repo, checkpointer)
    parent.tool_ctx.services[AGENT_CONTROL] = agents
    return agents


def settle(session: Session, agents: Agents | None, outcome: TurnOutcome) -> TurnOutcome:
    """For a frontend that ends when the turn does (`coder run`): while agents the model started in the background
    run, or ended unheard, wait for them and give the model a turn with their news, until none is left (or the
    turn ends otherwise, or the user interrupts: then every agent stops)."""
    while agents is not None and outcome.reason == "done":
        while agents.running() and not agents.wake_pending() and not session.cancel.is_set():
            agents.wait_any(5.0, session.cancel)
        if session.cancel.is_set():
            agents.stop_all()
            return TurnOutcome("interrupted", outcome.final_text)
        news = agents.news()
        if not news:
            break
        outcome = session.send(f"{NEWS_HEADER}\n{news}")
    return outcome


#: the first line of a turn that only brings the news of background agents
NEWS_HEADER = "[Background agents you started have news. Nobody typed this message.]"
