"""Batch issue fixing and SWE-bench style evaluation (`coder batch`, `coder swebench run|eval|report`).

Map: instances.py (load, filter) -> workspace.py (shared clones, patches) -> runner.py (the `coder run`
subprocess) -> instance_run.py (one instance end to end) -> batch.py (scheduler, limits, resume; ray_backend.py
for Ray) -> outputs.py (run directory, preds.json) ; evaluate.py + envs.py (its build steps: envsteps.py) +
grading.py (local evaluator) ; report.py + png.py (report). Import-free on purpose: `coder --help` loads only cli.py.
"""
