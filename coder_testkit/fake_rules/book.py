"""The rule table: one `Rule` per documented request constraint, as data (what it checks, the real API's message,
where the rule is documented, how sure we are of the wording), each bound to the function that finds a violation.

A check returns the fields its message needs (a dict, possibly empty) when the request breaks the rule, else None;
the first broken rule of a book, in table order, is the refusal. Tables read top to bottom as the API validates:
the body's shape first (schema errors), then what the fields mean together, then the conversation.

`wording` says where the message text comes from:
  documented  the documentation quotes the message (or its fixed part)
  seen        copied from a real API answer quoted in public (the `seen` link)
  schema      the API's schema-validation form for this kind of field ("<path>: Input should be ...", "<path>:
              Extra inputs are not permitted": api/errors quotes it for block_binding), which the real API answers
              with for every field; seen verbatim for other fields of the same kind
  closest     no real answer found: written from the documented rule in the API's usual form
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

# Anthropic (platform.claude.com/docs/en/...)
_CLAUDE = "https://platform.claude.com/docs/en/"
MESSAGES_API = _CLAUDE + "api/messages"
ERRORS = _CLAUDE + "api/errors"
MODELS = _CLAUDE + "about-claude/models/overview"
VISION = _CLAUDE + "build-with-claude/vision"
PDF = _CLAUDE + "build-with-claude/pdf-support"
TOOLS = _CLAUDE + "agents-and-tools/tool-use/define-tools"
TOOL_CALLS = _CLAUDE + "agents-and-tools/tool-use/handle-tool-calls"
BASH_TOOL = _CLAUDE + "agents-and-tools/tool-use/bash-tool"
EDITOR_TOOL = _CLAUDE + "agents-and-tools/tool-use/text-editor-tool"
WEB_SEARCH = _CLAUDE + "agents-and-tools/tool-use/web-search-tool"
TOOL_SEARCH = _CLAUDE + "agents-and-tools/tool-use/tool-search-tool"
SERVER_TOOLS = _CLAUDE + "agents-and-tools/tool-use/server-tools"
THINKING = _CLAUDE + "build-with-claude/extended-thinking"
ADAPTIVE = _CLAUDE + "build-with-claude/adaptive-thinking"
THINKING_TROUBLE = _CLAUDE + "build-with-claude/thinking-troubleshooting"
EFFORT = _CLAUDE + "build-with-claude/effort"
CACHING = _CLAUDE + "build-with-claude/prompt-caching"
OPUS_5_5 = _CLAUDE + "models/opus-5-5/whats-new-opus-5-5"
SONNET_5_5 = _CLAUDE + "models/sonnet-5-5/whats-new-sonnet-5-5"
SONNET_5 = _CLAUDE + "models/sonnet-5/overview"
#: the Python SDK's request types, generated from the API's OpenAPI spec (anthropic 2.14: types/*_param.py)
ANTHROPIC_SDK = "https://github.com/anthropics/anthropic-sdk-python/tree/main/src/anthropic/types"

# OpenAI
CHAT_API = "https://platform.openai.com/docs/api-reference/chat/create"
FUNCTION_CALLING = "https://platform.openai.com/docs/guides/function-calling"
REASONING = "https://platform.openai.com/docs/guides/reasoning"
OPENAI_SDK = "https://github.com/openai/openai-python/blob/main/src/openai/types/chat/completion_create_params.py"
IMAGES_VISION = "https://developers.openai.com/api/docs/guides/images-vision"

WORDINGS = ("documented", "seen", "schema", "closest")

Found = dict[str, Any] | None
C = TypeVar("C")


@dataclass(frozen=True)
class Rule:
    """One documented constraint and the answer the real API gives when a request breaks it."""

    id: str  # stable name, "<area>.<what>"
    checks: str  # what a request must satisfy, in one line
    message: str  # the error message, with {fields} the check fills in
    source: str  # the documentation page (URL) that states the rule
    wording: str  # one of WORDINGS
    seen: str = ""  # where a `seen` message was observed (a public issue)
    status: int = 400
    error_type: str = "invalid_request_error"
    param: str | None = None  # OpenAI: the `param` of the error body ({fields} allowed)
    code: str | None = None  # OpenAI: the `code` of the error body

    def __post_init__(self) -> None:
        if self.wording not in WORDINGS or (self.wording == "seen") != bool(self.seen):
            raise ValueError(f"rule {self.id}: wording {self.wording!r} with seen={self.seen!r}")
        if not self.source.startswith("https://"):
            raise ValueError(f"rule {self.id}: the source must be a URL")


@dataclass(frozen=True)
class Refusal:
    """A rule broken by a request, with the error body's parts filled in."""

    rule: Rule
    message: str
    param: str | None

    @property
    def status(self) -> int:
        return self.rule.status

    @property
    def error_type(self) -> str:
        return self.rule.error_type

    @property
    def code(self) -> str | None:
        return self.rule.code


@dataclass
class Rules(Generic[C]):
    """An ordered table of rules over one kind of request context `C`."""

    entries: list[tuple[Rule, Callable[[C], Found]]] = field(default_factory=list)

    def rule(self, id: str, checks: str, message: str, source: str, wording: str, **extra: Any
             ) -> Callable[[Callable[[C], Found]], Callable[[C], Found]]:
        """Decorator: register the function as the check of a new rule, after those already in the table."""
        entry = Rule(id, checks, message, source, wording, **extra)

        def register(check: Callable[[C], Found]) -> Callable[[C], Found]:
            if any(r.id == id for r, _ in self.entries):
                raise ValueError(f"duplicate rule id {id}")
            self.entries.append((entry, check))
            return check
        return register

    def __add__(self, other: Rules[C]) -> Rules[C]:
        return Rules(self.entries + other.entries)

    def __iter__(self) -> Iterator[Rule]:
        return (r for r, _ in self.entries)

    def first(self, context: C) -> Refusal | None:
        """The first rule `context` breaks, in table order."""
        for entry, check in self.entries:
            fields = check(context)
            if fields is not None:
                param = entry.param.format(**fields) if entry.param else None
                return Refusal(entry, entry.message.format(**fields), param)
        return None
