"""File editing that lands: a pure library, usable without a session.

- `matcher.find_replacement(content, old, new)`: exact -> trailing whitespace -> uniform indentation shift ->
  line-number prefixes -> fuzzy (unique, high similarity); three-way merge so only changed lines come from
  new_str; precise MatchError otherwise.
- `ops.Editor(workspace)`: create / str_replace / multi_edit / insert / undo on files, with path checks,
  staleness checks, the syntax guard and atomic writes that keep encoding, BOM, line endings and mode.
  All file I/O goes beneath a handle on the workspace, never through a symlink (`paths.locate`,
  coder/fs/beneath.py), so the sandbox cannot swap a folder for a link and steer an edit or a view outside.
- `view.view(editor, path)`: numbered file views, directory listings, outlines of large files.
- `patch.parse_patch` / `patch_apply.apply_patch(text, workspace)`: Codex patches, all or nothing.
- `state.EditState`: per-session undo history and view stamps (`ctx.services["edit_state"]`).
"""
