"""`/permissions`: the "always" answers a person gave, listed and taken back (issue 24).

An "always allow" given by mistake (a key typed ahead once answered a prompt) should not last for ever without a
way to see it. The session's answers live in the policy (`session_allow`); the project's in the user's state dir
(coder/policy/rules.py `remembered_rules_path`), loaded into the policy's `allow` at start. Both can be removed
here; rules from the config, the flags or the repository's own file are listed as such and changed there.
"""

from __future__ import annotations

from dataclasses import dataclass

from coder.commands.base import CommandResult, Ctx
from coder.policy.patterns import Rule
from coder.policy.rules import RulePolicy, forget_project_rule, load_project_file, remembered_rules_path


@dataclass
class Saved:
    rule: str
    where: str  # "session" | "project"


def _saved(policy: RulePolicy) -> list[Saved]:
    project_dir = policy.project_dir
    project = load_project_file(remembered_rules_path(project_dir)).get("allow", []) if project_dir else []
    rows = [Saved(str(r), "project") for r in project]
    rows += [Saved(str(r), "session") for r in policy.session_allow if str(r) not in project]
    return rows


def permissions(ctx: Ctx, arg: str) -> CommandResult:
    """`/permissions` lists the saved answers, numbered; `/permissions remove N` takes one back."""
    policy = ctx.session.parts.policy
    if not isinstance(policy, RulePolicy):
        return CommandResult("This session's policy keeps no rules (only its mode decides).")
    saved = _saved(policy)
    words = arg.split()
    if words and words[0] in ("remove", "rm", "forget", "revoke"):
        return _remove(policy, saved, words[1:])
    if words:
        return CommandResult("`/permissions` lists the saved rules; `/permissions remove N` removes one.",
                             error=True)
    lines = ["Saved answers (`/permissions remove N` takes one back):", ""]
    if not saved:
        lines.append("- none: no “always” answer in this session or this project")
    for n, s in enumerate(saved, 1):
        where = "this project (every session here)" if s.where == "project" else "this session"
        lines.append(f"{n}. `{s.rule}` · {where}")
    saved_rules = {s.rule for s in saved}
    lists = {"allow": policy.allow, "ask": policy.ask, "deny": policy.deny}
    fixed = [(kind, str(r)) for kind, rules in lists.items() for r in rules
             if not (kind == "allow" and str(r) in saved_rules)]
    if fixed:
        lines += ["", "From the config, the flags or the repository's `.coder/permissions.json` (change them there):",
                  ""] + [f"- {kind} `{rule}`" for kind, rule in fixed]
    return CommandResult("\n".join(lines))


def _remove(policy: RulePolicy, saved: list[Saved], words: list[str]) -> CommandResult:
    if not words or not words[0].isdigit() or not 1 <= int(words[0]) <= len(saved):
        return CommandResult(f"Which one? `/permissions remove N` with N from 1 to {len(saved)} "
                             "(`/permissions` lists them).", error=True)
    target = saved[int(words[0]) - 1]
    rule = Rule.parse(target.rule)
    policy.session_allow[:] = [r for r in policy.session_allow if r != rule]
    if target.where == "project" and policy.project_dir is not None:
        forget_project_rule(policy.project_dir, target.rule)
        policy.allow[:] = [r for r in policy.allow if r != rule]
    where = "this project" if target.where == "project" else "this session"
    return CommandResult(f"Removed `{target.rule}` ({where}): such calls ask again.")
