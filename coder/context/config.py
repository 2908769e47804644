"""The `[context]` configuration table, validated once so a typo is a clear ConfigError, not a silent default.

```toml
[context]
budget = 0.8            # tokens (int) or fraction of the model's window (float <= 1)
compact_at = 10000      # when to compact: tokens (at most 60% of the budget), or a fraction of the budget
target = 0.25           # after a compaction: fraction of compact_at to get down to (the last K turns stay)
recent_turns = 1        # K: turns never masked and kept verbatim by a summary
min_gain = 0.1          # circuit breaker: a compaction freeing less than this share is not repeated
clip_chars = 20000      # tool outputs longer than this keep head and tail only
summary_max_tokens = 2000
count_with_provider = "threshold"   # "always" | "threshold" (only near a decision) | "never"
```
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from coder.base.errors import ConfigError

COUNT_MODES = ("always", "threshold", "never")


@dataclass
class ContextConfig:
    budget: float = 0.8
    #: Compaction is driven by cost, not only by the window: every request re-reads the whole context (cached
    #: reads still cost 10% of input), so a small working set is cheaper on every turn, and each compaction
    #: costs one rewrite of the cache plus a summary. 10k tokens down to the handoff + the last turn was the
    #: cheapest setting on the trajectories tuned on (benchmarks/context.py --quick, docs/decisions/33-context-
    #: cost.md: 16k/4 turns 0.86x raw, 12k/1 0.79x, 10k/1 0.77x, 8k/1 0.77x with more summaries); never more than
    #: 60% of the budget, so small local windows still compact before they overflow. Quality first: compact_at = 0.5.
    compact_at: float = 10_000
    target: float = 0.25
    recent_turns: int = 1
    min_gain: float = 0.1
    clip_chars: int = 20_000
    clip_head_lines: int = 100
    clip_tail_lines: int = 100
    mask_min_chars: int = 300
    hard_clip_chars: int = 8_000
    summary_max_tokens: int = 2_000
    instruction_max_chars: int = 16_000
    max_output_tokens: int = 8_192
    count_with_provider: str = "threshold"
    chars_per_token: float = 3.5

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ContextConfig:
        """Read the `[context]` table (or a whole config holding one)."""
        data = dict(data or {})
        if "context" in data:  # the whole merged config: read its [context] table
            if not isinstance(data["context"], dict):
                raise ConfigError(f"[context] must be a table, not {data['context']!r}")
            data = dict(data["context"])
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ConfigError(f"[context] has no setting {key!r}; known: {', '.join(sorted(known))}")
            default = known[key].default
            if isinstance(default, str):
                if value not in COUNT_MODES:
                    raise ConfigError(f"[context] {key} must be one of {', '.join(COUNT_MODES)}, not {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"[context] {key} must be a non-negative number, not {value!r}")
            elif isinstance(default, int) and not isinstance(default, bool) and key not in ("budget", "compact_at"):
                value = int(value)
            values[key] = value
        config = cls(**values)
        if not 0 < config.target < 1:
            raise ConfigError(f"[context] target must be a fraction between 0 and 1, not {config.target}")
        if config.budget == 0 or config.compact_at == 0:
            raise ConfigError("[context] budget and compact_at must be positive")
        return config

    def budget_tokens(self, window: int) -> int:
        """The most a request may carry: the configured budget, never more than the window minus the answer."""
        ceiling = max(1024, window - self.max_output_tokens)
        value = int(self.budget * window) if self.budget <= 1 else int(self.budget)
        return min(value, ceiling)

    def compact_at_tokens(self, budget: int) -> int:
        if self.compact_at <= 1:
            return int(self.compact_at * budget)
        return min(int(self.compact_at), int(0.6 * budget))
