"""Lines that fit their width (issue 24): a collapsed tool line and the status bar.

A terminal cuts a line at its last column: a collapsed tool line lost its duration and gave no sign that it was
cut, and at 80 columns the status bar lost cost, sandbox and branch. Both are now built for the width they get:
the parts that matter most stay whole and the rest is shortened with an ellipsis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len

MODEL_ROOM = 16  # the fewest cells the model gets before the bar takes its shorter forms
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def clip(text: str, width: int) -> str:
    """`text` in at most `width` cells, ending with … when cut."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    out = ""
    for ch in text:
        if cell_len(out + ch) > width - 1:
            break
        out += ch
    return out + "…"


def clip_left(text: str, width: int) -> str:
    """`text` in at most `width` cells, starting with … when cut (the end kept)."""
    if cell_len(text) <= width:
        return text
    return clip(text[::-1], width)[::-1]


def tool_line(call: str, result: str, took: str, width: int) -> str:
    """`call  result took` in `width` cells: the duration always whole, the result shortened first (down to a
    few words), then the call."""
    tail = f" {took}" if took else ""
    full = f"{call}  {result}{tail}" if result else f"{call}{tail}"
    if width <= 0 or cell_len(full) <= width:
        return full
    room = width - cell_len(tail)
    if result:
        keep_call = min(cell_len(call), max(room - 2 - 14, room // 2))
        call_part = clip(call, keep_call)
        result_part = clip(result, max(room - cell_len(call_part) - 2, 1))
        return f"{call_part}  {result_part}{tail}"
    return clip(call, room) + tail


@dataclass
class StatusParts:
    state: str
    model: str
    mode: str
    ctx_pct: float
    tokens: str
    cost: float
    sandbox: str
    branch: str
    folded: int = 0
    #: (id, cost so far) of each running subagent (issue 36): the live cost per agent
    agents: list[tuple[str, float]] = field(default_factory=list)


def agents_part(agents: list[tuple[str, float]], form: int) -> list[str]:
    """The running agents' costs: each one's in the long form, their count and sum in the short ones."""
    if not agents:
        return []
    if form == 0:
        return [" ".join(f"{ident} ${cost:.4f}" for ident, cost in agents)]
    return [f"{len(agents)} agent{'s' if len(agents) > 1 else ''} ${sum(c for _, c in agents):.2f}"]


def status_line(p: StatusParts, width: int) -> list[tuple[str, str]]:
    """(text, part) pieces of the status bar in `width` cells; part names the style the bar gives each. The
    long forms when they fit, then short forms (`ask`, `12.3k`, `bwrap`), then the model shortened: cost,
    sandbox and branch are never dropped."""
    sandbox_short = {"bubblewrap": "bwrap"}.get(p.sandbox, p.sandbox[:10])
    forms = [
        (f"mode {p.mode}", f"ctx {p.ctx_pct:.0f}%", f"{p.tokens} tok", f"${p.cost:.4f}", f"sandbox {p.sandbox[:24]}",
         p.branch, " │ "),
        (p.mode, f"ctx {p.ctx_pct:.0f}%", p.tokens, f"${p.cost:.2f}", sandbox_short, p.branch, " │ "),
        (p.mode, f"{p.ctx_pct:.0f}%", p.tokens, f"${p.cost:.2f}", sandbox_short, p.branch, "│"),
    ]
    for i, (mode, ctx, tokens, cost, sandbox, branch, sep) in enumerate(forms):
        fixed = [p.state, mode, ctx, tokens, cost, sandbox, clip(branch, 24 if i else 40)]
        folded = [f"{p.folded} old blocks folded" if i == 0 else f"{p.folded} folded"] if p.folded else []
        agents = agents_part(p.agents, i)
        rest = sum(cell_len(x) for x in fixed + folded + agents) + cell_len(sep) * (len(fixed) + len(folded) +
                                                                                     len(agents))
        room = width - rest
        if room >= min(cell_len(p.model), MODEL_ROOM) or i == len(forms) - 1:  # the model's tail shows
            if room < 12 and i == len(forms) - 1:  # still too narrow: the branch gives way, down to 8 cells
                give = min(12 - room, max(cell_len(fixed[6]) - 8, 0))
                fixed[6] = clip(fixed[6], cell_len(fixed[6]) - give)
                room += give
            model = clip_left(p.model, max(room, 4))  # a model's name ends with what tells it apart
            names = ["state", "model", "mode", "ctx", "tokens", "cost", *(["agents"] if agents else []), "sandbox",
                     "branch", "folded"]
            values = [fixed[0], model, *fixed[1:5], *agents, *fixed[5:], *folded]
            out: list[tuple[str, str]] = []
            for n, (name, value) in enumerate(zip(names, values, strict=False)):
                if n:
                    out.append((sep, "sep"))
                out.append((value, name))
            return out
    return []
