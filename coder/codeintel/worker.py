"""A parse worker process for cold builds: `python -m coder.codeintel.worker`.

Why a plain subprocess rather than multiprocessing: the index is built from a background thread of the app,
and forking a threaded process is unsafe, while the `spawn`/`forkserver` start methods re-import the caller's
`__main__` (a user script or a test runner). The protocol is pickles: stdin gets the root, then batches of
items (handed out on demand, so both cores stay busy to the end) and a final None; stdout answers each batch
with its list of results.
"""

from __future__ import annotations

import pickle
import sys

from coder.codeintel.build import parse_batch
from coder.host.audit import install


def main() -> int:
    install()  # a parse worker starts no process: none may start (coder/host/audit.py)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    root = pickle.load(inp)
    while (items := pickle.load(inp)) is not None:
        pickle.dump(parse_batch(root, items), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
