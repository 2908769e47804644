"""`bash_output`: the model's way to a command the user sent to the background (coder/tools/bash/jobs.py): its
state and what it printed since the last look, clipped like any shell output (the whole text behind an
output:// handle); `kill` stops it. Reading is of class "read"; stopping is "execute", as running it was."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coder.base.errors import ToolError
from coder.store.outputs import clip_output
from coder.tools.base import CallFacts, PermissionClass, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.bash.tool import jobs_of
from coder.tools.params import Params


@dataclass(frozen=True)
class BashOutputParams(Params):
    """tools/bash_output.json: a job (none: list them), from the start or since the last look, or stop it."""

    id: str | None = None
    from_start: bool = False
    kill: bool = False

    @property
    def ident(self) -> str:
        return (self.id or "").strip()


class BashOutputTool(Tool[BashOutputParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, params: BashOutputParams, ctx: ToolContext) -> PermissionClass:
        return "execute" if params.kill else "read"

    def facts(self, params: BashOutputParams) -> CallFacts:
        what = f"stop {params.ident}" if params.kill else (params.ident or "list")
        return CallFacts(f"{self.contract.name}: {what}", what, maskable=self.contract.maskable)

    def run(self, params: BashOutputParams, ctx: ToolContext) -> ToolResult:
        jobs = jobs_of(ctx)
        ident = params.ident
        if not ident:
            return ToolResult(jobs.listing())
        job = jobs.jobs.get(ident)
        if job is None:
            known = ", ".join(jobs.jobs) or "none"
            raise ToolError(f"no background job {ident!r} in this session (jobs: {known})")
        if params.kill and job.status == "running":
            jobs.stop(job)
        new = jobs.read(job, from_start=params.from_start)
        head = f"[{job.id}: `{job.command}` {job.state()}]"
        if job.dropped:
            head += f"\n[its log keeps the first {job.size} bytes; {job.dropped} more were dropped]"
        body = new if new.strip() else "(nothing new)" if job.read_to else "(no output yet)"
        clipped = clip_output(f"{head}\n{body}", Path(ctx.state_dir))
        return ToolResult(clipped.text, data={"status": job.status, "exit_code": job.exit_code,
                                              "output_handle": clipped.handle})
