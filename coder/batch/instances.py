"""Task instances: SWE-bench records and plain issue lists, loaded and filtered.

A dataset is named the way users name it: a local JSON, JSONL or parquet file, a folder written by
`datasets.save_to_disk`, or a Hugging Face dataset name and split (`princeton-nlp/SWE-bench_Lite`, `--split test`;
`lite`, `verified`, `full` for short, as mini-swe-agent spells them), read through the `datasets` library and its
cache. The two test lists are JSON-encoded strings in the published files and real lists in some mirrors, so both
are accepted. A plain issue list (`coder batch
issues.jsonl --repo .`) becomes the same `Instance` shape with the repository's HEAD as base commit, so the
runner, the outputs and the report need no second code path.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError

#: short names for the SWE-bench datasets on the Hugging Face Hub (mini-swe-agent's `--subset` values)
HUB_ALIASES = {"lite": "princeton-nlp/SWE-bench_Lite", "verified": "princeton-nlp/SWE-bench_Verified",
               "full": "princeton-nlp/SWE-bench"}
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
LOCAL_SUFFIXES = (".json", ".jsonl", ".parquet")
DEFAULT_SPLIT = "test"


class DatasetUnavailable(UsageError):
    """A Hugging Face dataset that is neither in the local cache nor reachable: says how to get it."""

SWEBENCH_FIELDS = (
    "instance_id", "repo", "base_commit", "problem_statement", "hints_text", "patch", "test_patch",
    "FAIL_TO_PASS", "PASS_TO_PASS", "version", "environment_setup_commit", "created_at",
)


@dataclass
class Instance:
    """One task: where the code is, what to fix, and (for SWE-bench) how to check the fix."""

    instance_id: str
    repo: str = ""
    base_commit: str = ""
    problem_statement: str = ""
    hints_text: str = ""
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = field(default_factory=list)
    PASS_TO_PASS: list[str] = field(default_factory=list)
    version: str = ""
    environment_setup_commit: str = ""
    created_at: str = ""
    eval_script: str = ""
    log_parser: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(cls, rec: dict[str, Any], source: str = "") -> Instance:
        if not isinstance(rec, dict) or not rec.get("instance_id"):
            raise UsageError(f"{source}: every record needs an 'instance_id' (got {str(rec)[:80]!r})")
        known: dict[str, Any] = {k: rec.get(k) for k in SWEBENCH_FIELDS if k in rec}
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            known[key] = _test_list(known.get(key), f"{source}: {rec['instance_id']}.{key}")
        for key, value in list(known.items()):
            if key not in ("FAIL_TO_PASS", "PASS_TO_PASS") and value is not None and not isinstance(value, str):
                known[key] = str(value)
            if value is None:
                known.pop(key)
        extra = {k: v for k, v in rec.items() if k not in SWEBENCH_FIELDS and k not in ("eval_script", "log_parser")}
        return cls(**known, eval_script=str(rec.get("eval_script") or ""),
                   log_parser=str(rec.get("log_parser") or ""), extra=extra)

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {k: getattr(self, k) for k in SWEBENCH_FIELDS}
        if self.eval_script:
            rec["eval_script"] = self.eval_script
        if self.log_parser:
            rec["log_parser"] = self.log_parser
        rec.update(self.extra)
        return rec

    @property
    def mirror_name(self) -> str:
        """Directory name of the local mirror: `owner__name` as in SWE-bench instance ids."""
        return self.repo.replace("/", "__")


def _test_list(value: Any, where: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not a JSON list of test names ({exc})") from None
    if hasattr(value, "tolist"):  # numpy arrays from parquet
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: expected a list of test names")
    return value


def load_records(path: Path) -> list[dict[str, Any]]:
    """Raw records of a JSON (list or dict by id), JSONL or parquet file."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"dataset {path} does not exist (give a .json, .jsonl or .parquet file)")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _load_parquet(path)
    text = path.read_text(encoding="utf-8")
    if suffix != ".json" and suffix != ".jsonl":
        try:
            json.loads(text)
            suffix = ".json"
        except json.JSONDecodeError:
            suffix = ".jsonl"
    if suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{n}: invalid JSON line ({exc.msg})") from None
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict):
        if all(isinstance(v, dict) for v in data.values()):
            return [{"instance_id": k, **v} for k, v in data.items()]
        return [data]
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a list of records")
    return data


def _load_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa  # installed with `datasets`; imported here because it is heavy
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise UsageError(f"{path}: not a readable parquet file ({exc})") from None


def hub_name(source: str | Path) -> str | None:
    """The Hugging Face dataset `source` names, or None when it names a local file or folder."""
    text = str(source)
    if Path(text).expanduser().exists() or Path(text).suffix.lower() in LOCAL_SUFFIXES:
        return None
    name = HUB_ALIASES.get(text.lower(), text)
    return name if HUB_NAME.match(name) else None


def dataset_label(source: str | Path) -> str:
    """How reports and the official harness command name the dataset: the Hub name, or the absolute path."""
    return hub_name(source) or str(Path(source).expanduser().resolve())


def dataset_records(source: str | Path, split: str | None = None) -> list[dict[str, Any]]:
    """Raw records of a local file, a saved `datasets` folder or a Hugging Face dataset's split."""
    path = Path(source).expanduser()
    if path.is_file():
        return load_records(path)
    name = None if path.is_dir() else hub_name(source)
    if not path.is_dir() and name is None:
        raise UsageError(f"dataset {source} does not exist (give a .json, .jsonl or .parquet file, a folder saved "
                         "with datasets, or a Hugging Face dataset name such as princeton-nlp/SWE-bench_Lite)")
    return _load_with_datasets(name or str(path), split or DEFAULT_SPLIT, local=name is None)


def _load_with_datasets(name: str, split: str, local: bool) -> list[dict[str, Any]]:
    """Through the `datasets` library: its cache first (offline it is the only source), the Hub otherwise."""
    # start-up time: datasets (and pyarrow) load only for a dataset named by its Hub name
    import datasets
    import datasets.config
    from datasets.utils.logging import set_verbosity_error

    set_verbosity_error()  # its "using the cached version" notices are not the user's business
    try:
        if local and any((Path(name) / f).is_file() for f in ("dataset_dict.json", "state.json")):
            loaded = datasets.load_from_disk(name)
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    raise ValueError(f'Unknown split "{split}". Should be one of {sorted(loaded)}.')
                loaded = loaded[split]
        else:
            loaded = datasets.load_dataset(name, split=split)
    except ConnectionError as exc:
        raise DatasetUnavailable(_not_cached(name, split, exc, datasets.config.HF_DATASETS_CACHE,
                                             datasets.config.HF_HUB_OFFLINE)) from None
    except FileNotFoundError as exc:
        raise UsageError(f"no dataset {name} on the Hugging Face Hub ({exc}); check the name (a gated dataset "
                         "needs HF_TOKEN), or give a local .json, .jsonl or .parquet file") from None
    except ValueError as exc:  # an unknown split, mostly
        raise UsageError(f"dataset {name}, --split {split}: {exc}") from None
    return loaded.to_list()


def _not_cached(name: str, split: str, exc: Exception, cache: Any, offline: bool) -> str:
    why = ("offline mode is on (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE)" if offline
           else f"the Hub cannot be reached ({exc})")
    return (f"dataset {name} (split {split}) is not in the Hugging Face cache ({cache}) and {why}. Fetch it once "
            f"where the network is on: python -c \"import datasets; datasets.load_dataset('{name}', "
            f"split='{split}')\" (HF_HOME or HF_DATASETS_CACHE say where the cache is; copy it here), or give "
            "--dataset a local .json, .jsonl or .parquet file."
            + ("" if offline else " Once it is cached, HF_DATASETS_OFFLINE=1 skips the network."))


def load_instances(source: str | Path, split: str | None = None) -> list[Instance]:
    """The instances of a dataset (see `dataset_records` for what `source` may be; `split` is for the Hub)."""
    rows = dataset_records(source, split)
    instances = [Instance.from_record(r, str(source)) for r in rows]
    seen: set[str] = set()
    for inst in instances:
        if inst.instance_id in seen:
            raise UsageError(f"{source}: instance id {inst.instance_id!r} appears twice")
        seen.add(inst.instance_id)
    return instances


def parse_slice(spec: str) -> slice:
    """`--slice 0:10`, `:5`, `10:`, `0:20:2` (Python slice syntax, as in mini-swe-agent)."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise UsageError(f"--slice {spec!r}: use start:stop or start:stop:step")
    try:
        nums = [int(p) if p.strip() else None for p in parts]
    except ValueError:
        raise UsageError(f"--slice {spec!r}: start, stop and step must be integers") from None
    return slice(*nums)


def filter_instances(instances: list[Instance], *, ids: Iterable[str] | None = None, pattern: str | None = None,
                     slice_spec: str | None = None, shuffle: bool = False, seed: int = 42) -> list[Instance]:
    """Apply the filters in the order users expect: ids, regex, shuffle, then slice."""
    result = list(instances)
    if ids:
        wanted = [i for raw in ids for i in raw.split(",") if i.strip()]
        wanted = [w.strip() for w in wanted]
        by_id = {inst.instance_id: inst for inst in result}
        missing = [w for w in wanted if w not in by_id]
        if missing:
            raise UsageError(f"--instances: not in the dataset: {', '.join(missing[:10])}")
        result = [by_id[w] for w in dict.fromkeys(wanted)]
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"--filter {pattern!r}: invalid regular expression ({exc})") from None
        result = [inst for inst in result if rx.search(inst.instance_id)]
    if shuffle:
        result = sorted(result, key=lambda i: i.instance_id)
        random.Random(seed).shuffle(result)
    if slice_spec:
        result = result[parse_slice(slice_spec)]
    return result


def load_issue_list(path: Path, base_commit: str, repo_label: str) -> list[Instance]:
    """Plain issues for batch fixing in one's own repository.

    Each record needs an id (`id`, `instance_id`, `number` or `key`) and a text (`problem_statement`, `body`,
    `text` or `description`, with an optional `title` put first). A `.md`/`.txt` file holds one issue per
    section separated by lines of `---`."""
    path = Path(path)
    if path.suffix.lower() in (".md", ".txt"):
        if not path.is_file():
            raise UsageError(f"issue list {path} does not exist")
        chunks = [c.strip() for c in re.split(r"^---+\s*$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)]
        rows: list[dict[str, Any]] = [{"id": f"issue-{n}", "body": c} for n, c in enumerate(chunks, 1) if c]
    else:
        rows = load_records(path)
    out = []
    first_seen: dict[str, int] = {}
    for n, rec in enumerate(rows, 1):
        ident = next((str(rec[k]) for k in ("instance_id", "id", "number", "key") if rec.get(k) not in (None, "")),
                     f"issue-{n}")
        ident = re.sub(r"[^A-Za-z0-9._-]+", "-", ident).strip("-") or f"issue-{n}"
        if ident in first_seen:  # two issues would write one patch file and one branch
            raise UsageError(f"{path}: issue id {ident!r} appears twice (records {first_seen[ident]} and {n}); "
                             "give each issue its own id.")
        first_seen[ident] = n
        body = next((str(rec[k]) for k in ("problem_statement", "body", "text", "description") if rec.get(k)), "")
        title = str(rec.get("title") or "")
        statement = f"{title}\n\n{body}".strip() if title else body
        if not statement:
            raise UsageError(f"{path}: issue {ident!r} has no text (body / problem_statement / title)")
        out.append(Instance(instance_id=ident, repo=repo_label, base_commit=base_commit,
                            problem_statement=statement, extra={"issue": rec}))
    return out
