"""The permission modes, narrowest first (the order `permission_mode` is compared in: a repository may only move
it left). Their own module, importing nothing, because `coder --help` lists them and must stay fast."""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["plan", "ask", "auto-edit", "auto"]
MODES: tuple[Mode, ...] = get_args(Mode)
