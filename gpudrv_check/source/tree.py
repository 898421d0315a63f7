"""The working tree as a source of files: a deterministic, bounded walk."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIP_DIRS = frozenset((".git", ".hg", ".svn"))
# our own config is not a manifest
SKIP_FILES = frozenset((".gpudrv-check.yaml",))


@dataclass(slots=True)
class FileRef:
    rel: str  # POSIX path relative to the root
    size: int


@dataclass(slots=True)
class Skipped:
    rel: str
    reason: str


@dataclass
class Listing:
    files: list[FileRef] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def inside_root(root: str | os.PathLike[str], rel: str) -> bool:
    """Whether `rel` stays inside `root` once `..` and symbolic links are resolved."""
    try:
        (Path(root) / rel).resolve().relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False
    return True


def is_excluded(rel: str, patterns: list[str]) -> bool:
    """Glob match on the relative POSIX path; a pattern naming a directory excludes its tree."""
    for pattern in patterns:
        pat = pattern.strip().lstrip("./") if pattern.startswith("./") else pattern.strip()
        if not pat:
            continue
        pat = pat.rstrip("/")
        if (
            fnmatch.fnmatchcase(rel, pat)
            or fnmatch.fnmatchcase(rel, pat + "/*")
            or fnmatch.fnmatchcase(rel, "*/" + pat)
            and "/" not in pat
        ):
            return True
    return False


class WorkingTree:
    """Files under a directory. Symbolic links are never followed (no escape, no loops)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.disk_root = self.root
        self.label = str(root)

    def list_manifests(self, exclude: list[str]) -> Listing:
        listing = Listing()
        root = str(self.root)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            rel_dir = os.path.relpath(dirpath, root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            keep = []
            for name in sorted(dirnames):
                rel = rel_dir + name
                full = os.path.join(dirpath, name)
                if name in SKIP_DIRS:
                    continue
                if os.path.islink(full):
                    listing.skipped.append(
                        Skipped(rel, "symbolic link to a directory, not followed")
                    )
                elif is_excluded(rel, exclude):
                    listing.skipped.append(Skipped(rel + "/", "excluded by config"))
                else:
                    keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(MANIFEST_SUFFIXES) or (not rel_dir and name in SKIP_FILES):
                    continue
                rel = rel_dir + name
                full = os.path.join(dirpath, name)
                if is_excluded(rel, exclude):
                    listing.skipped.append(Skipped(rel, "excluded by config"))
                    continue
                if os.path.islink(full):
                    listing.skipped.append(Skipped(rel, "symbolic link, not followed"))
                    continue
                try:
                    size = os.stat(full, follow_symlinks=False).st_size
                except OSError as err:
                    listing.skipped.append(Skipped(rel, f"cannot stat: {err.strerror}"))
                    continue
                listing.files.append(FileRef(rel, size))
        listing.files.sort(key=lambda f: f.rel)
        listing.skipped.sort(key=lambda s: s.rel)
        return listing

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def exists(self, rel: str) -> bool:
        path = self.root / rel
        return path.is_file()

    def resolve_inside(self, rel: str) -> Path | None:
        """The real path of `rel` when it stays inside the root after resolving links."""
        try:
            real = (self.root / rel).resolve()
            real.relative_to(self.root.resolve())
        except (OSError, ValueError):
            return None
        return real
