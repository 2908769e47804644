"""The schema layer (coder/base/schema.py) against pydantic v2, the alternative issue 48 names: what each costs to
import, to declare coder's event types, and to read a stored session's events back.

Usage: python benchmarks/schema.py [--quick] [--runs N]

- Import: a fresh interpreter imports the layer (`coder.base.schema`) or pydantic (`TypeAdapter`), CPU time of the
  child (user + system, from its rusage, which a loaded machine stretches less than wall time), against a bare
  `python -c pass`; median of the runs.
- Declaring: the adapters (pydantic) or converters (schema) of every event type, built once in a fresh process.
- Reading: every event of the stored sessions of tests/store/stored/ (real sessions of each kind), parsed from
  their stored dicts, per event; pydantic validates the same stdlib dataclasses (its default lax mode: the
  strict mode refuses an int where a float is declared, which coder's stored costs hold).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SECTION = HERE / "benchmarks" / "sections" / "schema.md"

IMPORTS = {
    "python -c pass": "pass",
    "import coder.base.schema": "import coder.base.schema",
    "from pydantic import TypeAdapter": "from pydantic import TypeAdapter",
}
DECLARE = {
    "schema: converters of every event type": (
        "from coder.base.events import EVENT_TYPES\nfrom coder.base.schema import converter\n"
        "[converter(c, True) for c in EVENT_TYPES.values() if c.type != 'agent_relay']"),
    "pydantic: adapters of every event type": (
        "from pydantic import TypeAdapter\nfrom coder.base.events import EVENT_TYPES\n"
        "[TypeAdapter(c) for c in EVENT_TYPES.values() if c.type != 'agent_relay']"),
}


def child_cpu(code: str) -> float:
    """CPU seconds of a fresh interpreter running `code` (with this checkout first on its path)."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=HERE, env={**os.environ, "PYTHONPATH": str(HERE)})
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"schema.py: {code!r} failed")
    return usage.ru_utime + usage.ru_stime


def stored_events() -> list[tuple[str, dict]]:
    rows: list[tuple[str, dict]] = []
    for sql in sorted((HERE / "tests" / "store" / "stored").glob("*.sql")):
        db = sqlite3.connect(":memory:")
        db.executescript(sql.read_text())
        rows += [(kind, json.loads(data)) for kind, data in db.execute("SELECT type, data FROM events")]
    return rows


def reading(runs: int) -> dict[str, float]:
    """Microseconds per event, median of `runs` passes over the stored events, for each library."""
    sys.path.insert(0, str(HERE))
    from pydantic import TypeAdapter

    from coder.base.event_versions import load_event
    from coder.base.events import EVENT_TYPES

    rows = stored_events()
    adapters = {name: TypeAdapter(cls) for name, cls in EVENT_TYPES.items() if name != "agent_relay"}

    def ours() -> None:
        for kind, data in rows:
            load_event(kind, data)

    def theirs() -> None:
        for kind, data in rows:
            adapters[kind].validate_python(data)

    out = {}
    for name, run in (("schema", ours), ("pydantic", theirs)):
        run()
        times = []
        for _ in range(runs):
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        out[name] = statistics.median(times) / len(rows) * 1e6
    out["events"] = len(rows)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="7 runs each instead of 21")
    parser.add_argument("--runs", type=int)
    args = parser.parse_args()
    runs = args.runs or (7 if args.quick else 21)
    cpu: dict[str, list[float]] = {name: [] for name in [*IMPORTS, *DECLARE]}
    for _ in range(runs):  # interleaved, so the machine's load weighs on each alike
        for name, code in {**IMPORTS, **DECLARE}.items():
            cpu[name].append(child_cpu(code))
    median = {name: statistics.median(v) * 1000 for name, v in cpu.items()}
    read = reading(runs)
    base = median["python -c pass"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = ["## Schema layer (issue 48)", "",
             f"Command: `python benchmarks/schema.py --runs {runs}` · {when} · {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f} · Python {sys.version.split()[0]}", "",
             "| what (a fresh process) | CPU ms (median) | over `python -c pass` |", "| --- | ---: | ---: |"]
    lines += [f"| `{name}` | {ms:.1f} | {ms - base:+.1f} |" for name, ms in median.items()]
    lines += ["", f"Reading the {read['events']:.0f} events of the stored sessions (tests/store/stored): "
              f"schema {read['schema']:.1f} µs an event, pydantic {read['pydantic']:.1f} µs an event (CPU, median of "
              f"{runs} passes)."]
    text = "\n".join(lines) + "\n"
    print(text)
    SECTION.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
