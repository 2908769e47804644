"""Typed events: the only thing frontends and the store see of a session.

Each event is a small dataclass with a `type` name. `to_dict` gives the JSON shape used by `--output-format
stream-json`, the store and trajectory exports; `event_from_dict` reads one back through the schema layer
(coder/base/schema.py), after migrating it from the version it was stored with (coder/base/event_versions.py).
Events marked `persist = False` (text deltas, a running command's output, progress) are never stored.

Adding an event: a dataclass here (a subagent's: coder/base/agent_events.py, gathered here) that subclasses
`Event` (coder/base/event_base.py) with its own `type` (it registers itself in `EVENT_TYPES`); its fields'
annotations are its schema, so a stored one is checked when it is read back. A new field needs a default (events
stored before it lack it). Changing what a field means, renaming or removing one,
or narrowing its type: raise the class's `schema_version` and add a migration from the old one
(coder/base/event_versions.py), so a session stored before the change still resumes (tests/store has sessions
stored by earlier versions of coder).

A neutral module at the bottom of the layers: the engine emits these events, and the frontends, the hooks
(coder/ext) and the stuck detector read them, none of them importing the engine for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from coder.base.agent_events import AGENT_LIVE as AGENT_LIVE
from coder.base.agent_events import AgentEnded as AgentEnded
from coder.base.agent_events import AgentMerged as AgentMerged
from coder.base.agent_events import AgentNews as AgentNews
from coder.base.agent_events import AgentRelay as AgentRelay
from coder.base.agent_events import AgentStarted as AgentStarted
from coder.base.agent_events import AgentUpdate as AgentUpdate
from coder.base.event_base import EVENT_TYPES as EVENT_TYPES
from coder.base.event_base import Event


@dataclass
class SessionStart(Event):
    type: ClassVar[str] = "session_start"
    session_id: str
    model: str
    workspace: str
    cwd: str
    mode: str
    sandbox: str
    git: bool
    resumed: bool = False
    version: str = ""


@dataclass
class UserMessage(Event):
    type: ClassVar[str] = "user_message"
    text: str
    #: files the message attached with `@path` (coder/engine/mentions.py): path, start, end, text, note
    attachments: list[dict[str, Any]] = field(default_factory=list)
    #: images the message carries (issue 35: a pasted file, `@shot.png`, `--image`, stream-json, ACP), each an
    #: ImageBlock's dict (media_type, base64 data, name, width, height): a resumed session sends them again
    images: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    persist: ClassVar[bool] = False
    text: str


@dataclass
class AssistantMessage(Event):
    type: ClassVar[str] = "assistant_message"
    message: dict[str, Any]
    stop_reason: str


@dataclass
class ToolCallRequested(Event):
    type: ClassVar[str] = "tool_call_requested"
    id: str
    tool: str
    input: dict[str, Any]


@dataclass
class PermissionRequest(Event):
    """The policy said `ask`; a frontend answers through the session's ask callback."""

    type: ClassVar[str] = "permission_request"
    id: str
    tool: str
    input: dict[str, Any]
    reason: str
    suggested_rule: str | None
    #: the subagent that asks (its id, e.g. "a1"; issue 36), empty when the session itself asks
    agent: str = ""


@dataclass
class ToolCallApproved(Event):
    type: ClassVar[str] = "tool_call_approved"
    id: str
    tool: str
    rule: str | None
    by: str  # "policy" | "user"
    #: the person's answer saved `rule`: "session" or "project" (None: this call only, or not the person's)
    remember: str | None = None


@dataclass
class ToolCallDenied(Event):
    type: ClassVar[str] = "tool_call_denied"
    id: str
    tool: str
    reason: str
    by: str  # "policy" | "user" | "hook"


@dataclass
class ToolCallFinished(Event):
    """The result the model saw. Denied and failed calls finish too (is_error), so history always pairs."""

    type: ClassVar[str] = "tool_call_finished"
    id: str
    tool: str
    input: dict[str, Any]
    output: str
    is_error: bool
    files_changed: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    #: images the result carries (a `view` of a PNG, an MCP image), as in UserMessage.images
    images: list[dict[str, Any]] = field(default_factory=list)


def call_failure(is_error: bool, data: dict[str, Any] | None = None, output: str = "") -> str | None:
    """Why a finished call failed, in a word or two (None when it did not): a shell command that exits non-zero or
    is interrupted is a successful *tool call* (is_error False) but a failed command, and must not read as ✓ in
    the app, the REPL or a transcript."""
    data = data or {}
    code = data.get("exit_code")
    if data.get("interrupted") or "was interrupted by the user" in output[-2000:]:
        return "interrupted"
    if data.get("timed_out"):
        return "timed out"
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"exit {code}"
    return "failed" if is_error else None


@dataclass
class ToolOutput(Event):
    """Output of a running tool call as it comes (a shell command); not persisted: the result carries it all."""

    type: ClassVar[str] = "tool_output"
    persist: ClassVar[bool] = False
    id: str
    text: str


@dataclass
class ReviewStage(Event):
    """One stage of a running review ended (progress for /review and /commit; the ReviewEvent has the result)."""

    type: ClassVar[str] = "review_stage"
    persist: ClassVar[bool] = False
    name: str
    status: str
    duration: float
    note: str = ""


@dataclass
class RetryWait(Event):
    """The model request failed in a way worth retrying; the provider waits `seconds` before retry `attempt`."""

    type: ClassVar[str] = "retry_wait"
    seconds: float
    attempt: int
    max_retries: int
    reason: str


@dataclass
class UsageEvent(Event):
    type: ClassVar[str] = "usage"
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    total_cost_usd: float
    context_tokens: int
    context_window: int
    cost_known: bool = True  # False: the model has no price, the costs above are 0 and mean nothing


@dataclass
class CompactionStarted(Event):
    """A compaction is writing a summary: a model call, seconds to a minute. Its CompactionEvent follows, with how
    long it took; frontends show both, so nobody waits on a summary without knowing (issue 45)."""

    type: ClassVar[str] = "compaction_started"
    persist: ClassVar[bool] = False
    messages: int  # how many messages the summary replaces
    tokens_before: int
    trigger: str = "auto"  # "manual": /compact
    #: "code": `[context] handoff = "code"`, no model call and no wait (frontends say nothing; PreCompact hooks run)
    by: str = "model"


@dataclass
class CompactionEvent(Event):
    type: ClassVar[str] = "compaction"
    kind: str
    tokens_before: int
    tokens_after: int
    data: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0  # wall time of the step (a summary's model call); 0 for the instant tiers


@dataclass
class CheckpointEvent(Event):
    type: ClassVar[str] = "checkpoint"
    id: str
    label: str
    files_changed: list[str] = field(default_factory=list)
    history_len: int = 0  # messages in the conversation when it was taken (what /rewind --conversation keeps)


@dataclass
class RewindEvent(Event):
    """The conversation was cut back to its first `history_len` messages (files are restored separately)."""

    type: ClassVar[str] = "rewind"
    checkpoint: str
    history_len: int


@dataclass
class ReviewEvent(Event):
    type: ClassVar[str] = "review"
    verdict: str
    findings: list[dict[str, Any]]
    round: int = 1


@dataclass
class CommitEvent(Event):
    type: ClassVar[str] = "commit"
    sha: str
    message: str
    branch: str | None = None


@dataclass
class NetworkAccess(Event):
    """The sandbox reached, or was refused, a host through coder's domain proxy (coder/netproxy): one per host
    and verdict per shell command. `source` says what decided (allowed_domains, preset python, answer session,
    denied_domains, unlisted, address)."""

    type: ClassVar[str] = "network_access"
    host: str
    port: int
    allowed: bool
    source: str
    pattern: str | None = None
    message: str = ""


@dataclass
class LeftBehind(Event):
    """What a sandboxed command left that would run later outside the sandbox, and what was done about it
    (coder/sandbox/leftovers.py, aftercheck.py): `items` of {path, kind, what, done}; `text` the note the model
    reads with the command's result."""

    type: ClassVar[str] = "left_behind"
    items: list[dict[str, str]] = field(default_factory=list)
    text: str = ""


@dataclass
class PlanProposed(PermissionRequest):
    """The model finished planning (`exit_plan`, issue 19): a question to the user like a permission request, so a
    frontend that knows nothing of plans still asks (allow = approve in ask mode); the app and the REPL show the
    plan and offer approve in auto-edit, approve in ask, or keep planning with feedback. Headless runs record it
    and ask nobody."""

    type: ClassVar[str] = "plan_proposed"
    plan: str = ""


@dataclass
class PlanDecision(Event):
    """What became of a proposed plan: approved (then `plan` is pinned and `mode` is the session's mode from
    now on), revise (keep planning; `feedback`), rejected, headless, or not_planning (the session was not in
    plan mode). `--plan-file` records an approved one with `source` "file"."""

    type: ClassVar[str] = "plan_decision"
    id: str
    outcome: str
    mode: str = ""
    feedback: str = ""
    plan: str = ""
    source: str = "user"


@dataclass
class TodoUpdated(Event):
    """The task list as the model last wrote it (the `todo` tool): items {id, text, status}."""

    type: ClassVar[str] = "todo"
    items: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    message: str
    fatal: bool = False


@dataclass
class StuckEvent(Event):
    """The stuck detector (coder/stuck) saw a pattern: `action` is what it did about it: "nudge" (`note` was
    appended to the result of tool call `tool_id`), "warn" (interactive: shown, the user may stop) or "stop"."""

    type: ClassVar[str] = "stuck"
    pattern: str
    action: str
    detail: str
    count: int
    step: int
    note: str = ""
    tool_id: str = ""


@dataclass
class BackgroundEnded(Event):
    """A command the user sent to the background ended (coder/tools/bash/jobs.py). Said from the job's thread, so
    not persisted; the model hears of it in its next `bash` or `bash_output` result."""

    type: ClassVar[str] = "background_ended"
    persist: ClassVar[bool] = False
    id: str
    command: str
    state: str
    exit_code: int | None = None


@dataclass
class HookContext(Event):
    """Text a hook added for the model (a Claude Code hook's `additionalContext` or plain output, a Stop hook's
    reason to go on): sent with the current user message, or as the next one (coder/engine/history.py)."""

    type: ClassVar[str] = "hook_context"
    event: str
    text: str


@dataclass
class ModeNotice(Event):
    """What the model was told of a switch of the permission mode (coder/engine/mode_notice.py): `text`, one line
    ahead of the next user message's text, for the mode the session is in then; a resume puts it there again."""

    type: ClassVar[str] = "mode_notice"
    mode: str
    text: str


@dataclass
class VerifyNudge(Event):
    """What coder told the model when its turn would have ended with changed code and no passing verification
    after the last change (coder/engine/verify.py, `[verify] on_unverified`): `text` went to the model as the next
    user message, once in that turn; `action` "nudge", or "run" when coder ran the reviewer's selected tests
    itself and `text` holds their result."""

    type: ClassVar[str] = "verify_nudge"
    action: str
    text: str


@dataclass
class TurnEvidence(Event):
    """The evidence a turn that changed code ends with (coder/evidence, issue 49): `state` verified, failed or
    unverified; `record` the whole record (the verifying runs after the last change with their counts, why this
    state, the final message's claim and whether the evidence supports it). Said just before TurnEnd."""

    type: ClassVar[str] = "evidence"
    state: str
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnEnd(Event):
    type: ClassVar[str] = "turn_end"
    turns: int
    reason: str


@dataclass
class SessionEnd(Event):
    type: ClassVar[str] = "session_end"
    reason: str
    turns: int
    cost_usd: float
    cost_known: bool = True
