"""`coder run --json-schema FILE`: a final answer that is JSON valid against the user's schema (issue 23).

Why in the frontend, not the engine: the check is about what one headless run hands to a script. The engine runs
turns as usual; this module adds the contract to the task, checks the final answer with `jsonschema`, and on
failure sends the validation errors back as one more user turn (the model keeps its whole context, so it can fix
the answer rather than redo the work). A second failure ends the run with exit code 1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError

#: how many validation errors the model is shown (the first ones say enough to fix the answer)
MAX_ERRORS = 10
FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n?```", re.DOTALL)


@dataclass
class Checked:
    """The outcome of one check: `value` is the parsed JSON when `errors` is empty."""

    value: Any = None
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def load_schema(path: Path) -> dict[str, Any]:
    """The schema in `path`, checked against its metaschema: every problem is a UsageError naming the file."""
    # start-up time: jsonschema loads only when this runs
    import jsonschema
    import jsonschema.validators

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--json-schema {path}: cannot be read ({exc}).") from exc
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--json-schema {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") \
            from exc
    if not isinstance(schema, dict | bool):
        raise UsageError(f"--json-schema {path}: a JSON Schema is an object (or true/false), not "
                         f"{type(schema).__name__}.")
    try:
        # the stubs type a schema as a dict; true and false are schemas too (JSON Schema 2019-09 and later)
        jsonschema.validators.validator_for(schema).check_schema(schema)  # pyright: ignore[reportArgumentType]
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise UsageError(f"--json-schema {path}: not a valid JSON Schema at {where}: {exc.message}") from exc
    return schema  # type: ignore[return-value]


def instructions(schema: Any) -> str:
    """What the task gets appended: the contract the final answer must keep."""
    return ("\n\n---\nWhen you have finished the task, your final answer (your last message) must be only a JSON "
            "value that is valid against this JSON Schema: no prose before or after it, no Markdown fence.\n"
            f"```json\n{json.dumps(schema, indent=2, ensure_ascii=False)}\n```")


def extract(text: str) -> Any:
    """The JSON in a final answer: the whole text, else a fenced block, else the span from the first `{` or `[`
    to the last `}` or `]` (models wrap JSON in a sentence or a fence even when told not to). ValueError if none."""
    stripped = text.strip()
    candidates = [stripped, *FENCE.findall(stripped)]
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    end = max(stripped.rfind("}"), stripped.rfind("]"))
    if starts and end > min(starts):
        candidates.append(stripped[min(starts): end + 1])
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
    detail = f" ({first_error.msg} at line {first_error.lineno}, column {first_error.colno})" if first_error else ""
    raise ValueError(f"the answer is not JSON{detail}")


def check(text: str, schema: Any) -> Checked:
    """Parse and validate a final answer; errors name the JSON path of each problem."""
    # start-up time: jsonschema loads only when this runs
    import jsonschema
    import jsonschema.validators

    try:
        value = extract(text)
    except ValueError as exc:
        return Checked(errors=(str(exc),))
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return Checked(value=value)
    lines = tuple(f"{e.json_path}: {e.message}" for e in errors[:MAX_ERRORS])
    more = len(errors) - MAX_ERRORS
    return Checked(errors=lines + ((f"... and {more} more",) if more > 0 else ()))


def retry_message(checked: Checked) -> str:
    """The one more turn the model gets: what was wrong, and the contract again in one line."""
    listed = "\n".join(f"- {line}" for line in checked.errors)
    return (f"Your final answer does not satisfy the required JSON Schema:\n{listed}\n\nAnswer again with only the "
            "corrected JSON value (no prose, no Markdown fence).")
