"""`bash_output`: the model's way to a command the user sent to the background (coder/tools/bash_jobs.py): its
state and what it printed since the last look, clipped like any shell output (the whole text behind an
output:// handle); `kill` stops it. Reading is of class "read"; stopping is "execute", as running it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coder.base.errors import ToolError
from coder.store.outputs import clip_output
from coder.tools.base import CallFacts, PermissionClass, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.bash_tool import jobs_of


class BashOutputTool(Tool):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, args: dict[str, Any], ctx: ToolContext) -> PermissionClass:
        return "execute" if args.get("kill") is True else "read"

    def facts(self, args: dict[str, Any]) -> CallFacts:
        ident = str(args.get("id") or "").strip()
        what = f"stop {ident}" if args.get("kill") is True else (ident or "list")
        return CallFacts(f"{self.contract.name}: {what}", what, maskable=self.contract.maskable)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        jobs = jobs_of(ctx)
        ident = str(args.get("id") or "").strip()
        if not ident:
            return ToolResult(jobs.listing())
        job = jobs.jobs.get(ident)
        if job is None:
            known = ", ".join(jobs.jobs) or "none"
            raise ToolError(f"no background job {ident!r} in this session (jobs: {known})")
        if args.get("kill") is True and job.status == "running":
            jobs.stop(job)
        new = jobs.read(job, from_start=args.get("from_start") is True)
        head = f"[{job.id}: `{job.command}` {job.state()}]"
        if job.dropped:
            head += f"\n[its log keeps the first {job.size} bytes; {job.dropped} more were dropped]"
        body = new if new.strip() else "(nothing new)" if job.read_to else "(no output yet)"
        clipped = clip_output(f"{head}\n{body}", Path(ctx.state_dir))
        return ToolResult(clipped.text, data={"status": job.status, "exit_code": job.exit_code,
                                              "output_handle": clipped.handle})
