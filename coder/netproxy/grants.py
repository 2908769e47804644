"""The user's "always" answers to domain questions: kept in the user's state folder, per project, never in the
repository (a file there is somebody else's, and a domain list is the user's to give, as allow rules are)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from coder.base.atomic import write_json_atomic
from coder.base.paths import state_dir


def grants_path(project_dir: Path) -> Path:
    key = hashlib.sha256(os.path.realpath(project_dir).encode()).hexdigest()[:24]
    return state_dir() / "projects" / key / "domains.json"


def load_grants(project_dir: Path) -> list[str]:
    path = grants_path(project_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    hosts = data.get("always") if isinstance(data, dict) else None
    return [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []


def save_grant(project_dir: Path, host: str) -> None:
    path = grants_path(project_dir)
    hosts = load_grants(project_dir)
    if host in hosts:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"workspace": str(project_dir), "always": [*hosts, host]}, indent=2)
