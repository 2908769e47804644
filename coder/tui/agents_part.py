"""The session's subagents in the app (issue 36). A part of the app (coder/tui/app.py).

- Agent events become lines of the conversation (one started, ended, its patch merged), the panel above the
  status bar (each running agent: task, time, tokens, cost, what it waits on) and the status bar's live cost per
  agent (coder/tui/fit.py); the board (coder/tui/agents_view.py) keeps what the events said.
- Ctrl+G opens the agents screen: follow one's work as it happens, stop it, merge or discard its patch (on a
  worker: a merge reviews and writes files).
- The wake: when an agent the model started in the background ends while the app is idle, the model gets a turn
  with the news (as `coder run` does, coder/engine/agents.py `settle`).
- A background agent's permission question is put up by Questions (coder/tui/questions.py), introduced by the
  agent that asks (`title`); its "deny and stop" stops that agent, not the session's turn (`stop`).
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from coder.base import events as ev
from coder.tui.agents_view import AgentBoard, AgentsPanel, AgentsScreen, agent_title
from coder.tui.blocks import NoteBlock
from coder.tui.messages import AddBlock, AgentNews, StatusChanged, StopAgent
from coder.tui.part import Part
from coder.tui.state import AppState

#: the events this part draws
AGENT_EVENTS = (ev.AgentStarted, ev.AgentUpdate, ev.AgentEnded, ev.AgentMerged, ev.AgentRelay)


def agent_note(item: ev.Event) -> tuple[str, str] | None:
    """An agent's event as a line of the conversation and its kind: the feed adds it in order with the events
    around it (the board and the panel are this part's, later: AgentEvent)."""
    if isinstance(item, ev.AgentStarted):
        where = " in the background" + (f", in its own worktree ({item.worktree})" if item.worktree else "") \
            if item.background else ""
        return (f"agent {item.ident} ({item.agent}: {item.description}) started{where}"
                + (" by you" if item.by == "user" else "")), ""
    if isinstance(item, ev.AgentEnded):
        files = f"; {len(item.files)} file(s) changed in its worktree" if item.files else ""
        return (f"agent {item.ident} ended: {item.state}, {item.turns} turns, ${item.cost_usd:.4f}{files}",
                "ok" if item.state == "done" else "error")
    if isinstance(item, ev.AgentMerged):
        return (f"agent {item.ident}'s patch: {item.outcome}" +
                (f" ({', '.join(item.conflicts)})" if item.conflicts else "")), \
            "ok" if item.outcome == "merged" else ""
    return None


class AgentsPart(Part):
    """Writes the state's `agent_costs`."""

    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)
        self.board = AgentBoard()

    @property
    def _agents(self) -> Any:
        opened = self.state.opened
        return opened.agents if opened is not None else None

    # ---- events (on the app's thread, from the feed) ----------------------------------------------------------
    def event(self, item: ev.Event, replay: bool) -> None:
        """A replayed session's agents are told in the conversation only: they ended with their process. A new
        session (not a replayed one's start) has none yet."""
        if isinstance(item, ev.SessionStart):
            if not replay:
                self.clear()
            return
        redraw = not replay and self.board.event(item)
        if isinstance(item, ev.AgentUpdate):
            info = self.state.info
            info.cost = max(info.cost, item.session_cost_usd)  # the session's, its agents' included
        elif isinstance(item, ev.AgentEnded) and not replay:
            self.app.post_message(AgentNews())
        if redraw:
            self.draw()

    def draw(self) -> None:
        """The panel (and the status bar, whose cost per agent moves with it)."""
        panel = self.app.query_one_optional(AgentsPanel)
        if panel is not None:
            panel.draw(self.board.panel(max(self.app.size.width - 2, 40)))
        self.state.agent_costs = self.board.status_costs()
        self.app.post_message(StatusChanged())

    def tick(self) -> None:
        """A drain with nothing new: the running agents' spinner and times move."""
        if self.board.live():
            self.draw()

    def title(self, ident: str) -> str:
        return agent_title(ident, self.board)

    def clear(self) -> None:
        """Another session: its agents are its own."""
        self.board.clear()
        self.draw()

    # ---- the wake ---------------------------------------------------------------------------------------------
    def news(self) -> str | None:
        """Idle, with news of agents the model started: what the model's next turn reads (it merges, or goes on);
        None when there is none or the session is busy. The app sends it (after a turn that ended done, and when
        an agent ends: AgentNews)."""
        from coder.engine.agents import NEWS_HEADER  # lazy: the engine's imports come after the first paint

        agents = self._agents
        if agents is None or self.state.busy or self.state.queued or not agents.wake_pending():
            return None
        news = agents.news()
        return f"{NEWS_HEADER}\n{news}" if news else None

    # ---- the screen and its actions ---------------------------------------------------------------------------
    def open_screen(self) -> None:
        self.app.push_screen(AgentsScreen(self.board, self.act))

    def act(self, action: str, ident: str) -> None:
        """stop / merge / discard an agent (the agents screen's buttons). A stop goes through the app (StopAgent),
        which also takes the agent's question away."""
        if action == "stop":
            self.app.post_message(StopAgent(ident))
            return
        if self._agents is not None and self.state.busy:
            self.app.notify("a merge or discard waits for the running turn (Esc interrupts it)", severity="warning")
            return
        self._run(action, ident)

    def stop(self, ident: str) -> None:
        """Stop agent `ident` at once, then wait for it in a worker; the app then denies its question, if one waits
        (coder/tui/app.py `on_stop_agent`)."""
        agents = self._agents
        if agents is not None:
            agents.stop(ident, wait=False)
        self._run("stop", ident)

    def _run(self, action: str, ident: str) -> None:
        """stop / merge / discard on a worker (a stop waits for the agent, a merge reviews and writes)."""
        agents = self._agents
        if agents is None:
            return

        def work() -> None:
            result = getattr(agents, action)(ident)
            self.app.post_message(AddBlock(NoteBlock(result.output, "error" if result.is_error else "ok")))

        self.app.run_worker(work, thread=True, group="agents")
