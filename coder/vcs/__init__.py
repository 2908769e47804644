"""Git integration: the repository as one object (`repo`: `Repo`, its private index, every host git command of
review, commit, checkpoints and isolated trees), checkpoints in hidden refs for /undo and /rewind (`checkpoints`,
`restore_files`), commits (`commit`) with the repository's hooks run in the sandbox (`hooks`) and generated
messages (`message`), agents' isolated trees (`worktrees`), and the unified-diff parser everything shares
(`patch`). Nothing here imports a heavy module at import time."""
