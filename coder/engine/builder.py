"""Assembles a Session from options and configuration: the composition root shared by every frontend.

Optional services (the rules policy, the tiered context manager, checkpoints, hooks) are imported here and only
here, so the loop in session.py stays free of them and each can be swapped in a test."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder import __version__
from coder.base import events as ev
from coder.base import paths
from coder.base.errors import UsageError
from coder.base.resources import template
from coder.config.layers import load_config
from coder.config.sections import Config
from coder.context.base import Pinned
from coder.context.instructions import discover
from coder.context.manager import TieredContext
from coder.engine.agents import Agents, install_agents
from coder.engine.history import rebuild
from coder.engine.leftovers import after_hooks
from coder.engine.mentions import Attached, attach
from coder.engine.network import network_hint, network_hooks
from coder.engine.session import Session
from coder.engine.session_parts import AskHandler, Limits, SessionParts, no_questions
from coder.engine.subagents import Parent
from coder.engine.verify import Verification
from coder.engine.work import install_work, open_work
from coder.evidence.commands import from_instructions
from coder.evidence.probe import TreeProbe
from coder.evidence.tracker import EvidenceTracker
from coder.ext.claude_hooks import ClaudeHookRunner
from coder.ext.claude_settings import ClaudeSettings, load_claude_settings
from coder.ext.custom_tools import load_custom_tools
from coder.ext.session_hooks import hooks_from_config
from coder.fs.beneath import read_beneath
from coder.host import TimeoutExpired, register_workspace
from coder.lsp.hook import install as install_language_servers
from coder.lsp.service import check_settings
from coder.models.providers import key_variables
from coder.models.registry import create_provider
from coder.models.types import ImageBlock
from coder.policy.rules import policy_from_config
from coder.sandbox.check import check_sandbox
from coder.store.db import SessionStore, new_session_id
from coder.stuck.guard import StuckGuard
from coder.telemetry.start import start_telemetry
from coder.tools.base import ToolContext
from coder.tools.registry import builtin_tools
from coder.tools.tool_search_tool import arrange
from coder.trust import decisions as trust
from coder.vcs.checkpoints import Checkpoints, default_keep, prune_sessions
from coder.vcs.repo import Repo, VcsError


@dataclass
class SessionOptions:
    cwd: Path
    model: str | None = None
    permission_mode: str | None = None
    max_turns: int | None = None
    max_cost: float | None = None
    max_wall_time: float | None = None
    resume: str | None = None
    continue_last: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    no_sandbox: bool = False
    #: True: trust the workspace for this session (`--trust`); False: never (`--no-trust`, batch runs);
    #: None: the user's stored decision, or their answer when the frontend can ask
    trust: bool | None = None
    #: False: no undo snapshots (`coder run --no-checkpoints`: a throwaway clone such as a batch workspace)
    checkpoints: bool = True
    #: `--net-allow`, `--net-deny`, `--net-preset`: added to `[sandbox]`'s lists (coder/netproxy)
    allow_domains: list[str] = field(default_factory=list)
    deny_domains: list[str] = field(default_factory=list)
    network_presets: list[str] = field(default_factory=list)


#: asks the user whether to trust a workspace (True = trust and remember); frontends that cannot ask pass None
TrustAsker = Callable[[Any, str], bool]


@dataclass
class Opened:
    session: Session
    store: SessionStore
    config: Config
    workspace: Path
    is_git: bool
    resumed: bool
    #: the session's subagents (issue 36); None when it has no tool that starts them
    agents: Agents | None = None

    def attach(self, text: str, images: Sequence[ImageBlock] = (), *, dropped: bool = True) -> Attached:
        """What the person attached to the message `text` they typed, dropped or pasted (`@path`, image paths,
        and `images` given another way): what a frontend passes to `Session.send` with it. Only the person's
        words go through here (coder/engine/mentions.py `attach`, which says what `dropped` is)."""
        cwd = self.session.parts.tool_ctx.cwd
        return attach(text, self.workspace, Path(cwd) if cwd else None, images, dropped=dropped)

    def finish(self, reason: str) -> bool:
        """Close the session and store how it ended; a session that never got a message is deleted with its
        checkpoints (issue 24: an app opened and closed without a word is not a conversation to list or resume).
        True when the session is kept."""
        self.session.close(reason)
        self.store.set_status(self.session.id, reason)
        kept = not self.store.discard_if_unused(self.session.id)
        checkpointer = self.session.parts.checkpointer
        if not kept and checkpointer is not None:
            try:
                checkpointer.delete_all()
            except Exception:  # noqa: BLE001 - its refs are pruned with old sessions anyway
                pass
        self.store.close()
        return kept


def git_repo(cwd: Path) -> Repo | None:
    """The repository `cwd` is in (its work tree is `cwd` or a folder above it: `Repo.find`), None when there is
    none or it cannot be used (a planted git dir: the session then runs in `cwd` without git). Opened once per
    session: checkpoints, review, commits and agents' trees share it."""
    try:
        return Repo.find(cwd)
    except (OSError, TimeoutExpired, VcsError):
        return None


def git_root(cwd: Path) -> Path | None:
    """The top of the work tree `cwd` is in (`git_repo`), None outside a usable repository."""
    repo = git_repo(cwd)
    return repo.root if repo is not None else None


def config_flags(options: SessionOptions) -> dict[str, Any]:
    """The command line's layer of the configuration (None: not given; the domain lists add to the files')."""
    return {"model": options.model, "permission_mode": options.permission_mode, "max_turns": options.max_turns,
            "max_cost": options.max_cost, "max_wall_time": options.max_wall_time,
            "sandbox": {"enabled": False if options.no_sandbox else None, "allowed_domains": options.allow_domains,
                        "denied_domains": options.deny_domains, "network_presets": options.network_presets}}


def decide_trust(workspace: Path, choice: bool | None, ask_trust: TrustAsker | None) -> tuple[bool, Any, str]:
    """(trusted, what the repository defines, why) for a session in `workspace`; see coder/trust/decisions.py."""
    request = trust.inspect(workspace)
    if choice is not None:
        if choice and not request.trustable:
            raise UsageError(f"--trust: {workspace} cannot be trusted as it is: " + "; ".join(request.problems))
        return choice, request, "--trust" if choice else "--no-trust"
    state = trust.status(request)
    if state.trusted:
        return True, request, state.reason
    if request.wants_anything and request.trustable and ask_trust is not None and ask_trust(request, state.reason):
        trust.grant(request)
        return True, request, "trusted now"
    return False, request, state.reason


def trust_notes(config: Config, request: Any, why: str) -> list[str]:
    """What the session says once about trust: what was ignored, and how to change that."""
    notes = []
    if not config.trusted and request.wants_anything:
        what = "; ".join(w.line() for w in request.wanted[:8]) + ("; ..." if len(request.wanted) > 8 else "")
        notes.append(f"this workspace is not trusted ({why}), so coder ignores what it defines: {what}. "
                     "Check those files, then `coder trust` (or --trust for one run) to use them.")
    ignored = [line for line in config.ignored if "the workspace is not trusted" not in line]
    if ignored:
        notes.append("repository settings ignored: " + "; ".join(ignored))
    notes.extend(f"trust: {problem}" for problem in request.problems)
    return notes


def open_session(options: SessionOptions, on_event: Callable[[ev.Event], None],
                 ask: AskHandler = no_questions, ask_trust: TrustAsker | None = None) -> Opened:
    """Open a new or resumed session. Raises CoderError subclasses for every user mistake.

    `ask_trust(request, reason)` is called when the workspace defines things that run (servers, hooks, tools)
    and the user has not trusted it (or it changed since): interactive frontends show the request and answer."""
    cwd = options.cwd.expanduser().resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {options.cwd}: not a directory.")
    register_workspace(cwd)  # before the first host process: none may come from there (coder/host)
    repo = git_repo(cwd)
    workspace = repo.root if repo is not None else cwd
    register_workspace(workspace)
    trusted, request, why = decide_trust(workspace, options.trust, ask_trust)
    config = load_config(workspace, config_flags(options), trusted=trusted, repo_files=request.files)
    # trusted means the fingerprint of these very bytes matched (or --trust): their servers are the approved ones
    config.mcp_approved = request.servers if trusted else {}
    check_settings(config)  # a new [lsp.servers.X] without a command is a ConfigError now, not at the first edit
    trust.remember_decision(workspace, trusted)
    # what only needs the config is checked before a session is stored, so a mistake leaves no empty session
    claude = load_claude_settings(workspace, trusted, request.files)  # Claude Code's settings (issue 37)
    policy = policy_from_config(config.permissions, config.permission_mode, options.allow, options.deny, workspace,
                                cwd, claude=claude.permissions())
    plugin_servers = {} if config.reach_pinned else claude.plugin_servers()  # a batch agent's are the batch's
    for name, server in plugin_servers.items():  # enabled plugins' MCP servers, the user's names first
        config.mcp.servers.setdefault(name, server)
    config.plugin_dirs = {kind: claude.plugin_folders(kind) for kind in ("skills", "agents")}

    store = SessionStore(paths.sessions_db())
    row = None
    if options.resume:
        row = store.session(options.resume)
        if row.workspace != str(workspace):
            raise UsageError(f"session {row.id} belongs to {row.workspace}, not {workspace}: resume it from there "
                             f"(or with --cwd {row.workspace}).")
    elif options.continue_last:
        row = store.latest(str(workspace))
        if row is None:
            raise UsageError(f"--continue: no earlier session in {workspace}.")
    restored = rebuild(store.stored(row.id)) if row else None

    provider = create_provider(options.model or (row.model if row else None) or config.model, config.providers,
                               config.pricing)
    session_id = row.id if row else new_session_id()
    if row is None:
        store.create_session(session_id, str(workspace), str(cwd), provider.spec)
    else:
        store.set_status(session_id, "running")
    try:
        stored = StoredSession(options, config, store, row, restored, provider, session_id, workspace, cwd, repo,
                               policy, trust_notes(config, request, why) + claude.notes, claude)
        return _assemble(stored, on_event, ask)
    except BaseException:
        store.set_status(session_id, "failed to start")
        raise


@dataclass
class StoredSession:
    """What `open_session` settled before the session's parts are built: the checked configuration, the stored
    row (None for a new session) and the history rebuilt from it, the provider and the policy. One object
    instead of a dozen positional parameters of which several share a type (three paths, two `Any`)."""

    options: SessionOptions
    config: Config
    store: SessionStore
    row: Any  # the stored session being resumed, or None
    restored: Any  # the history rebuilt from its events, or None
    provider: Any
    session_id: str
    workspace: Path
    cwd: Path
    repo: Repo | None  # the repository, None outside one
    policy: Any
    notes: list[str] = field(default_factory=list)  # said once as the session opens (trust)
    claude: ClaudeSettings = field(default_factory=ClaudeSettings)  # Claude Code's settings: hooks and rules


def _assemble(stored: StoredSession, on_event: Callable[[ev.Event], None], ask: AskHandler) -> Opened:
    """The session's parts, once it is stored (events from here on are persisted)."""
    options, config, store, row, provider = stored.options, stored.config, stored.store, stored.row, stored.provider
    session_id, workspace, cwd, repo, policy = (stored.session_id, stored.workspace, stored.cwd, stored.repo,
                                                stored.policy)

    telemetry = start_telemetry(config.telemetry)  # None unless the user turned OpenTelemetry export on

    def record(event: ev.Event) -> None:
        if event.persist:
            store.append(session_id, event)
        on_event(event)
        if telemetry is not None:
            telemetry.observe(event)

    def note(message: str) -> None:
        record(ev.ErrorEvent(message))

    mode = config.permission_mode
    sandbox_state = sandbox_status(config)
    record(ev.SessionStart(session_id, provider.spec, str(workspace), str(cwd), mode, sandbox_state, repo is not None,
                           resumed=row is not None, version=__version__))
    if repo is None:
        note("not a git repository: checkpoints, /undo and commits are off")
    for line in stored.notes:
        note(line)
    instructions = discover(workspace, cwd, config.instructions.max_bytes)
    if instructions.truncated:
        note(f"project instructions were cut at {config.instructions.max_bytes} characters")


    state = paths.session_dir(session_id)
    state.mkdir(parents=True, exist_ok=True)
    tool_ctx = ToolContext(workspace, cwd, session_id, threading.Event(), state, config)

    tool_ctx.services["net_hooks"] = network_hooks(record, ask, workspace)  # domain questions and events
    tool_ctx.services["after_hooks"] = after_hooks(record, ask)  # what a command left that runs later
    install_language_servers(tool_ctx.services)  # diagnostics after edits, code_search navigation (issue 20)
    checkpointer = None
    if repo is not None and options.checkpoints:

        try:
            checkpointer = Checkpoints(repo, session_id)  # takes the baseline: the first turn is undoable

            checkpointer.prune(default_keep())
            prune_sessions(repo, config.vcs.keep_sessions, current=session_id)
        except VcsError as exc:
            note(f"checkpoints are off for this session ({str(exc).splitlines()[0][:200]}); /undo will not work")
    if sandbox_state.startswith("unavailable"):
        note(f"the sandbox is {sandbox_state}: shell commands will be refused. `coder doctor` says how to fix "
             "it; --no-sandbox runs them unsandboxed.")

    work = open_work(workspace, config, store.stored(session_id) if row else None, note)
    tools = session_tools(config, workspace, note, provider.spec, mode)  # plan mode: exit_plan whole
    claude_hooks = ClaudeHookRunner(stored.claude.hooks, workspace, cwd, config.sandbox, session_id,
                                    lambda: policy.mode, note)
    parts = SessionParts(
        session_id=session_id, provider=provider, tools=tools,
        policy=policy,
        context=TieredContext(provider, config.context, state, cancel=tool_ctx.cancel), tool_ctx=tool_ctx,
        system_prompt=render_system_prompt(workspace, cwd, repo is not None, sandbox_state, instructions.text,
                                           network_hint(config.sandbox)) + work.prompt,
        pinned=Pinned(instructions=instructions.text, **work.pins),
        limits=Limits(config.max_turns, config.max_cost, config.max_wall_time),
        record=record, ask=ask, checkpointer=checkpointer, repo=repo,
        hooks=hooks_from_config(config, workspace, session_id, note, claude_hooks, provider.spec),
        max_tokens=config.max_tokens, thinking_budget=config.thinking_budget,
        stuck=StuckGuard.from_config(config.stuck, headless=ask is no_questions),  # issue 22
    )
    parts.evidence = evidence_for(config, workspace, repo, instructions.text, parts.tools, state)
    install_work(tool_ctx.services, record, ask, policy, parts.pinned, work.skills, parts.tools)
    # a tool that starts agents needs their definitions: read here, once (the repository's only when trusted)
    agents = None
    if any(tool.contract.spawns_agents for tool in parts.tools.values()):
        agents = install_agents(Parent(session_id, provider, config, store, tool_ctx, policy, parts.hooks, ask=ask,
                                       relay=on_event, record=record, sandbox=sandbox_state, git=repo is not None),
                                repo, checkpointer)
        parts.news = agents.news
        parts.on_close.append(agents.close)
    session = Session(parts, stored.restored)
    if agents is not None:
        agents.attach(session)
    session.started("resume" if row is not None else "startup")
    return Opened(session, store, config, workspace, repo is not None, row is not None, agents)


def evidence_for(config: Config, workspace: Path, repo: Repo | None, instructions: str, tools: dict[str, Any],
                 state: Path) -> Verification:
    """The session's evidence (issue 49): shell-made changes seen through a tree probe (in a git repository), the
    project's test commands from its instructions and `[review.tests] command`, test files read beneath the
    workspace."""
    project = from_instructions(instructions) + ([config.review.tests.command] if config.review.tests.command
                                                 else [])

    def read(rel: str) -> str | None:
        data = read_beneath(workspace, rel, 256 * 1024)
        return data.decode("utf-8", "replace") if data is not None else None

    probe = TreeProbe(repo, state) if repo is not None else None
    tracker = EvidenceTracker(probe, read, project, tools, str(workspace))
    return Verification(tracker, config, workspace, repo)


def session_tools(config: Config, workspace: Path, note: Callable[[str], None], model: str = "",
                  mode: str = "") -> dict[str, Any]:
    """Built-in tools (arranged for the model's route: its provider's prefix, and for the permission mode the
    session opens in), then the user's custom tools, then MCP servers' tools (deferred: loaded on demand), each
    told the session's config and model (web search declares itself by both)."""
    # start-up time: coder.ext.mcp_tools brings asyncio
    from coder.ext.mcp_tools import load_mcp_tools

    tools: dict[str, Any] = builtin_tools(route=model.partition(":")[0], mode=mode)
    tools.update(load_custom_tools(workspace, set(tools), config.trusted, note, config.repo_files))
    tools.update(load_mcp_tools(config, workspace, note))
    for tool in tools.values():
        tool.configure(config, model)
    return arrange(tools)


def sandbox_status(config: Config) -> str:
    if not config.sandbox.enabled:
        return "off (--no-sandbox)"

    result = check_sandbox()
    return "bubblewrap" if result.ok else f"unavailable: {result.detail}"


#: what prompts/system.md is filled with (checked when it is loaded: coder/base/resources.py)
SYSTEM_PROMPT_VARIABLES = ("workspace", "cwd", "date", "git_state", "sandbox_state", "sandbox_hint", "instructions")


def render_system_prompt(workspace: Path, cwd: Path, is_git: bool, sandbox_state: str, instructions: str,
                         network: str = "") -> str:
    git_state = "a git repository; coder checkpoints the tree after every turn" if is_git else \
        "not a git repository: checkpoints and commits are off"
    hint = ("the network is off, the file system is read-only outside the workspace and /tmp, and secrets are "
            "not in the environment." if sandbox_state == "bubblewrap" else f"state: {sandbox_state}.")
    if network and sandbox_state == "bubblewrap":
        hint = hint.replace("the network is off", network)
    section = f"\n# Project instructions (AGENTS.md)\n{instructions}\n" if instructions else ""
    return template("system.md", SYSTEM_PROMPT_VARIABLES).render(
        workspace=str(workspace), cwd=str(cwd), date=datetime.date.today().isoformat(), git_state=git_state,
        sandbox_state=sandbox_state, sandbox_hint=hint, instructions=section,
    )


def environment_keys() -> dict[str, bool]:
    """Which API keys are present (never their values): each registered provider's key variables."""
    return key_variables()
