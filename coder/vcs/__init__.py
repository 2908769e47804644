"""Git integration: the repository and its state (`repo`), checkpoints in hidden refs for /undo and /rewind
(`checkpoints`), commits with hooks run in the sandbox and generated messages (`commit`, `message`), and the
unified-diff parser everything shares (`patch`). Nothing here imports a heavy module at import time."""
