"""Knowing when the agent is stuck (issue 22): patterns on the event stream, a nudge, then a warning or a stop.

Engine-level: it depends only on the event types (coder.base.events). `signals` reduces a tool call to what the
patterns compare, `detector` holds the patterns and their thresholds (`thresholds.json`, data), `guard` decides
between nudging, warning and stopping, and `replay` turns other agents' trajectories into our events so
benchmarks/stuck.py measures the same code on real runs.
"""

from coder.stuck.detector import Detection, Detector, Thresholds, load_thresholds
from coder.stuck.guard import StuckGuard, Verdict

__all__ = ["Detection", "Detector", "StuckGuard", "Thresholds", "Verdict", "load_thresholds"]
