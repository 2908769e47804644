"""Workspace trust: what a repository defines (`reader`), the user's decisions about it (`decisions`) and the paths
the editor never writes without asking (`protected`). Which keys a repository's own config may set is declared
with each key (coder/config/sections.py, `repo=`) and applied by coder/config/repository.py."""
