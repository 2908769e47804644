"""Workspace file access from the host that never follows a link out of the workspace: `resolve` walks a path
beneath a directory handle (openat2 where the kernel has it, a component walk otherwise), `beneath` builds the
file operations on it (read, write, replace, remove)."""
