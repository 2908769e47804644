"""`skill`: load an Agent Skill's instructions, or one of its files, when the model asks (issue 19).

The catalog (coder/ext/skills.py) is found once when the session opens and handed in as the `skills` service;
the system prompt lists only names and descriptions, so a body costs tokens only once it is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from coder.base.errors import ConfigError, ToolError
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params


@dataclass(frozen=True)
class SkillParams(Params):
    """tools/skill.json: a skill, and optionally one of its files."""

    name: str
    file: str | None = None


class SkillTool(Tool[SkillParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def run(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        catalog = ctx.services.get("skills")
        if catalog is None:
            raise ToolError("no skills are available in this session")
        name = params.name.strip()
        skill = catalog.get(name)
        if skill is None:
            known = ", ".join(sorted(catalog.skills)) or "none are installed"
            raise ToolError(f"no skill named {name!r}; skills: {known}")
        wanted = (params.file or "").strip()
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

    def facts(self, params: SkillParams) -> CallFacts:
        name = params.name
        wanted = params.file or ""
        title = f"skill {name}" + (f": {wanted}" if wanted else "")
        # a loaded body is instructions the model follows: never masked; a file it read may be, as any read
        return CallFacts(title, title, maskable=bool(wanted))
