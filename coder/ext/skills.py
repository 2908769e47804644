"""Agent Skills (issue 19): folders with a `SKILL.md` (YAML front matter `name` and `description`, then
instructions) and any files beside it, in the format Claude Code, Codex, Gemini CLI, OpenCode and others share.

Where they are found, first found wins on a name clash:
1. the user's: `$XDG_CONFIG_HOME/coder/skills/<name>/`, then `~/.claude/skills/<name>/`;
2. the repository's, in a trusted workspace only: `.coder/skills/<name>/`, then `.claude/skills/<name>/`.
The user's come first so that a cloned repository cannot replace a skill its user installed.

A skill steers the model, so a repository's skills count only once the user trusts the workspace, and then its
`SKILL.md` comes from the bytes the trust check read and fingerprinted (coder/trust/reader.py), so what was
trusted is what the model reads. Every other file of a repository skill is read beneath the workspace without
following a symlink (coder/fs/beneath.py), like every repository file coder reads itself.

Only names and descriptions go into the system prompt (`prompt_section`): a hundred skills cost a few thousand
characters; a body is read when the model asks for it (the `skill` tool, coder/tools/skill_tool.py). Scripts a
skill ships run through `bash` in the sandbox under the same permissions as any command; the user's skill
folders are mounted read-only there (`sandbox_mounts`), the repository's are in the workspace already.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.base.paths import config_dir
from coder.config.sections import SkillsSettings
from coder.ext.manifests import SkillFile, read_markdown
from coder.fs.beneath import WorkspaceFS
from coder.fs.resolve import EscapeError
from coder.sandbox.profile import HOME_DENY
from coder.trust.reader import REPO_SKILL_DIRS, SKILL_FILE, read_repo_file, repo_skill_paths

MAX_SKILLS = 1000
MAX_DESCRIPTION = 1024  # the format's own limit
MAX_FILE_BYTES = 256 * 1024  # what one `skill` call reads of a file
MAX_LISTED = 200  # files listed beside a SKILL.md
#: the system prompt's default budget for the skill list (`[skills] prompt_chars`, declared with its default in
#: coder/config/sections.py): about 1,000 tokens
PROMPT_CHARS: int = SkillsSettings.prompt_chars
#: the shortest description share worth showing; below it the prompt lists names only
MIN_SHARE = 40


def user_skill_dirs() -> list[Path]:
    return [config_dir() / "skills", Path(os.path.expanduser("~")) / ".claude" / "skills"]


@dataclass
class Skill:
    name: str
    description: str
    #: "user" or "project"
    source: str
    #: the folder the skill lives in: a real absolute path (user) or the workspace root (project)
    root: Path
    #: the skill's folder relative to `root` ("" for a user skill: its root is its folder)
    rel: str
    raw: bytes = b""

    @property
    def folder(self) -> Path:
        return self.root / self.rel if self.rel else self.root

    def body(self) -> str:
        """The SKILL.md text after its front matter: the instructions."""
        text = self.raw.decode("utf-8", "replace")
        if text.startswith("---"):
            _, sep, rest = text[3:].partition("\n---")
            if sep:
                text = rest.split("\n", 1)[1] if "\n" in rest else ""
        return text.strip()

    def files(self) -> list[str]:
        """Files beside SKILL.md (relative to the skill's folder), found without following a symlink."""
        out: list[str] = []
        try:
            with WorkspaceFS(self.root) as fs:
                stack = [self.rel]
                while stack and len(out) < MAX_LISTED:
                    folder = stack.pop()
                    for name, kind in sorted(fs.listdir(folder or ".")):
                        rel = f"{folder}/{name}" if folder else name
                        if kind == "dir" and not name.startswith("."):
                            stack.append(rel)
                        elif kind == "file" and rel != _join(self.rel, SKILL_FILE):
                            out.append(rel[len(self.rel) + 1:] if self.rel else rel)
        except (OSError, EscapeError):
            return out
        return sorted(out)[:MAX_LISTED]

    def read(self, rel: str) -> str:
        """The text of one file of the skill; ConfigError when it is not a regular file beneath its folder."""
        clean = os.path.normpath(rel.strip().lstrip("/"))
        if clean.startswith("..") or os.path.isabs(rel.strip()) or clean in (".", ""):
            raise ConfigError(f"{rel!r} is not a file of the skill {self.name} (paths are relative to its folder)")
        if clean == SKILL_FILE:
            return self.raw.decode("utf-8", "replace")
        try:
            with WorkspaceFS(self.root) as fs:
                data, _ = fs.read_file(_join(self.rel, clean), MAX_FILE_BYTES + 1)
        except (OSError, EscapeError) as exc:
            raise ConfigError(f"{rel}: cannot be read from the skill {self.name} ({exc})") from exc
        text = data[:MAX_FILE_BYTES].decode("utf-8", "replace")
        return text + ("\n[… cut at 256 KiB]" if len(data) > MAX_FILE_BYTES else "")


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    #: what was skipped and why (a broken front matter, a name already taken)
    problems: list[str] = field(default_factory=list)
    #: skill folders of an untrusted repository, not read
    untrusted: int = 0

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name) or self.skills.get(name.strip().lower())


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a else b


def parse_skill(raw: bytes, where: str, folder_name: str) -> tuple[str, str]:
    """(name, description) from a SKILL.md (SkillFile: coder/ext/manifests.py); ConfigError says what is wrong."""
    meta, _ = read_markdown(SkillFile, where, raw)
    name = (meta.name or folder_name).strip()
    if not name:
        raise ConfigError(f"{where}: the skill has no name")
    return name, " ".join(meta.description.split())[:MAX_DESCRIPTION]


def discover(workspace: Path, trusted: bool, repo_files: dict[str, bytes] | None = None,
             plugin_dirs: list[Path] | None = None) -> SkillCatalog:
    """Every skill this session may use (see the module docstring for where and in which order; enabled plugins'
    skill folders, coder/ext/plugins.py, come right after the user's own)."""
    catalog = SkillCatalog()
    for folder in [*user_skill_dirs(), *(plugin_dirs or [])]:
        _add_user_dir(catalog, folder)
    repo = _repo_skill_files(workspace, repo_files) if trusted else {}
    if not trusted:
        catalog.untrusted = len(repo_skill_paths(workspace))
    for rel, raw in repo.items():
        folder_rel = rel.rsplit("/", 1)[0]
        _add(catalog, raw, str(workspace / rel), folder_rel.rsplit("/", 1)[-1], "project", Path(workspace),
             folder_rel)
    return catalog


def _add(catalog: SkillCatalog, raw: bytes, where: str, folder_name: str, source: str, root: Path,
         rel: str) -> None:
    if len(catalog.skills) >= MAX_SKILLS:
        return
    try:
        name, description = parse_skill(raw, where, folder_name)
    except ConfigError as exc:
        catalog.problems.append(str(exc))
        return
    if name in catalog.skills:
        catalog.problems.append(f"{where}: a skill named {name!r} was found earlier "
                                f"({catalog.skills[name].folder}); this one is ignored")
        return
    catalog.skills[name] = Skill(name, description, source, root, rel, raw)


def _add_user_dir(catalog: SkillCatalog, folder: Path) -> None:
    """The user's own folder: a skill folder may be a symlink (installers link them), files inside may not."""
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        skill_md = entry / SKILL_FILE
        if not entry.is_dir() or entry.name.startswith(".") or not skill_md.is_file():
            continue
        try:
            raw = skill_md.read_bytes()
        except OSError as exc:
            catalog.problems.append(f"{skill_md}: cannot be read ({exc})")
            continue
        _add(catalog, raw, str(skill_md), entry.name, "user", Path(os.path.realpath(entry)), "")


def _repo_skill_files(workspace: Path, repo_files: dict[str, bytes] | None) -> dict[str, bytes]:
    """The repository's SKILL.md bytes: those the trust check read when it has them, else read now the same way."""
    if repo_files is not None:  # what the trust check read is what counts, even none
        return {rel: raw for rel, raw in repo_files.items() if _is_skill_path(rel)}

    out = {}
    for rel in repo_skill_paths(workspace):
        raw = read_repo_file(workspace, rel)
        if raw is not None:
            out[rel] = raw
    return out


def _is_skill_path(rel: str) -> bool:
    return any(rel.startswith(base + "/") for base in REPO_SKILL_DIRS) and rel.endswith("/" + SKILL_FILE) \
        and rel.count("/") == 3


def prompt_section(catalog: SkillCatalog, budget: int = PROMPT_CHARS) -> str:
    """What the system prompt says of skills: one line each, name and description (never a body), within
    `budget` characters: when the descriptions do not all fit, each is cut to an equal share, and when a share
    would be too short to tell anything, only the names are listed (the `skill` tool shows the rest)."""
    if not catalog.skills:
        return ""
    skills = sorted(catalog.skills.values(), key=lambda s: s.name)
    head = ("\n# Skills\nInstalled skills (instructions for kinds of tasks). When a task matches one, load it "
            "with the `skill` tool before you start, and follow it:\n")
    full = [f"- {s.name}: {s.description}" for s in skills]
    if sum(len(line) + 1 for line in full) <= budget:
        return head + "\n".join(full) + "\n"
    share = budget // len(skills) - 4
    if share - max(len(s.name) for s in skills) >= MIN_SHARE:
        return head + "\n".join(f"- {s.name}: {_cut(s.description, share - len(s.name))}" for s in skills) + "\n"
    return (head.replace("When a task matches one", "They are too many to describe here: when a task may match "
                         "one by its name, see what it does with the `skill` tool; when it matches") +
            ", ".join(s.name for s in skills) + "\n")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + "…"


def sandbox_mounts(catalog: SkillCatalog) -> list[str]:
    """The user's skill folders that the sandbox must see (read-only) for their scripts to run. A skill folder
    may be a link (installers make them), so where it really is is checked: never `/`, the home folder or a
    folder above it, a credential folder (`~/.ssh`, ...) or a folder holding one; such a skill is still listed,
    but its scripts cannot run in the sandbox (the reason goes to `catalog.problems`)."""
    out: set[str] = set()
    for skill in catalog.skills.values():
        if skill.source != "user":
            continue
        why = _unsafe_mount(skill.root)
        if why:
            catalog.problems.append(f"{skill.folder}: not shown to the sandbox ({why}); its scripts cannot run")
        else:
            out.add(str(skill.root))
    return sorted(out)


def _unsafe_mount(root: Path) -> str:
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if root == Path("/") or root == home or root in home.parents:
        return "it is the home folder or above it"
    if any((root / denied).exists() for denied in HOME_DENY + (".bashrc", ".profile")):
        return "it holds a credential or home folder"
    skills_home = Path(os.path.realpath(config_dir() / "skills"))
    if home in root.parents and root != skills_home and skills_home not in root.parents:
        rel = root.relative_to(home).as_posix()
        if any(rel == d or rel.startswith(d + "/") for d in HOME_DENY):
            return f"~/{rel} is a folder the sandbox never shows"
    return ""


def describe_catalog(catalog: SkillCatalog) -> list[dict[str, Any]]:
    """Rows for `coder skills list` and `/skills`."""
    return [{"name": s.name, "description": s.description, "source": s.source, "folder": str(s.folder)}
            for s in sorted(catalog.skills.values(), key=lambda s: s.name)]
