"""`skill`: load an Agent Skill's instructions, or one of its files, when the model asks (issue 19).

The catalog (coder/ext/skills.py) is found once when the session opens and handed in as the `skills` service;
the system prompt lists only names and descriptions, so a body costs tokens only once it is loaded.
"""

from __future__ import annotations

from typing import Any

from coder.base.errors import ConfigError, ToolError
from coder.tools.base import CallFacts, Tool, ToolContext, ToolResult


class SkillTool(Tool):
    def __init__(self, contract: Any) -> None:
        self.contract = contract

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        catalog = ctx.services.get("skills")
        if catalog is None:
            raise ToolError("no skills are available in this session")
        name = str(args.get("name", "")).strip()
        skill = catalog.get(name)
        if skill is None:
            known = ", ".join(sorted(catalog.skills)) or "none are installed"
            raise ToolError(f"no skill named {name!r}; skills: {known}")
        wanted = str(args.get("file") or "").strip()
        if wanted:
            try:
                text = skill.read(wanted)
            except ConfigError as exc:
                raise ToolError(str(exc)) from None
            return ToolResult(text, data={"skill": skill.name, "file": wanted})
        files = skill.files()
        listing = "\n".join(f"- {f}" for f in files) if files else "(none)"
        text = (f"# Skill: {skill.name}\nFolder: {skill.folder}\n"
                "Read its files with the `skill` tool (`file`); run its scripts with `bash` from that folder.\n\n"
                f"{skill.body()}\n\n## Files beside SKILL.md\n{listing}")
        return ToolResult(text, data={"skill": skill.name, "source": skill.source, "files": len(files)})

    def facts(self, args: dict[str, Any]) -> CallFacts:
        name = str(args.get("name", ""))
        wanted = str(args.get("file") or "")
        title = f"skill {name}" + (f": {wanted}" if wanted else "")
        # a loaded body is instructions the model follows: never masked; a file it read may be, as any read
        return CallFacts(title, title, maskable=bool(wanted))
