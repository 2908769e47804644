"""The app's view of the session's subagents (issue 36): a panel above the status bar with a line per running
agent (what it does, for how long, its tokens and cost so far, what it waits on), the per-agent cost in the
status bar, and a screen (Ctrl+G, or `/agents` for the text form) listing every agent of the session to follow
one's work as it happens, stop it, or merge or discard its patch.

Everything here is drawn from events: `AgentStarted`, `AgentUpdate`, `AgentEnded` and `AgentMerged` of the
session, and each agent's own events relayed as `AgentRelay` (its calls, results and words, the follow view).
Actions go to the engine's `Agents` (`Opened.agents`) on a worker thread: a merge reviews and writes files.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.frontend.calls import tool_title
from coder.tui.fit import SPINNER, clip
from coder.tui.status import short

#: lines of an agent's work kept for the follow view
FOLLOW_LINES = 300
#: lines of one call's output the follow view shows (as it comes, or from its result when none came live)
OUTPUT_LINES = 12


@dataclass
class AgentLine:
    """What the app knows of one agent, from events."""

    ident: str
    agent: str
    description: str
    background: bool
    by: str
    worktree: str = ""
    state: str = "queued"
    turns: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    elapsed: float = 0.0
    seen_at: float = field(default_factory=time.monotonic)  # when `elapsed` was last said
    waiting: str = ""
    files: list[str] = field(default_factory=list)
    outcome: str = ""
    log: deque[str] = field(default_factory=lambda: deque(maxlen=FOLLOW_LINES))
    #: output lines shown so far of each running call (by call id), and a partial last line
    shown: dict[str, int] = field(default_factory=dict)
    partial: dict[str, str] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.state in ev.AGENT_LIVE

    def took(self) -> float:
        return self.elapsed + (time.monotonic() - self.seen_at if self.live else 0.0)

    def summary(self, width: int = 200) -> str:
        """One line: id, agent, task, state and time, turns, tokens, cost, what it waits on or its patch."""
        head = f"{self.ident} {self.agent} · {self.description or '(no description)'}"
        tail = f"{self.state} {self.took():.0f}s · {self.turns} turns · {short(self.tokens)} tok · " \
               f"${self.cost_usd:.4f}"
        if self.live and self.waiting:
            tail += f" · waiting on {self.waiting}"
        elif self.outcome:
            tail += f" · patch {self.outcome}"
        elif self.files and self.worktree:
            tail += f" · {len(self.files)} file(s) to merge or discard"
        return visible(f"{clip(head, max(20, width - len(tail) - 3))} · {tail}")


class AgentBoard:
    """The session's agents as the app shows them; `event` takes every agent event and says whether the panel
    should be drawn again."""

    def __init__(self) -> None:
        self.agents: dict[str, AgentLine] = {}

    def clear(self) -> None:
        self.agents.clear()

    def event(self, item: ev.Event) -> bool:
        if isinstance(item, ev.AgentStarted):
            self.agents[item.ident] = AgentLine(item.ident, item.agent, item.description, item.background, item.by,
                                                item.worktree)
            return True
        line = self.agents.get(getattr(item, "ident", ""))
        if line is None:
            return False
        if isinstance(item, ev.AgentUpdate):
            line.state, line.turns, line.cost_usd, line.waiting = item.state, item.turns, item.cost_usd, item.waiting
            line.tokens = item.input_tokens + item.output_tokens
            line.elapsed, line.seen_at = item.elapsed_s, time.monotonic()
        elif isinstance(item, ev.AgentEnded):
            line.state, line.turns, line.cost_usd, line.files = item.state, item.turns, item.cost_usd, item.files
            line.log.append(f"── ended: {item.state}" + (f" ({item.error})" if item.error else ""))
        elif isinstance(item, ev.AgentMerged):
            line.outcome = item.outcome
            line.log.append(f"── patch {item.outcome}" + (f": {', '.join(item.conflicts)}" if item.conflicts else ""))
        elif isinstance(item, ev.AgentRelay):
            self._follow(line, item.event)
            return False
        return True

    def _follow(self, line: AgentLine, event: ev.Event) -> None:
        """An agent's own event, as its follow view tells it: each call, its output (issue 47: only the first line
        of a result showed), its words, its questions and errors."""
        if isinstance(event, ev.ToolCallRequested):
            line.log.append(f"· {tool_title(event.tool, event.input)}")
        elif isinstance(event, ev.ToolOutput):
            text = line.partial.pop(event.id, "") + event.text
            rows = text.split("\n")
            if rows[-1]:
                line.partial[event.id] = rows[-1]
            self._output(line, event.id, rows[:-1])
        elif isinstance(event, ev.ToolCallFinished):
            live = event.id in line.shown
            self._output(line, event.id, [line.partial.pop(event.id, "")] if live else
                         event.output.strip("\n").splitlines())
            rows = [r for r in event.output.splitlines() if r.strip()]
            said = f"{len(rows)} line{'s' if len(rows) != 1 else ''} of output" if rows else "no output"
            line.log.append(f"  {'✗' if event.is_error else '✓'} {said}")
            line.shown.pop(event.id, None)
        elif isinstance(event, ev.AssistantMessage):
            texts = [b.get("text", "") for b in event.message.get("content", []) if b.get("type") == "text"]
            for text in texts:
                line.log.extend(f"> {row}" for row in text.strip().splitlines()[:20] if row.strip())
        elif isinstance(event, ev.PermissionRequest):
            line.log.append(f"? asks: may it run {tool_title(event.tool, event.input)}")
        elif isinstance(event, ev.ToolCallDenied):
            line.log.append(f"  ✗ denied ({event.by}): {clip(event.reason, 160)}")
        elif isinstance(event, ev.ErrorEvent):
            line.log.append(f"! {clip(event.message, 200)}")

    @staticmethod
    def _output(line: AgentLine, call: str, rows: list[str]) -> None:
        """Up to OUTPUT_LINES of a call's output into the log, then one line saying how many more there were."""
        shown = line.shown.get(call, 0)
        for row in rows:
            if not row.strip() and not shown:
                continue
            if shown < OUTPUT_LINES:
                line.log.append(f"  │ {clip(row, 200)}")
            elif shown == OUTPUT_LINES:
                line.log.append("  │ … (more output: the agent's session has it, `coder sessions show`)")
            shown += 1
        line.shown[call] = shown

    def live(self) -> list[AgentLine]:
        return [a for a in self.agents.values() if a.live]

    def status_costs(self) -> list[tuple[str, float]]:
        """(id, cost) of each running agent: the status bar's live cost per agent."""
        return [(a.ident, a.cost_usd) for a in self.live()]

    def panel(self, width: int) -> Text | None:
        """The panel's lines: one per running agent, and one for the patches waiting to be merged; None: hide."""
        live = self.live()
        waiting = [a for a in self.agents.values() if not a.live and a.worktree and a.files and not a.outcome]
        if not live and not waiting:
            return None
        text = Text()
        spin = SPINNER[int(time.monotonic() * 8) % len(SPINNER)]
        for n, line in enumerate(live):
            if n:
                text.append("\n")
            text.append(f"{spin} ", style="bold yellow")
            text.append(line.summary(width - 2), style="yellow" if line.waiting.startswith("your answer") else "")
        if waiting:
            if live:
                text.append("\n")
            ids = ", ".join(a.ident for a in waiting)
            text.append(f"✓ patches to merge or discard: {ids} (Ctrl+G, or /agents)", style="green")
        if live:
            text.append("  Ctrl+G: agents", style="dim")
        return text


class AgentsPanel(Static):
    DEFAULT_CSS = """
    AgentsPanel { height: auto; max-height: 6; padding: 0 1; background: $boost; display: none; }
    AgentsPanel.shown { display: block; }
    """

    def draw(self, text: Text | None) -> None:
        self.set_class(text is not None, "shown")
        if text is not None:
            self.update(text)


class AgentsScreen(ModalScreen[None]):
    """Every agent of the session: Up/Down to pick one, Enter follows it (its work as it happens), s stops it,
    m merges its patch (reviewed), d discards it, Esc closes."""

    DEFAULT_CSS = """
    AgentsScreen { align: center middle; }
    AgentsScreen > Vertical { width: 96%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    AgentsScreen OptionList { height: auto; max-height: 12; }
    AgentsScreen #follow { height: 1fr; border-top: solid $panel; }
    AgentsScreen #hint { color: $text-muted; }
    """
    BINDINGS = [Binding("s", "act('stop')", "stop"),
                Binding("m", "act('merge')", "merge"), Binding("d", "act('discard')", "discard")]

    def __init__(self, board: AgentBoard, act: Callable[[str, str], None]) -> None:
        super().__init__()
        self.board = board
        self.act = act  # act(action, ident): the app runs it on a worker and says the result
        self.followed: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Agents of this session", style="bold"))
            yield OptionList(id="agents")
            with VerticalScroll(id="follow"):
                yield Static(id="log")
            yield Static("Enter: follow · s: stop · m: merge its patch · d: discard it · Esc: close", id="hint")

    def on_mount(self) -> None:
        self.refresh_board()
        self.set_interval(0.5, self.refresh_board)
        self.query_one(OptionList).focus()

    def refresh_board(self) -> None:
        options = self.query_one(OptionList)
        keep = options.highlighted
        options.clear_options()
        width = max(self.size.width - 8, 40)
        agents = list(self.board.agents.values())
        options.add_options([Option(Text(a.summary(width)), id=a.ident) for a in agents] or
                            [Option("No agents in this session yet.", id="", disabled=True)])
        if agents:
            options.highlighted = min(keep or 0, len(agents) - 1)
            if self.followed is None:
                self.followed = agents[options.highlighted].ident
        self._draw_log()

    def _draw_log(self) -> None:
        line = self.board.agents.get(self.followed or "")
        log = self.query_one("#log", Static)
        if line is None:
            log.update("")
            return
        log.update(Text("\n".join(visible(row) for row in line.log) or "(nothing yet)"))
        self.query_one("#follow", VerticalScroll).scroll_end(animate=False)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self.followed = event.option.id
            self._draw_log()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.followed = event.option.id
            self._draw_log()

    def action_act(self, action: str) -> None:
        if self.followed:
            self.act(action, self.followed)

    def action_dismiss_none(self) -> None:
        """Esc or Ctrl+C (the app's keys hand them to its modal screens, coder/tui/keys.py)."""
        self.dismiss(None)


def agent_title(ident: str, board: AgentBoard) -> str:
    """How a question from agent `ident` is introduced."""
    line = board.agents.get(ident)
    return f"agent {ident}" + (f" ({line.agent}: {line.description})" if line is not None else "")
