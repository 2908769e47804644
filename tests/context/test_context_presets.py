"""Issue 45: `[context] preset` names a point of the measured curve; a key set beside it wins, in any layer, and
a session's context manager runs with what the preset says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import load_config, settings
from coder.config.sections import ContextSettings
from coder.context.manager import TieredContext
from coder.models.scripted import ScriptedProvider


def test_balanced_is_the_default_and_each_preset_sets_its_keys() -> None:
    assert ContextSettings.PRESETS["balanced"] == {}
    default = settings({}).context
    assert default.preset == "balanced" and default == ContextSettings()
    for name, values in ContextSettings.PRESETS.items():
        chosen = settings({"context": {"preset": name}}).context
        assert {key: getattr(chosen, key) for key in values} == values, name
        untouched = {k for k in vars(default) if k not in values and k != "preset"}
        assert all(getattr(chosen, k) == getattr(default, k) for k in untouched), name
    cost, quality = ContextSettings.PRESETS["cost"], ContextSettings.PRESETS["quality"]
    assert cost["compact_at"] < default.compact_at < quality["compact_at"]


def test_a_key_set_beside_a_preset_wins_and_a_bad_preset_is_a_config_error(tmp_path: Path) -> None:
    chosen = settings({"context": {"preset": "cost", "compact_at": 9_000}}).context
    assert chosen.compact_at == 9_000 and chosen.recent_turns == ContextSettings.PRESETS["cost"]["recent_turns"]
    with pytest.raises(ConfigError, match=r'\[context\] preset = "cheap": expected one of "quality", "balanced"'):
        settings({"context": {"preset": "cheap"}})
    # the user's file picks the preset, the repository's sets one key: both hold
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[context]\npreset = "quality"\n')
    (tmp_path / ".coder").mkdir()
    (tmp_path / ".coder" / "config.toml").write_text("[context]\nrecent_turns = 2\n")
    config = load_config(tmp_path).context
    assert config.preset == "quality" and config.recent_turns == 2
    assert config.compact_at == ContextSettings.PRESETS["quality"]["compact_at"]
    manager = TieredContext(ScriptedProvider({"turns": []}), config, tmp_path / "state")
    assert manager.compact_at == ContextSettings.PRESETS["quality"]["compact_at"]
    assert manager.masker.recent_turns == 2
