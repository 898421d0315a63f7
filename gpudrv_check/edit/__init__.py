"""Repo-side edits `gpudrv-check plan --write` makes: a matrix row, a node's driver labels.

Every edit is computed in memory from the bytes the checker read, refused when the file changed
since, when its real path (symbolic links resolved) leaves the repo root, or when it would
touch anything but the intended lines; then written atomically (a temporary file in the same
directory, renamed over the original). A failure at any point leaves the original bytes.
"""
