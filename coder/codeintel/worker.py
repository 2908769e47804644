"""A parse worker process for cold builds: `python -m coder.codeintel.worker`.

Why a plain subprocess rather than multiprocessing: the index is built from a background thread of the app,
and forking a threaded process is unsafe, while the `spawn`/`forkserver` start methods re-import the caller's
`__main__` (a user script or a test runner). Here the protocol is two pickles: stdin gets (root, items),
stdout returns lists of results in batches and a final None.
"""

from __future__ import annotations

import pickle
import sys

from coder.codeintel.build import BATCH_FILES, parse_batch


def main() -> int:
    root, items = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer
    for i in range(0, len(items), BATCH_FILES):
        pickle.dump(parse_batch(root, items[i:i + BATCH_FILES]), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
    pickle.dump(None, out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
