"""Subagents as the model reaches them: `task` (task_tool.py: start one), `subagents` (subagents_tool.py: follow,
merge or discard the background ones), and the interface the engine fills for both (control.py)."""
