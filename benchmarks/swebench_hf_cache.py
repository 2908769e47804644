"""Put a SWE-bench JSONL file into a Hugging Face `datasets` cache under its Hub name, as a download leaves it.

This machine cannot reach the Hugging Face Hub, so SWE-bench Verified cannot be downloaded by its name here. To
run the harness the way a user does (`coder swebench run|eval|envs --dataset princeton-nlp/SWE-bench_Verified`,
read by `datasets.load_dataset` from its cache, HF_DATASETS_OFFLINE=1), the same rows, brought another way, are
written into a cache with the `datasets` library's own parquet builder and the folder name a Hub download uses
(`namespace___name`). With the Hub reachable none of this is needed: the first `load_dataset` fills the cache.

    python benchmarks/swebench_hf_cache.py verified.jsonl --name princeton-nlp/SWE-bench_Verified --hf-home DIR
    HF_HOME=DIR HF_DATASETS_OFFLINE=1 coder swebench envs --dataset verified --gold ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BUILD = """
import json, os, sys
import datasets
from datasets.packaged_modules.parquet.parquet import Parquet
rows, name, split, scratch = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
path = os.path.join(scratch, split + ".parquet")
datasets.Dataset.from_list(rows).to_parquet(path)
short = name.split("/", 1)[1]
Parquet(dataset_name=short, config_id="default", data_files={split: path}, hash="00000000").download_and_prepare()
root = datasets.config.HF_DATASETS_CACHE
target = os.path.join(root, name.replace("/", "___").lower())
os.rename(os.path.join(root, short.lower()), target)
print(target)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jsonl", type=Path)
    ap.add_argument("--name", default="princeton-nlp/SWE-bench_Verified")
    ap.add_argument("--split", default="test")
    ap.add_argument("--hf-home", type=Path, required=True)
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:  # the published files keep the test lists as JSON strings
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if isinstance(row.get(key), list):
                row[key] = json.dumps(row[key])
    with tempfile.TemporaryDirectory() as scratch:
        listing = Path(scratch) / "rows.json"
        listing.write_text(json.dumps(rows), encoding="utf-8")
        env = {**os.environ, "HF_HOME": str(args.hf_home.resolve()), "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_OFFLINE": "1"}
        proc = subprocess.run([sys.executable, "-c", BUILD, str(listing), args.name, args.split, scratch],
                              env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    print(f"{len(rows)} rows of {args.name} (split {args.split}) in {proc.stdout.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
