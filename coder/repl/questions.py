"""What the plain REPL's two questions show and how their answers read: the trust question (what the repository
would run; not now, or trust) and a permission question (the call, its diff, the rules a lasting answer would
save). Who gets the terminal while one is asked (the key watcher steps aside, a question from another thread waits
for the turn) is the REPL's (coder/repl/repl.py); the keys' rules are coder/frontend/choices.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coder.base import events as ev
from coder.frontend.choices import (
    Question,
    permission_answer,
    permission_question,
    saved_note,
    trust_question,
    untrusted_means,
)
from coder.repl.printer import Printer
from coder.repl.reader import LineReader

#: where keys typed while a question appeared go: the type-ahead of the next message
Keep = Callable[[str], None]


def print_choices(printer: Printer, question: Question) -> None:
    """The lines on offer (the numbered choices, or a lasting grant's confirmation), the highlight marked."""
    for label, current in question.lines():
        printer.line(f"{'❯' if current else ' '} {label}", "bold" if current else "")


def ask_trust(printer: Printer, reader: LineReader, keep: Keep, request: Any, reason: str) -> bool:
    """The first-open question: what the repository would run, then not now (the default) or trust, which is
    remembered; typing cannot answer it (coder/frontend/choices.py)."""
    printer.line(f"This repository is not trusted ({reason}).", "bold yellow")
    printer.line(request.describe())
    printer.line(untrusted_means(request), "dim")
    question = trust_question()
    try:
        with printer.asking():
            print_choices(printer, question)
            answer = reader.ask_choice(question, keep, lambda q: print_choices(printer, q))
    except (KeyboardInterrupt, EOFError):
        answer = "not_now"
    printer.line(saved_note(answer, []) or "not trusted: coder ignores what this repository defines",
                 "green" if answer == "trust" else "dim")
    return answer == "trust"


def ask_permission(printer: Printer, reader: LineReader, keep: Keep, request: ev.PermissionRequest, opened: Any,
                   gone: Callable[[], bool] | None = None) -> Any:
    """A tool call's question: what it would do (a change as the diff of every file), then the numbered choices;
    Ctrl+C or the end of input deny and stop the turn, "tell the model why" asks for the reason."""
    from coder.commands.approval import approval  # lazy: the tools load with the session, not before the prompt

    view = approval(request.tool, request.input, request.suggested_rule,
                    (opened.workspace, opened.session.parts.tool_ctx.cwd))
    printer.line(f"Allow {view.title}?", "bold yellow")
    if len(view.files) > 1:
        printer.line(f"{len(view.files)} files: " + ", ".join(view.files))
    if view.diff:  # a change is shown as a diff of every file, not as the tool's input
        printer.diff(view.diff)
    else:
        printer.line(view.detail)
    if request.reason:
        printer.line(request.reason, "dim")
    question = permission_question(view.rules)
    print_choices(printer, question)
    try:
        answer = reader.ask_choice(question, keep, lambda q: print_choices(printer, q), gone)
    except (KeyboardInterrupt, EOFError):  # Ctrl+C or the end of input: deny and stop the turn
        answer = "stop"
    if answer == "stop":
        opened.session.interrupt()
    why = ""
    if answer == "reason":
        try:
            why = reader.ask("Why? (the model hears it) > ").strip()
        except (KeyboardInterrupt, EOFError):
            why = ""
    note = saved_note(answer, view.rules)
    if note:
        printer.line(note, "green")
    remember = getattr(opened.session.parts.policy, "remember", None)
    return permission_answer(answer, view.rules, remember, why)
