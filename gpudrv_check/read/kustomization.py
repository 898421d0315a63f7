"""Kustomize patch files: partial objects that only make sense applied to their base.

A file named by a `kustomization.yaml` in `patches`, `patchesStrategicMerge` or
`patchesJson6902` is a patch (a strategic-merge fragment or a JSON 6902 operation list), not an
object: checking it alone would report fields it never meant to set. Such a file is reported
once as not checkable (GPU009) and contributes no object. Paths resolve against the
kustomization's directory and never leave the repo root; inline patches and remote bases are
not files and are ignored.
"""

from __future__ import annotations

import posixpath
from typing import Any

from gpudrv_check.core.located import LMap, LSeq, Pos
from gpudrv_check.core.records import record

KUSTOMIZATION_FILES = frozenset(("kustomization.yaml", "kustomization.yml"))
PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")


@record(frozen=True, slots=True)
class PatchRef:
    """Where a patch file is named: the kustomization, the field and the entry's position."""

    kustomization: str
    field: str
    line: int
    column: int


def is_kustomization(rel: str) -> bool:
    return posixpath.basename(rel) in KUSTOMIZATION_FILES


def resolve(kustomization: str, path: str) -> str | None:
    """The repo-relative path a kustomization entry names, or None when it is not a local file."""
    path = path.strip()
    if not path or "\n" in path or ": " in path or path.startswith(("{", "[", "-")):
        return None  # an inline patch, not a file name
    if "://" in path or path.startswith(("/", "git@", "github.com/")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(kustomization), path))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


def _entry_path(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry  # patchesStrategicMerge (and very old `patches`) list plain paths
    if isinstance(entry, dict):
        path = entry.get("path")
        return path if isinstance(path, str) else None
    return None


def patch_refs(kustomization: str, data: Any) -> dict[str, PatchRef]:
    """Patch files named by one parsed kustomization document, by repo-relative path."""
    out: dict[str, PatchRef] = {}
    if not isinstance(data, LMap):
        return out
    for field in PATCH_FIELDS:
        entries = data.get(field)
        if not isinstance(entries, LSeq):
            continue
        for index, entry in enumerate(entries):
            path = _entry_path(entry)
            target = resolve(kustomization, path) if path is not None else None
            if target is None or target in out:
                continue
            pos: Pos = entries.item_pos(index)
            if isinstance(entry, LMap) and "path" in entry:
                pos = entry.key_pos("path")
            out[target] = PatchRef(kustomization, field, pos[0], pos[1])
    return out
