"""Workspace trust: what a repository defines (`reader`), the user's decisions about it (`decisions`), which keys a
repository's own config may set (`repo_config`) and the paths the editor never writes without asking
(`protected`)."""
