"""Datasets the way users name them: a Hugging Face name and split resolved from the `datasets` cache (offline,
as on this machine), a folder written by `save_to_disk`, parquet files, and the errors when none of it works.

The Hub cache is built for real by the `datasets` library's own parquet builder under tmp (HF_HOME), laid out as
a download of `princeton-nlp/SWE-bench_Lite` leaves it, so `load_dataset(name, split=...)` reads it with
HF_DATASETS_OFFLINE=1 and no network. The CLI tests run `python -m coder` in a subprocess because `datasets`
reads its environment when it is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder.base.errors import UsageError
from coder.batch.instances import dataset_label, hub_name, load_instances

ROOT = Path(__file__).resolve().parents[2]
LITE = "princeton-nlp/SWE-bench_Lite"

BUILD_CACHE = """
import json, os, sys
from datasets.packaged_modules.parquet.parquet import Parquet
import datasets
rows = json.loads(sys.argv[1])
files = {}
for split, ids in rows.items():
    files[split] = os.path.join(sys.argv[2], split + ".parquet")
    datasets.Dataset.from_list(ids).to_parquet(files[split])
Parquet(dataset_name="SWE-bench_Lite", config_id="default", data_files=files, hash="0123abcd").download_and_prepare()
root = datasets.config.HF_DATASETS_CACHE  # what a download of the Hub dataset leaves: namespace___name/...
os.rename(os.path.join(root, "swe-bench_lite"), os.path.join(root, "princeton-nlp___swe-bench_lite"))
# Leave without running C++ static destructors: pyarrow's dataset scan (the parquet builder's) can still have a
# worker thread finishing when the interpreter exits, and then the process dies with "terminate called without an
# active exception" (SIGABRT; apache/arrow#39862, huggingface/datasets#7357). On a loaded machine that window is
# wide enough to hit. Everything is written and closed by now.
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)
"""


def _hf_env(hf_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return {**env, "HF_HOME": str(hf_home), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(ROOT)}


def _records(swe) -> list[dict]:
    return [json.loads(line) for line in swe.dataset.read_text().splitlines()]


@pytest.fixture
def hf_cache(swe, tmp_path: Path) -> Path:
    """HF_HOME holding SWE-bench_Lite's "test" split (the 3 instances) and a "dev" split (the first one)."""
    home = tmp_path / "hf"
    rows = _records(swe)
    subprocess.run([sys.executable, "-c", BUILD_CACHE, json.dumps({"test": rows, "dev": rows[:1]}), str(tmp_path)],
                   check=True, env=_hf_env(home), capture_output=True)
    assert (home / "datasets" / "princeton-nlp___swe-bench_lite").is_dir()
    return home


def _empty(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _coder(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


LOAD = """
import json, sys
from coder.batch.instances import load_instances
print(json.dumps({f"{name} {split}": [i.to_record() for i in load_instances(name, split or None)]
                  for name, split in json.loads(sys.argv[1])}))
"""


def test_a_hub_name_and_split_resolve_from_the_cache_offline(swe, hf_cache, tmp_path):
    env = _hf_env(hf_cache)
    asked = [[LITE, "test"], [LITE, "dev"], ["lite", ""]]  # "" = no --split: the default, test
    got = json.loads(subprocess.run([sys.executable, "-c", LOAD, json.dumps(asked)], capture_output=True, text=True,
                                    env=env, check=True).stdout)
    for (name, split), ids in zip(asked, (swe.ids, swe.ids[:1], swe.ids), strict=True):
        records = got[f"{name} {split}"]
        assert [r["instance_id"] for r in records] == ids
        assert records[0]["FAIL_TO_PASS"] == ["tests/test_calc.py::test_add"]  # the JSON-encoded list decoded
        assert records[0]["base_commit"] == swe.base_commit and records[0]["patch"] == _records(swe)[0]["patch"]
    # `coder swebench run --dataset NAME --split S`: the run gets the split's instances. The scripts folder is
    # empty on purpose: preflight names the instances it has no script for, then stops.
    proc = _coder(env, "swebench", "run", "--dataset", LITE, "--split", "dev", "--repos-dir", str(swe.repos_dir),
                  "--output", str(tmp_path / "run"), "--model", "scripted:" + str(_empty(tmp_path / "scripts")),
                  "--no-env", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no script for 1 instance(s)" in proc.stderr and "acme__calc-1" in proc.stderr
    # a split the cached dataset does not have: the ones it has are named
    proc = _coder(env, "swebench", "run", "--dataset", LITE, "--split", "train", "--model", "scripted:x", "--no-env",
                  cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--split train" in proc.stderr and "'test'" in proc.stderr and "'dev'" in proc.stderr


def test_a_dataset_not_cached_offline_says_how_to_get_it(tmp_path):
    env = _hf_env(tmp_path / "empty-hf")
    proc = _coder(env, "swebench", "run", "--dataset", "princeton-nlp/SWE-bench_Verified", "--split", "test",
                  "--model", "scripted:x", "--no-env", cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr
    assert "Traceback" not in err
    assert "princeton-nlp/SWE-bench_Verified (split test) is not in the Hugging Face cache" in err
    assert str(tmp_path / "empty-hf") in err  # where the cache was looked for
    assert "datasets.load_dataset('princeton-nlp/SWE-bench_Verified', split='test')" in err  # how to fetch it
    assert "local .json, .jsonl or .parquet file" in err
    # the official harness command names the dataset as the Hub does (nothing is loaded for it)
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"a__b-1": {"instance_id": "a__b-1", "model_name_or_path": "x", "model_patch": ""}}))
    official = _coder(env, "swebench", "eval", str(preds), "--dataset", "verified", "--official", cwd=tmp_path)
    assert official.returncode == 0, official.stderr
    assert "--dataset_name princeton-nlp/SWE-bench_Verified" in official.stdout and "--split" not in official.stdout
    dev = _coder(env, "swebench", "eval", str(preds), "--dataset", "lite", "--split", "dev", "--official", cwd=tmp_path)
    assert "--dataset_name princeton-nlp/SWE-bench_Lite" in dev.stdout and "--split dev" in dev.stdout, dev.stderr


def test_save_to_disk_folders_and_parquet_files(swe, tmp_path):
    import datasets

    rows = _records(swe)
    single = tmp_path / "single"
    datasets.Dataset.from_list(rows).save_to_disk(str(single))
    assert [i.instance_id for i in load_instances(single)] == swe.ids
    both = tmp_path / "both"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows),
                          "dev": datasets.Dataset.from_list(rows[1:])}).save_to_disk(str(both))
    assert [i.instance_id for i in load_instances(both, "dev")] == swe.ids[1:]
    assert [i.instance_id for i in load_instances(both)] == swe.ids  # the default split is "test"
    with pytest.raises(UsageError, match=r"--split nope.*Unknown split"):
        load_instances(both, "nope")
    parquet = tmp_path / "lite.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(parquet))
    assert [i.to_record() for i in load_instances(parquet)] == [i.to_record() for i in load_instances(swe.dataset)]
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(UsageError, match="not a readable parquet file"):
        load_instances(broken)


def test_names_paths_and_mistakes(swe, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hub_name(LITE) == LITE and hub_name("verified") == "princeton-nlp/SWE-bench_Verified"
    assert hub_name(swe.dataset) is None and hub_name("missing.jsonl") is None and hub_name("no-slash") is None
    (tmp_path / "lite").mkdir()  # a local folder wins over the short name
    assert hub_name("lite") is None and dataset_label("lite") == str(tmp_path / "lite")
    assert dataset_label(LITE) == LITE
    with pytest.raises(UsageError, match="missing.jsonl does not exist.*Hugging Face dataset name"):
        load_instances("missing.jsonl")
    with pytest.raises(UsageError, match="no-slash does not exist"):
        load_instances("no-slash")
