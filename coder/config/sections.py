"""The configuration, declared: `Config` and one dataclass per section. Each key is one `setting(...)`: its type
(the annotation), default, meaning, limits, environment variable and what a repository may do with it. Everything
else follows from these declarations: the checks of every layer (coder/config/check.py), the repository's filter
(coder/config/repository.py), the environment layer, and docs/config.md (coder/config/reference.py).

The sections that name programs coder starts (`[mcp]`, `[hooks]`, `[lsp]`) are coder/config/programs.py, and the
stuck detector's `[stuck]`, a table per pattern, is coder/config/stuck.py. Two sections live with their owners,
because those lie below coder.config in the layers or are read by it: `[sandbox]` (coder/sandbox/profile.py) and
`[providers.X]` / `[pricing.X]` (coder/models/settings.py).

Choices are `Literal`s listed narrowest first (a `Repo.LOWER` choice may only move left from a repository).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

from coder.base.schema import not_read
from coder.base.settings import Repo, SettingError, not_blank, section, setting
from coder.config.modes import MODES, Mode  # noqa: F401 - MODES: here with every other declaration
from coder.config.programs import HooksSettings, LspSettings, McpSettings
from coder.config.stuck import StuckSettings
from coder.edit.fileio import MAX_EDIT_BYTES
from coder.models.providers import PROVIDERS
from coder.models.server_blocks import domain_problem
from coder.models.settings import ProviderSettings, UserPrice
from coder.sandbox.profile import SandboxConfig

Stage = Literal["apply", "parse", "lint", "hygiene", "gaming", "tests", "llm"]
STAGES: tuple[Stage, ...] = get_args(Stage)
HookWhere = Literal["sandbox", "skip", "host"]


def _known_providers(tables: dict[str, dict[str, Any]]) -> None:
    """Each `[providers.NAME]` names a registered provider (coder/models/providers.py), and sets only the keys that
    provider reads: a table for a provider the session does not use is checked all the same."""
    for name, table in tables.items():
        spec = PROVIDERS.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(PROVIDERS), n=1, cutoff=0.6)
            raise SettingError(name, f"unknown provider ({f'did you mean {close[0]}? ' if close else ''}"
                               f"known: {', '.join(PROVIDERS)})")
        for key in table:
            if key not in spec.config_keys:
                raise SettingError(f"{name}.{key}", f"not a setting of the {name} provider (its keys: "
                                   f"{', '.join(sorted(spec.config_keys))})")


@dataclass
class InstructionsSettings:
    """`[instructions]`: the project's AGENTS.md / CLAUDE.md files."""

    max_bytes: int = setting(32_000, doc="Characters of project instructions read into the prompt; the rest is "
                             "cut with a note.", repo=Repo.ALWAYS, above=0)


@dataclass
class PermissionsSettings:
    """`[permissions]`: rules such as `bash(pytest*)`, `edit(src/**)`, `mcp__github__*` (docs/permissions.md)."""

    allow: list[str] = setting(factory=list, doc="Calls that run without asking.", repo=Repo.NEVER)
    ask: list[str] = setting(factory=list, doc="Calls that always ask, whatever the mode.", repo=Repo.ADD)
    deny: list[str] = setting(factory=list, doc="Calls that never run (wins over everything).", repo=Repo.ADD)


@dataclass
class ContextSettings:
    """`[context]`: what the model's context holds, and when it is compacted. Every request re-reads the whole
    context (cached reads still cost 10% of input), so a small working set is cheaper on every turn; but what a
    compaction takes out of the request the model no longer sees, and each summary is a wait. Issue 45 measures both
    (benchmarks/context.py: cost, and the recall of the facts the model goes on to use) and chose the defaults on
    that curve (docs/decisions/45-recall.md); `preset` names three points of it, and any key set beside it wins.
    compact_at is never more than 60% of the budget, so small local windows still compact before they overflow."""

    #: the named points of the curve (docs/long-sessions.md has each one's measured recall and cost); the field
    #: defaults below are `balanced`
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "quality": {"compact_at": 40_000, "recent_turns": 10, "calls_tokens": 5_000},
        "balanced": {},
        "cost": {"compact_at": 12_000, "recent_turns": 3, "calls_tokens": 1_500, "handoff": "code"},
    }

    preset: Literal["quality", "balanced", "cost"] = setting(
        "balanced", doc="A named set of the keys below: quality (compact late, keep more), balanced, or cost "
        "(compact early, keep less, the handoff written by code); a key set beside it wins.", repo=Repo.ALWAYS)
    budget: float = setting(0.8, doc="The most a request may carry: tokens, or a fraction (<= 1) of the model's "
                            "window.", repo=Repo.ALWAYS, above=0)
    compact_at: float = setting(20_000, doc="When to compact: tokens (at most 60% of the budget), or a fraction "
                                "(<= 1) of the budget.", repo=Repo.ALWAYS, above=0)
    target: float = setting(0.25, doc="After a compaction, the fraction of compact_at to get down to.",
                            repo=Repo.ALWAYS, above=0, at_most=0.99)
    recent_turns: int = setting(5, doc="Turns never masked and kept verbatim by a summary.", repo=Repo.ALWAYS,
                                at_least=0)
    # issue 33, round 2: masking before summaries (a summary's output is the dearest token of a session; a mask
    # costs nothing to write and only the masked span is written to the cache again); docs/decisions/33-context-cost.md
    mask: Literal["old", "stale"] = setting(
        "old", doc="At a compaction, mask every tool output older than the last turns (old) or only superseded ones "
        "(stale); the last failure, the last test run and the task list stay whole.", repo=Repo.ALWAYS)
    mask_target: float = setting(0.7, doc="No summary when masking alone gets the request to this fraction of "
                                 "compact_at or below.", repo=Repo.ALWAYS, above=0, at_most=0.99)
    min_gain: float = setting(0.1, doc="A compaction that frees less than this share is not repeated.",
                              repo=Repo.ALWAYS, at_least=0)
    clip_chars: int = setting(20_000, doc="Tool outputs longer than this keep their head and tail only.",
                              repo=Repo.ALWAYS, at_least=0)
    clip_head_lines: int = setting(100, doc="Lines kept from the head of a clipped output.", repo=Repo.ALWAYS,
                                   at_least=0)
    clip_tail_lines: int = setting(100, doc="Lines kept from the tail of a clipped output.", repo=Repo.ALWAYS,
                                   at_least=0)
    mask_min_chars: int = setting(300, doc="Older tool outputs longer than this are masked (kept on disk, "
                                  "re-readable).", repo=Repo.ALWAYS, at_least=0)
    hard_clip_chars: int = setting(8_000, doc="The clip of last resort when a request still does not fit.",
                                   repo=Repo.ALWAYS, at_least=0)
    summary_max_tokens: int = setting(2_500, doc="The longest summary a compaction writes (also what a compaction "
                                      "expects it to take: one is not worth it unless it frees more).",
                                      repo=Repo.ALWAYS, at_least=0)
    handoff: Literal["model", "code"] = setting(
        "model", doc="Who writes a compaction's handoff: model (code copies the facts and the list of calls, the "
        "model adds its account of the work: one summary call, a wait) or code (the facts, the calls and the "
        "model's last remarks only: no call, no wait, no account; `/compact` still asks the model).",
        repo=Repo.ALWAYS)
    calls_tokens: int = setting(3_000, doc="The most a summary's list of the calls it replaces takes: the newest with "
                                "their short outputs, older ones by command and output handle.", repo=Repo.ALWAYS,
                                at_least=0)
    instruction_max_chars: int = setting(16_000, doc="Characters of instructions carried through a compaction.",
                                         repo=Repo.ALWAYS, at_least=0)
    max_output_tokens: int = setting(8_192, doc="Tokens kept free for the answer.", repo=Repo.ALWAYS, at_least=0)
    count_with_provider: Literal["never", "threshold", "always"] = setting(
        "threshold", doc="Count tokens with the provider: never, only near a decision, or always.", repo=Repo.ALWAYS)
    chars_per_token: float = setting(3.5, doc="The estimate of characters per token between counts.",
                                     repo=Repo.ALWAYS, above=0)

    def budget_tokens(self, window: int) -> int:
        """The most a request may carry: the configured budget, never more than the window minus the answer."""
        ceiling = max(1024, window - self.max_output_tokens)
        value = int(self.budget * window) if self.budget <= 1 else int(self.budget)
        return min(value, ceiling)

    def compact_at_tokens(self, budget: int) -> int:
        if self.compact_at <= 1:
            return int(self.compact_at * budget)
        return min(int(self.compact_at), int(0.6 * budget))


@dataclass
class ReviewTests:
    """`[review.tests]`: the tests stage of the review."""

    command: str | None = setting(None, doc="The test command (default: detected from the project).",
                                  repo=Repo.TRUSTED, check=not_blank)
    enabled: bool | None = setting(None, doc="Run the tests stage (default: `[review] run_tests`).",
                                   repo=Repo.TRUSTED)
    timeout: float = setting(300.0, doc="Seconds the tests may take in all.", repo=Repo.TRUSTED, above=0)
    full_suite: bool | Literal["auto"] = setting("auto", doc="Also run the whole suite: true, false, or \"auto\" "
                                                 "(when no related test was found).", repo=Repo.TRUSTED)


@dataclass
class ReviewSettings:
    """`[review]`: the review a change gets before a commit (`--commit`, `/commit`, `coder review`)."""

    base: str | None = setting(None, doc="What the change is compared with (default HEAD).", repo=Repo.TRUSTED,
                               check=not_blank)
    stages: list[Stage] = setting(factory=lambda: list(STAGES), doc="The stages to run, of: "
                                  + ", ".join(STAGES) + ".", repo=Repo.TRUSTED)
    llm_on_fail: bool = setting(False, doc="Run the model's review even when an earlier stage failed.",
                                repo=Repo.TRUSTED)
    tests: ReviewTests = section(ReviewTests, "The tests stage.")
    lint: bool = setting(True, doc="Run the project's linter on the changed files.", repo=Repo.TRUSTED)
    llm_max_findings: int = setting(8, doc="The most findings the model's review reports.", repo=Repo.TRUSTED,
                                    at_least=0)
    max_binary_kb: int = setting(1024, doc="A binary file larger than this is a finding.", repo=Repo.TRUSTED,
                                 at_least=0)
    max_text_kb: int = setting(2048, doc="A text file larger than this is a finding.", repo=Repo.TRUSTED,
                               at_least=0)
    run_tests: bool = setting(True, doc="Run the tests stage.", repo=Repo.TRUSTED)
    max_fix_rounds: int = setting(2, doc="Rounds the agent gets to fix what the review found before `--commit` "
                                  "gives up.", repo=Repo.TRUSTED, at_least=0)


@dataclass
class VcsSettings:
    """`[vcs]`: commits and checkpoints."""

    hooks: HookWhere = setting("sandbox", doc="Where the repository's git hooks run when coder commits: in the "
                               "sandbox, skipped, or on the host.", repo=Repo.NEVER)
    keep_sessions: int = setting(20, doc="Sessions whose checkpoints are kept per repository.", repo=Repo.TRUSTED,
                                 at_least=1)


@dataclass
class EditSettings:
    """`[edit]`: the file-editing tools."""

    syntax_guard: bool = setting(True, doc="Refuse an edit that breaks the syntax of a file that parsed before.",
                                 repo=Repo.ALWAYS)
    max_bytes: int = setting(MAX_EDIT_BYTES, doc="The largest file the tools edit, in bytes.", repo=Repo.ALWAYS,
                             above=0)
    view_max_chars: int | None = setting(None, doc="Characters one `view` shows (default: the tool's own limit).",
                                         repo=Repo.ALWAYS, above=0)


@dataclass
class VerifySettings:
    """`[verify]`: the evidence a turn that changed code ends with (docs/verification.md)."""

    on_unverified: Literal["off", "nudge", "run"] = setting(
        "nudge", doc="When a turn would end with changed code and no passing verification after the last change: "
        "say nothing (off), tell the model once (nudge), or run the reviewer's selected tests in the sandbox and "
        "hand the model the result (run).", repo=Repo.LOWER, env="CODER_VERIFY")


@dataclass
class NotifySettings:
    """`[notifications]`: the app's and the REPL's notifications (a turn ended, a question waits)."""

    when: Literal["unfocused", "always", "never"] = setting("unfocused", doc="When to notify.", repo=Repo.NEVER)
    method: Literal["auto", "osc9", "osc777", "bell"] = setting("auto", doc="How: detected, OSC 9, OSC 777 or "
                                                                "the bell.", repo=Repo.NEVER)


def _search_domains(entries: list[str]) -> None:
    """The domain format the API takes (coder.models.server_blocks.domain_problem), checked when coder starts."""
    for entry in entries:
        problem = domain_problem(entry)
        if problem:
            raise ValueError(f"{entry!r} {problem}")


@dataclass
class WebSettings:
    """`[web]`: web search (issue 35; web_fetch follows `[sandbox]`'s domain lists). A repository may only turn
    search off, or lower its limits: where searches go and which sites count are the user's."""

    search: Literal["off", "on"] = setting("on", doc="Web search: on or off (`coder batch` runs its agents with it "
                                           "off unless the run says --web-search).", repo=Repo.SAFE, safe="off",
                                           env="CODER_WEB_SEARCH")
    search_max_uses: int = setting(5, doc="Searches the model may run in one request.", repo=Repo.LOWER, at_least=1)
    search_session_cap: int = setting(25, doc="Searches in a whole session; then the tool is withdrawn.",
                                      repo=Repo.LOWER, at_least=0)
    search_allowed_domains: list[str] = setting(factory=list, doc="Only results from these domains (the "
                                                "Anthropic route): `example.com`, `docs.example.com/guide/*`.",
                                                repo=Repo.NEVER, check=_search_domains)
    search_blocked_domains: list[str] = setting(factory=list, doc="Never results from these domains (the "
                                                "Anthropic route), written as search_allowed_domains.",
                                                repo=Repo.NEVER, check=_search_domains)
    search_backend: str = setting("", doc="Other routes: a search URL with {query} answering SearXNG-style JSON, "
                                  "fetched through the domain lists; empty: no web search there.", repo=Repo.NEVER)

    def check(self) -> None:
        if self.search_allowed_domains and self.search_blocked_domains:  # [web-search] the API refuses both
            raise SettingError("search_blocked_domains", "not together with search_allowed_domains (the API "
                               "takes one list or the other)")
        if self.search_backend and "{query}" not in self.search_backend:
            raise SettingError("search_backend", "needs {query} where the search words go")


@dataclass
class SkillsSettings:
    """`[skills]`: Agent Skills (folders with a SKILL.md)."""

    prompt_chars: int = setting(4000, doc="Characters of the system prompt given to the list of skills.",
                                repo=Repo.NEVER, at_least=0)


def _absolute_folder(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.strip() or not Path(value).expanduser().is_absolute():
        raise ValueError("expected an absolute path (or ~/...)")
    return value


@dataclass
class AgentsSettings:
    """`[agents]`: subagents that run in the background, each that writes in a tree of its own (issue 36)."""

    max_running: int = setting(4, doc="Background subagents running at once; more wait for a free slot.",
                               repo=Repo.LOWER, at_least=1)
    worktree_dir: str | None = setting(None, doc="The folder of the trees of subagents that write (absolute, or "
                                       "~/...; default: `worktrees` in coder's state folder).", repo=Repo.NEVER,
                                       check=_absolute_folder)
    review_stages: list[Stage] = setting(factory=lambda: ["apply", "parse", "lint", "hygiene", "gaming"],
                                         doc="The patch reviewer's stages a merge of an agent's patch runs (the "
                                         "mechanical ones by default: no model, no tests).", repo=Repo.NEVER)


@dataclass
class TelemetrySettings:
    """`[telemetry]`: OpenTelemetry export of traces and metrics (coder/telemetry), off unless the user turns it on;
    where it goes is the SDK's own `OTEL_*` variables. Never from a repository: where a session's data goes is the
    user's choice."""

    enabled: bool = setting(False, doc="Export the session's spans and metrics over OTLP.", repo=Repo.NEVER,
                            env="CODER_ENABLE_TELEMETRY")
    log_prompts: bool = setting(False, doc="Add the prompt's text to the turn's span (Claude Code's variable "
                                "turns it on too).", repo=Repo.NEVER, env="OTEL_LOG_USER_PROMPTS")
    log_tool_details: bool = setting(False, doc="Add each tool call's input (commands, paths; clipped) to its "
                                     "span.", repo=Repo.NEVER)


@dataclass
class Origin:
    """Which layer set a value: `built-in`, `user`, `repository`, `environment` or `flag`, with the file and line
    where there is one."""

    layer: str
    path: str = ""
    line: int = 0

    @property
    def where(self) -> str:
        """The file and line, or the layer: how an error message starts."""
        return (f"{self.path}:{self.line}" if self.line else self.path) if self.path else self.layer

    def __str__(self) -> str:
        return self.layer if self.where == self.layer else f"{self.layer} {self.where}"


@dataclass
class Config:
    """The whole configuration of a session, checked. Built once by `coder.config.layers.load_config`; nothing else
    reads a configuration file, the environment's CODER_* settings or a raw table."""

    model: str | None = setting(None, doc="The model: PROVIDER:NAME (anthropic:claude-sonnet-4-6, openai:NAME, "
                                "scripted:PATH).", repo=Repo.TRUSTED, env="CODER_MODEL", check=not_blank)
    max_turns: int = setting(100, doc="Model turns a task may take.", repo=Repo.LOWER, above=0,
                             env="CODER_MAX_TURNS")
    max_cost: float = setting(10.0, doc="US dollars a task may spend.", repo=Repo.LOWER, above=0,
                              env="CODER_MAX_COST")
    max_wall_time: float = setting(3600.0, doc="Seconds a task may take.", repo=Repo.LOWER, above=0)
    max_tokens: int = setting(8192, doc="Output tokens of one model answer.", repo=Repo.TRUSTED, above=0)
    permission_mode: Mode = setting("ask", doc="plan (read only), ask, auto-edit or auto.", repo=Repo.LOWER,
                                    env="CODER_PERMISSION_MODE")
    thinking_budget: int | None = setting(None, doc="Tokens the model may think before answering (0 or unset: "
                                          "no extended thinking).", repo=Repo.TRUSTED, at_least=0)
    instructions: InstructionsSettings = section(InstructionsSettings, "Project instructions.")
    permissions: PermissionsSettings = section(PermissionsSettings, "Permission rules.")
    sandbox: SandboxConfig = section(SandboxConfig, "The sandbox of shell commands.")
    context: ContextSettings = section(ContextSettings, "The context and its compaction.")
    edit: EditSettings = section(EditSettings, "The file-editing tools.")
    review: ReviewSettings = section(ReviewSettings, "The review before a commit.")
    vcs: VcsSettings = section(VcsSettings, "Commits and checkpoints.")
    hooks: HooksSettings = section(HooksSettings, "Your commands on session events.")
    mcp: McpSettings = section(McpSettings, "MCP servers.")
    lsp: LspSettings = section(LspSettings, "Language servers.")
    stuck: StuckSettings = section(StuckSettings, "The stuck detector.")
    verify: VerifySettings = section(VerifySettings, "The evidence a change ends with.")
    notifications: NotifySettings = section(NotifySettings, "Notifications.")
    skills: SkillsSettings = section(SkillsSettings, "Agent Skills.")
    telemetry: TelemetrySettings = section(TelemetrySettings, "OpenTelemetry export.")
    agents: AgentsSettings = section(AgentsSettings, "Subagents in the background.")
    web: WebSettings = section(WebSettings, "Web search.")
    providers: dict[str, ProviderSettings] = setting(factory=dict, doc="One table per provider: "
                                                     "[providers.anthropic], [providers.openai], ...",
                                                     repo=Repo.NEVER, check=_known_providers)
    pricing: dict[str, UserPrice] = setting(factory=dict, doc="Prices of models, [pricing.\"MODEL\"], in USD per "
                                            "million tokens.", repo=Repo.NEVER)

    # -- how this configuration came about (set by load_config; not settings) --------------------------------
    #: dotted key (`sandbox.network`) -> the layer that set it last
    provenance: dict[str, Origin] = not_read(factory=dict, repr=False, compare=False)
    #: one line per repository key that was not honoured, and why
    ignored: list[str] = not_read(factory=list, repr=False, compare=False)
    #: the files read, lowest layer first
    sources: list[Path] = not_read(factory=list, repr=False, compare=False)
    #: whether the workspace's own configuration (and what it defines) was trusted for this load
    trusted: bool = not_read(False, repr=False, compare=False)
    #: the repository's defining files as the trust check read them (what runs is what was fingerprinted)
    repo_files: dict[str, bytes] | None = not_read(None, repr=False, compare=False)
    #: MCP servers of the repository the user approved, name -> entry key (coder/trust/decisions.py)
    mcp_approved: dict[str, str] = not_read(factory=dict, repr=False, compare=False)
    #: the enabled Claude Code plugins' folders by component ("skills", "agents"): coder/ext/claude_settings.py
    plugin_dirs: dict[str, list[Path]] = not_read(factory=dict, repr=False, compare=False)
    #: a batch agent's configuration: what it may reach beyond its workspace came from the batch alone
    #: (coder/config/layers.py CODER_BATCH_REACH), and nothing adds MCP servers afterwards (a plugin's, .mcp.json)
    reach_pinned: bool = not_read(False, repr=False, compare=False)
    #: the repository's layer as written (before checks and filter): what its MCP servers were approved against
    repository_layer: dict[str, Any] = not_read(factory=dict, repr=False, compare=False)

    def origin(self, key: str, near: bool = False) -> Origin:
        """Where the value of dotted `key` came from: its own layer, for a table the layer of a value in it, or the
        layer that set the table around it as a whole. `near`: else the layer of a value beside it (an error about
        a key nobody wrote, such as a missing `command`, points at the table that lacks it)."""
        parts = key.split(".")
        for n in range(len(parts), 0, -1):
            prefix = ".".join(parts[:n])
            if prefix in self.provenance:
                return self.provenance[prefix]
            if n == len(parts) or near:
                found = next((o for k, o in self.provenance.items() if k.startswith(prefix + ".")), None)
                if found is not None:
                    return found
        return Origin("built-in")

    def set_by_repository(self, prefix: str) -> bool:
        """Whether the repository's config set anything under dotted `prefix` (an MCP server's table)."""
        return any(o.layer == "repository" for k, o in self.provenance.items()
                   if k == prefix or k.startswith(prefix + "."))

    def as_written(self, key: str) -> Any:
        """The value of dotted `key` as the repository's config wrote it (None when it did not): an approval is
        recorded against the entry as written (coder/trust/reader.py `server_key`)."""
        value: Any = self.repository_layer
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def provider(self, name: str) -> ProviderSettings:
        """`[providers.NAME]`, with its defaults when absent."""
        return self.providers.get(name) or ProviderSettings()
