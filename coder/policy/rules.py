"""The rules engine behind the engine's PermissionPolicy: allow / ask / deny rules, modes, remembered answers.

Evaluation of one call:
0. A write whose real path (symlinks followed) leaves the workspace is denied.
1. `deny` rules: any matching part (one simple command of a compound line, one path of a patch, either name of a
   path: as written or resolved, see coder/policy/targets.py) denies.
2. Protected paths (coder/trust/protected.py, plus any git directory): a write by the editor or apply_patch asks, in
   every mode, auto included, and no allow rule or remembered answer skips that (plan mode: denied). The ask
   offers no "always allow" rule. Headless, an ask is a denial the model reads, with this reason.
3. `ask` rules: any matching part asks, whatever the mode.
4. Every part must then be allowed on its own: by an `allow` rule (config, flags, remembered answers), by the
   built-in read-only list (shell commands, in every mode), or by the mode:
   - plan: reads only; everything else is denied (the read-only shell list still runs);
   - ask: reads run, writes and commands ask;
   - auto-edit: reads and edits run, commands ask;
   - auto: everything the sandbox allows runs.
Headless sessions never block: the engine treats an unanswered ask as deny, and `--allow`/`--deny` pre-answer.

Remembered "always allow" answers store the narrowest rule that covers the call: the first words of the
command (`bash(npm test*)`), never the whole literal line, or the exact file for an edit. Project-wide answers go
to the user's state dir (`projects/<hash of the workspace's real path>/permissions.json`), not into the
repository: an allow rule is the user's to give, and a file in a cloned repository is somebody else's. A
repository's own `.coder/permissions.json` still counts for its `ask` and `deny` rules (they only narrow); its
`allow` rules are ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.atomic import write_json_atomic
from coder.base.errors import ConfigError
from coder.base.paths import state_dir
from coder.config.sections import PermissionsSettings
from coder.policy.base import MODES, Call, Decision, Mode, PermissionAnswer
from coder.policy.patterns import Rule, parse_rules
from coder.policy.readonly import is_read_only
from coder.policy.shellparse import SimpleCommand, split_command
from coder.policy.targets import Target, protection, resolve_target
from coder.tools.base import CallFacts
from coder.tools.registry import describe

PROJECT_FILE = ".coder/permissions.json"  # the repository's: ask / deny only


def remembered_rules_path(project_dir: Path) -> Path:
    """Where the user's "always, in this project" answers for `project_dir` live (outside the repository)."""
    key = hashlib.sha256(os.path.realpath(project_dir).encode()).hexdigest()[:24]
    return state_dir() / "projects" / key / "permissions.json"
_EXACT_ONLY = frozenset({"rm", "mv", "cp", "dd", "chmod", "chown", "curl", "wget", "sudo", "kill", "pkill",
                         "killall", "ssh", "scp", "rsync", "sh", "bash", "eval", "python", "python3", "node",
                         "find", "sed", "sort", "xargs", "env",
                         # options of these run programs or evaluate code (`jobs -x`, `rg --pre`, `printf -v`)
                         "jobs", "wait", "printf", "rg", "ag", "tree", "file", "date"})
_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9:_.-]*$")


def suggest_bash_rule(cmd: SimpleCommand) -> str:
    """The narrowest useful rule for one command: its name and up to two sub-command words, then `*`
    (`npm test*`, `git commit*`, `python -m pytest*`). Risky or computed commands keep their exact text."""
    words = cmd.words
    if not words or cmd.dynamic or cmd.assignments:
        return f"bash({cmd.text})"
    name, rest = words[0], words[1:]
    if name in ("python", "python3") and rest[:1] == ["-m"] and len(rest) > 1:
        return f"bash({name} -m {rest[1]}*)"
    if name in _EXACT_ONLY:
        return f"bash({cmd.text})"
    kept = [name]
    for word in rest[:2]:
        if not _SUBCOMMAND.match(word) or "." in word or "/" in word:
            break
        kept.append(word)
    return f"bash({' '.join(kept)}*)"


@dataclass
class RulePolicy:
    mode: Mode = "ask"
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    project_dir: Path | None = None
    #: where relative paths start (the session's working directory); default the project
    cwd: Path | None = None
    #: rules remembered for this session only
    session_allow: list[Rule] = field(default_factory=list)

    # ---- the protocol ------------------------------------------------------------------------------------

    def decide(self, tool: str, permission: str, args: dict[str, Any], facts: CallFacts | None = None) -> Decision:
        """`permission` is the class the tool gave this call (`Tool.permission_for`), `facts` what the tool says
        the call does (`Tool.facts`; asked from the registry by name when not given)."""
        facts = facts if facts is not None else describe(tool, args)
        if facts.shell is not None:
            return self._decide_shell(tool, facts.shell)
        return self._decide_generic(tool, permission, facts, [self._target(p) for p in facts.paths])

    def remember(self, answer: PermissionAnswer) -> None:
        if not answer.allow or not answer.rule:
            return
        rule = Rule.parse(answer.rule)
        if rule not in self.session_allow:
            self.session_allow.append(rule)
        if answer.remember == "project" and self.project_dir is not None:
            self._save_project_rule(str(rule))

    # ---- a shell (bash) ----------------------------------------------------------------------------------

    def _decide_shell(self, tool: str, command: str) -> Decision:
        if not command.strip():
            return Decision("allow", "no command (restart only)", rule="bash:restart")
        shell = Call(tool, "execute", shell=True)
        redirect = Call(tool, "write", writes=True, files=True)
        parsed = split_command(command)
        parts = parsed.parts or []
        allows = self.allow + self.session_allow
        for part in parts:
            rule = _first(self.deny, shell, part.text)
            if rule is not None:
                return Decision("deny", f"`{part.text}` matches the deny rule {rule}", rule=str(rule))
            for target in part.writes_files:  # `> .env` is an edit of .env
                rule = _first_any([r for r in self.deny if r.tool == "edit"], redirect, self._target(target).names)
                if rule is not None:
                    return Decision("deny", f"`{part.text}` writes {target}, which matches the deny rule {rule}",
                                    rule=str(rule))
        for part in parts:
            rule = _first(self.ask, shell, part.text)
            if rule is not None:
                return Decision("ask", f"`{part.text}` matches the ask rule {rule}", rule=str(rule),
                                suggested_rule=suggest_bash_rule(part))
        pending: list[SimpleCommand] = []
        for part in parts:
            if parsed.ok and is_read_only(part):
                continue
            if _first(allows, shell, part.text) is not None:
                continue
            pending.append(part)
        if not pending:
            return Decision("allow", "read-only or allowed by rules", rule="rules" if parts else "empty")
        commands = [p for p in pending if p.words != [">"]]
        named = list(dict.fromkeys(p.text for p in pending))  # a part named twice is said once
        shown = ", ".join(f"`{text}`" for text in named[:3]) + (" ..." if len(named) > 3 else "")
        if self.mode == "auto":
            return Decision("allow", rule="mode:auto")
        if self.mode == "plan":
            return Decision("deny", f"plan mode runs only read-only commands; not allowed: {shown}",
                            rule="mode:plan")
        why = "could not be parsed, so it runs only with approval" if not parsed.ok else \
            "needs approval" if len(named) == 1 else "need approval"
        # the rule offered is for a command; `> f` of a group's redirection is no command, and a rule made of it
        # (`bash(>*)`) would match nothing the user meant (issue 47): then "once" only
        suggested = suggest_bash_rule(commands[0]) if commands else None
        return Decision("ask", f"{shown} {why} in {self.mode} mode", suggested_rule=suggested)

    # ---- other tools -------------------------------------------------------------------------------------

    def _target(self, path: str) -> Target:
        return resolve_target(path, self.project_dir, self.cwd)

    def _decide_generic(self, tool: str, permission: str, facts: CallFacts, targets: list[Target]) -> Decision:
        subjects: list[Target | None] = list(targets) or [None]
        allows = self.allow + self.session_allow
        is_write = permission != "read" and (permission == "write" or facts.writes)
        call = Call(tool, permission, writes=is_write and facts.writes, files=bool(facts.paths))
        if call.writes and self.project_dir is not None:  # the tool writes these files: they stay inside
            for t in targets:
                if t.real is None:
                    return Decision("deny", f"{tool} on {t.written}: it resolves to {t.real_abs}, outside the "
                                    f"workspace {self.project_dir}; writes stay inside the workspace",
                                    rule="outside-workspace")
        for t in subjects:
            rule = _first_any(self.deny, call, _names(t))
            if rule is not None:
                return Decision("deny", f"{tool}{_on(t)} matches the deny rule {rule}", rule=str(rule))
        if is_write:
            why = [w for w in (protection(t, self.project_dir) for t in targets) if w]
            if why and self.mode == "plan":
                return Decision("deny", f"plan mode is read-only: {why[0]}", rule="mode:plan")
            if why:  # asked in every mode, whatever the allow rules say; no "always allow" is offered
                return Decision("ask", f"{'; '.join(why)}. Writing it always needs your approval, in every "
                                "permission mode", rule="protected")
        for t in subjects:
            rule = _first_any(self.ask, call, _names(t))
            if rule is not None:
                return Decision("ask", f"{tool}{_on(t)} matches the ask rule {rule}",
                                rule=str(rule), suggested_rule=self._suggest(call, t))
        if permission == "read":
            return Decision("allow", rule="class:read")
        # an allow rule must cover every name a file goes by: a rule for a link's name never lends itself to the
        # file behind it
        pending = [t for t in subjects if not all(_first(allows, call, n) is not None for n in _names(t))]
        if not pending:
            return Decision("allow", "allowed by rules", rule="rules")
        subject = pending[0]
        if self.mode == "auto" or (self.mode == "auto-edit" and is_write):
            return Decision("allow", rule=f"mode:{self.mode}")
        if self.mode == "plan":
            return Decision("deny", f"plan mode is read-only: {tool} ({permission}) does not run", rule="mode:plan")
        return Decision("ask", f"{tool}{_on(subject)} needs approval in {self.mode} mode",
                        suggested_rule=self._suggest(call, subject))

    def _suggest(self, call: Call, subject: Target | None) -> str | None:
        if subject is not None and len(subject.names) > 1:
            return None  # through a symlink: no one rule covers both names (see above); "once" only
        name = subject.written if subject is not None else None
        if name is not None and (call.writes or call.permission == "write"):
            return f"edit({name})"
        if name is not None and call.permission == "read":
            return f"read({name})"
        return call.tool
    # ---- project file ------------------------------------------------------------------------------------

    def _save_project_rule(self, rule: str) -> None:
        assert self.project_dir is not None
        path = remembered_rules_path(self.project_dir)
        data = load_project_file(path)
        data["workspace"] = str(self.project_dir)
        allow = data.setdefault("allow", [])
        if rule in allow:
            return
        allow.append(rule)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, data, indent=2)


def forget_project_rule(project_dir: Path, rule: str) -> bool:
    """Remove an "always, in this project" answer from the user's file for `project_dir` (`/permissions`);
    True when it was there."""
    path = remembered_rules_path(project_dir)
    data = load_project_file(path)
    allow = data.get("allow", [])
    if rule not in allow:
        return False
    allow.remove(rule)
    data["workspace"] = str(project_dir)  # type: ignore[assignment]
    write_json_atomic(path, data, indent=2)
    return True


def _names(target: Target | None) -> tuple[str | None, ...]:
    return (None,) if target is None else target.names


def _on(target: Target | None) -> str:
    if target is None:
        return ""
    return f" on {target.written}" + (f" (really {target.real})" if len(target.names) > 1 else "")


def _first_any(rules: list[Rule], call: Call, subjects: tuple[str | None, ...]) -> Rule | None:
    """The first rule that matches any of the names (deny and ask: one match is enough)."""
    for subject in subjects:
        rule = _first(rules, call, subject)
        if rule is not None:
            return rule
    return None


def _first(rules: list[Rule], call: Call, subject: str | None) -> Rule | None:
    """The first rule that covers `call` and matches `subject` (a command text, or a path of a call on files)."""
    for rule in rules:
        if not rule.covers(call):
            continue
        if rule.spec is None:
            return rule
        if subject is None:
            continue
        if call.shell:
            if rule.tool == "bash" and rule.matches_command(subject):
                return rule
        elif call.files or rule.tool in ("edit", "read"):
            if rule.matches_path(subject):
                return rule
    return None


def load_project_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); fix or delete it") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object with allow / ask / deny lists")
    return {k: list(v) for k, v in data.items() if k in ("allow", "ask", "deny") and isinstance(v, list)}


def policy_from_config(section: PermissionsSettings, mode: str, allow: list[str] | None = None,
                       deny: list[str] | None = None, project_dir: Path | None = None,
                       cwd: Path | None = None, claude: dict[str, list[str]] | None = None) -> RulePolicy:
    """Build the policy from `[permissions]` in config, the user's remembered project answers, the repository's
    `.coder/permissions.json` (ask and deny only), the --allow/--deny flags, and `claude`: Claude Code's rules
    already in coder's language (coder/ext/claude_settings.py: the user's allow, ask and deny, the repository's
    ask and deny). `cwd` is where the tools take relative paths from (default `project_dir`)."""
    if mode not in MODES:
        raise ConfigError(f"permission mode {mode!r} is not one of {', '.join(MODES)}")
    project = load_project_file(project_dir / PROJECT_FILE) if project_dir is not None else {}
    project["allow"] = load_project_file(remembered_rules_path(project_dir)).get("allow", []) \
        if project_dir is not None else []
    where = "[permissions]"
    claude = claude or {}
    return RulePolicy(
        mode=mode,  # type: ignore[arg-type]
        allow=parse_rules(list(allow or []) + section.allow + project.get("allow", []) + claude.get("allow", []),
                          where),
        ask=parse_rules(section.ask + project.get("ask", []) + claude.get("ask", []), where),
        deny=parse_rules(list(deny or []) + section.deny + project.get("deny", []) + claude.get("deny", []), where),
        project_dir=project_dir.resolve() if project_dir is not None else None,
        cwd=cwd.resolve() if cwd is not None else None,
    )
