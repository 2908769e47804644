"""How the plain REPL shows a session: events as lines in the terminal's scrollback, streamed text as it comes,
Markdown and diffs rendered on a terminal and plain on a pipe, and the totals its status line reads."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.console import Console

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.evidence.record import Evidence, nudge_line
from coder.frontend.calls import failure, result_line, tool_title
from coder.frontend.compaction import compaction_line, compaction_started
from coder.repl.echo import EchoingOut
from coder.repl.live import LiveOutput
from coder.repl.markdown import MarkdownStream
from coder.repl.term import StreamWrap


class Printer:
    """Renders events as lines; streams text deltas as they come (scrollback, no redraws).

    Everything the REPL shows goes out through `line`, `markdown`, `diff` or the stream, and each passes its text
    through `visible` first: model text, commands, file names and outputs reach the terminal with their control
    sequences shown, not executed; the colours Rich adds afterwards are the only escape codes written."""

    def __init__(self, out: Any = None, color: bool | None = None) -> None:
        out = out or sys.stdout
        # on a terminal, the keys typed during a turn are kept on a line of their own below the output
        self.out: Any = EchoingOut(out) if is_tty(out) else out
        color = self.out.isatty() if color is None else color
        self.wrap = is_tty(out)  # on a terminal, long lines wrap at word boundaries at its width
        self.console = Console(file=self.out, highlight=False, no_color=not color, force_terminal=color,
                               soft_wrap=not self.wrap, markup=False)
        self.streaming = False
        self.stream: Any = None  # a StreamWrap while text streams
        self.totals = {"tokens": 0, "cost": 0.0, "ctx": 0, "window": 0}
        self.live = LiveOutput(lambda text: self.line(text, "dim"))  # a running command's lines, as they come
        self.warnings = 0  # stuck warnings this turn: the first is printed, the count at the turn's end

    def typed(self, text: str) -> None:
        """What the person has typed during the turn so far (the next message's start), shown below the output."""
        if isinstance(self.out, EchoingOut):
            self.out.show(text)

    def clear_typed(self) -> None:
        """The prompt is about to show the typed text itself: take the echo away."""
        if isinstance(self.out, EchoingOut):
            self.out.clear()

    def asking(self) -> AbstractContextManager[None]:
        """A question is asked through the terminal's reader: the typed line steps aside until it is answered."""
        return self.out.paused() if isinstance(self.out, EchoingOut) else nullcontext()

    def raw(self, text: str) -> None:
        """Escape sequences that draw nothing (a notification), past the typed line."""
        if isinstance(self.out, EchoingOut):
            self.out.raw(text)
        else:
            self.out.write(text)
            self.out.flush()

    def _end_stream(self) -> None:
        if self.streaming:
            if self.stream is not None:
                self.stream.flush()
                raw = not isinstance(self.stream, MarkdownStream)
                self.stream = None
                if raw:
                    self.out.write("\n")
            self.out.flush()
            self.streaming = False
        self.say_ended_jobs()

    def say_ended_jobs(self) -> None:
        """Say the background jobs that ended meanwhile (their threads only note them), once no text streams."""
        if self.streaming or not self.live.later:
            return
        for text in self.live.take_later():
            self.console.print(visible(text), style="cyan")

    def line(self, text: str, style: str = "") -> None:
        self._end_stream()
        self.console.print(visible(text), style=style or None)

    def markdown(self, text: str, style: str = "") -> None:
        from rich.markdown import Markdown  # lazy: markdown-it loads with the first answer, not at start-up

        self._end_stream()
        self.console.print(Markdown(visible(text), style=style or "none"))

    def diff(self, text: str) -> None:
        from rich.syntax import Syntax  # lazy: pygments' lexers load with the first diff

        self._end_stream()
        self.console.print(Syntax(visible(text).rstrip("\n"), "diff", theme="ansi_dark", background_color="default",
                                  word_wrap=False))

    def event(self, event: ev.Event, replay: bool = False) -> None:
        if isinstance(event, ev.TextDelta):
            if self.stream is None:

                # a terminal gets rendered Markdown, block by block (coder/repl/markdown.py); a pipe the raw text
                self.stream = MarkdownStream(self.console) if self.wrap else StreamWrap(self.out.write, 0)
            self.stream.feed(visible(event.text))  # per character: a sequence split across deltas is no escape
            self.out.flush()
            self.streaming = True
        elif isinstance(event, ev.SessionStart):
            if not replay:
                self.line(f"session {event.session_id} · {event.model} · mode {event.mode} · sandbox "
                          f"{event.sandbox}" + (" · resumed" if event.resumed else ""), "dim")
        elif isinstance(event, (ev.ReviewStage, ev.RetryWait, ev.UserMessage)) and not replay:
            from coder.repl.work import progress_line  # lazy: it loads the engine's plan types

            if line := progress_line(event):
                self.line("  " + line, "dim")
        elif isinstance(event, ev.UserMessage):
            self.line(f"> {event.text}", "bold")  # replayed
        elif isinstance(event, ev.AssistantMessage):
            if replay or not self.streaming:
                texts = [b.get("text", "") for b in event.message.get("content", []) if b.get("type") == "text"]
                if any(t.strip() for t in texts):
                    if self.wrap:
                        self.markdown("\n\n".join(texts))
                    else:
                        self.line("\n\n".join(texts))
            self._end_stream()
        elif isinstance(event, (ev.PlanProposed, ev.PlanDecision, ev.TodoUpdated)):
            from coder.repl.work import print_work  # lazy: as above (issue 19: plans and the task list)

            print_work(self, event, replay)
        elif isinstance(event, ev.ToolCallRequested):
            self.line(f"· {tool_title(event.tool, event.input)}", "cyan")
        elif isinstance(event, (ev.ToolOutput, ev.ToolCallApproved, ev.BackgroundEnded)):
            self.live.event(event)
        elif isinstance(event, ev.ToolCallDenied):
            self.line(f"  denied by {event.by}: {event.reason}", "red")
        elif isinstance(event, ev.ToolCallFinished):
            self.live.event(event)  # a last line without its newline
            failed = failure(event.is_error, event.data, event.output) is not None
            self.line(f"  {result_line(event.output, event.is_error, event.duration_s, event.data)}",
                      "red" if failed else "green")
            diff = str(event.data.get("diff", "") or "")
            if diff and not replay:
                self.diff(diff)
        elif isinstance(event, ev.UsageEvent):
            self.totals["tokens"] += event.input_tokens + event.output_tokens + event.cache_read_tokens + \
                event.cache_write_tokens
            self.totals.update(cost=event.total_cost_usd, ctx=event.context_tokens, window=event.context_window)
        elif isinstance(event, ev.CheckpointEvent):
            if not replay:
                self.line(f"  checkpoint {event.id} ({len(event.files_changed)} files; /undo)", "dim")
        elif isinstance(event, ev.CompactionStarted):  # a summary is a model call: said when it starts (issue 45)
            if started := compaction_started(event):
                self.line(f"  {started}", "dim")
        elif isinstance(event, ev.CompactionEvent):
            self.totals["ctx"] = event.tokens_after  # the next request starts from the compacted context
            self.line(f"  {compaction_line(event)}", "dim")
        elif isinstance(event, ev.ReviewEvent):
            self.line(f"review: {event.verdict} ({len(event.findings)} findings)",
                      "red" if event.verdict == "fail" else "dim")
        elif isinstance(event, ev.CommitEvent):
            self.line(f"committed {event.sha[:10]}: {event.message.splitlines()[0]}", "green")
        elif isinstance(event, ev.StuckEvent) and event.action != "nudge":
            self.warnings += 1
            if event.action == "stop" or self.warnings == 1:  # the scrollback cannot update a line: said once
                from coder.stuck.guard import stuck_warning  # start-up time: the detector's rules load with a warning

                self.line(stuck_warning(event), "yellow")
        elif isinstance(event, ev.LeftBehind):  # issue 43: what a command left that runs later, and what was done
            self.line(event.text, "yellow")
        elif isinstance(event, ev.ErrorEvent):
            self.line(("error: " if event.fatal else "note: ") + event.message, "red" if event.fatal else "yellow")
        elif isinstance(event, ev.VerifyNudge):  # issue 49: why the model goes on after it said it was done
            self.line(nudge_line(event.action), "yellow")
        elif isinstance(event, ev.TurnEvidence):  # issue 49
            record = Evidence.from_dict(event.record)
            self.line(record.line(), {"ok": "green", "error": "red"}.get(record.tone, "yellow"))
        elif isinstance(event, ev.TurnEnd):
            if self.warnings > 1:
                self.line(f"(the stuck warning came {self.warnings} times this turn)", "yellow")
            self.warnings = 0
            if event.reason != "done" and not replay:
                self.line(f"turn stopped: {event.reason}", "yellow")
            self._end_stream()

    def status(self, mode: str) -> str:
        t = self.totals
        pct = 100 * t["ctx"] / t["window"] if t["window"] else 0.0
        return f"ctx {pct:.0f}% · {t['tokens']:,} tokens · ${t['cost']:.4f} · mode {mode}"


def is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
