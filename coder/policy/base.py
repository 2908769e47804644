"""The permission interface the engine uses. The rules engine behind it lives in this package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from coder.config.modes import MODES, Mode  # noqa: F401 - declared with the config key

if TYPE_CHECKING:
    from coder.tools.base import CallFacts

Action = Literal["allow", "ask", "deny"]


@dataclass
class Decision:
    action: Action
    reason: str = ""
    #: the rule that decided, e.g. "bash(git status*)", or "mode:auto"
    rule: str | None = None
    #: the narrowest rule that would allow this call, offered as "always allow"
    suggested_rule: str | None = None


@dataclass(frozen=True)
class Call:
    """One call as the rules see it: which rules cover it (`Rule.covers`) and what their patterns match."""

    tool: str
    permission: str
    #: a shell line: `bash(...)` rules cover it and match each simple command of it
    shell: bool = False
    #: writes files: `edit(...)` rules cover it
    writes: bool = False
    #: the subjects are file paths: a rule's pattern matches them
    files: bool = False


@dataclass
class PermissionAnswer:
    """A frontend's answer to an `ask`."""

    allow: bool
    #: None = this call only; "session" or "project" = remember `rule`
    remember: Literal["session", "project"] | None = None
    rule: str | None = None
    message: str = ""  # shown to the model on deny
    said: str = ""  # what the person typed with a denial ("No, and tell the model why"), also in `message`


class PermissionPolicy(Protocol):
    mode: Mode

    def decide(self, tool: str, permission: str, args: dict[str, Any], facts: CallFacts | None = None) -> Decision:
        """Decide one call of tool `tool`: `permission` is its class for this input (`Tool.permission_for`),
        `facts` what the tool says the call does (`Tool.facts`)."""
        ...

    def remember(self, answer: PermissionAnswer) -> None:
        """Store an "always allow" answer (narrowest rule) for the session or the project."""
        ...


@dataclass
class ModePolicy:
    """The minimal policy: decide by permission class and mode alone. The rules engine supersedes it."""

    mode: Mode = "ask"
    allowed: set[str] = field(default_factory=set)

    def decide(self, tool: str, permission: str, args: dict[str, Any], facts: CallFacts | None = None) -> Decision:
        if tool in self.allowed or permission == "read":
            return Decision("allow", rule=f"tool:{tool}" if tool in self.allowed else "class:read")
        if self.mode == "auto":
            return Decision("allow", rule="mode:auto")
        if self.mode == "plan":
            return Decision("deny", reason="plan mode is read-only", rule="mode:plan")
        if self.mode == "auto-edit" and permission == "write":
            return Decision("allow", rule="mode:auto-edit")
        return Decision("ask", reason=f"{tool} needs approval in {self.mode} mode", suggested_rule=tool)

    def remember(self, answer: PermissionAnswer) -> None:
        if answer.allow and answer.rule:
            self.allowed.add(answer.rule.split("(", 1)[0])
