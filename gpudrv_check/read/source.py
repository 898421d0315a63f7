"""Where bytes come from: the working tree, a git revision, or standard input.

Every source answers the same four questions, so the loader never knows which one it reads:
which manifest files are there (`list_manifests`), what does a file hold (`read`), is there a
file at a path (`exists`), and how do we name the source in messages (`label`). Paths are POSIX
and relative to the checked root.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Protocol

from gpudrv_check.read.exclude import Exclusions
from gpudrv_check.read.tree import FileRef, Listing, Skipped, WorkingTree

__all__ = ["FileRef", "Listing", "Skipped", "Source", "WorkingTree", "clean_rel"]


class Source(Protocol):
    label: str
    # the directory on disk this source stands for (the checked PATH); used to show paths given
    # on the command line relative to it, and by Kustomize (which renders from disk)
    disk_root: Path

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing: ...

    def read(self, rel: str, limit: int = ..., follow_inside: bool = False) -> bytes:
        """The bytes of `rel`: at most `limit` (read/safe_io.py refuses more), no link followed
        (`follow_inside`: links that stay inside the root are, for the paths the config names).
        """
        ...

    def exists(self, rel: str) -> bool: ...


def clean_rel(rel: str) -> str | None:
    """`rel` as a normalised POSIX path inside the root; None when absolute or leaving it."""
    if not rel or rel.startswith("/") or posixpath.isabs(rel) or "\\" in rel:
        return None
    norm = posixpath.normpath(rel)
    if norm == "." or norm == ".." or norm.startswith("../"):
        return None
    return norm
