"""Every input of one `check`, gathered once, before anything is parsed: `RunInputs`.

Both cache keys of a run come from it, so they cannot disagree about what an input is:
- the whole-result key (`result_key`): every input, the manifest files included;
- the partition context (`context_key`, engine/cache/partition.py): every input but the
  manifest files (a changed file changes only its own partition's key).
"""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.engine.cache.store import digest


@record(frozen=True)
class RunInputs:
    """What one check reads. `context`: every input but the manifest files (tool version,
    working directory, arguments, the environment that picks formats and colour, config,
    matrix, inventory, baseline, policies, files skipped at the walk); `files`: per manifest
    file, its path and digest, or why it is not read."""

    root: str  # the checked root on disk, resolved (and the kind of a git source: its own entry)
    cwd: str
    context: tuple[Any, ...]
    files: tuple[Any, ...]
    #: the bytes read for the digests, by path: read_repo parses these instead of reading again
    data: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @property
    def name(self) -> str:
        """Names this repo's whole-result entry in the cache directory."""
        return entry_name(self.root, self.cwd)

    @property
    def context_key(self) -> str:
        """The partition context: the digest of every input but the manifest files."""
        return digest(*self.context)

    @property
    def result_key(self) -> str:
        """The whole-result key: the digest of every input."""
        return digest(*self.context, self.files)  # the files as one part: one repr, not 50k


def entry_name(root: str, cwd: str) -> str:
    """The name of a checked root's whole-result and stamps entries (RunInputs.name)."""
    return digest(root, cwd)


#: a file changed less than this before it was read is hashed again next time, whatever its
#: stamp says: a later write within the same timestamp tick would leave the stamp as it is
#: (git's "racily clean" entries); 2 s covers the coarsest file system clocks (FAT)
RACY_NS = 2_000_000_000

#: the cache kind holding a repo's Stamps
STAMPS = "stamps"
#: the cache kind holding the blob sizes of a checked root's git index (`--staged`): each a
#: binary object id (20 bytes) and its size (8 bytes, big-endian), one after the other
BLOB_SIZES = "blobsizes"
_SIZE_RECORD = struct.calcsize(">20sQ")


def pack_sizes(sizes: dict[bytes, int]) -> bytes:
    """Blob sizes by SHA-1 object id as a BLOB_SIZES entry (object ids of another length and
    sizes past 64 bits are left out: measured again)."""
    return b"".join(
        struct.pack(">20sQ", sha, size)
        for sha, size in sorted(sizes.items())
        if len(sha) == 20 and 0 <= size < 1 << 64
    )


def valid_sizes(value: Any) -> bool:
    """Whether a cached value has the shape of a BLOB_SIZES entry (checked, never trusted)."""
    return value.__class__ is bytes and len(value) % _SIZE_RECORD == 0


def unpack_sizes(value: bytes | None) -> dict[bytes, int] | None:
    """What `pack_sizes` wrote, or None for no entry."""
    return None if value is None else dict(struct.iter_unpack(">20sQ", value))


#: per file: (its stamp when hashed, its SHA-256)
Stamps = dict[str, tuple[tuple[int, ...], str]]


#: why a file is not read once the input budget (`max_total_bytes`) is spent
OVER_BUDGET = "over the input budget"


def _charged(
    listing: Any, max_file_bytes: int, max_total_bytes: int, parts: list[Any]
) -> Iterator[Any]:
    """The files of `listing` a run reads, spending the input budget as read_repo does; the
    others go to `parts` with why they are not read (an error, their size, the budget)."""
    budget = max_total_bytes
    for ref in listing.files:
        if ref.error is not None or ref.size > max_file_bytes:
            parts.append((ref.rel, ref.size, ref.error))
        elif ref.size > budget:
            budget = 0
            parts.append((ref.rel, OVER_BUDGET))
        else:
            budget -= ref.size
            yield ref


def budget_spent(parts: tuple[Any, ...]) -> bool:
    """Whether some file of these inputs was left unread for the budget (`_charged`)."""
    return any(part[1:] == (OVER_BUDGET,) for part in parts)


def manifest_inputs(
    source: Any,
    listing: Any,
    max_file_bytes: int,
    max_total_bytes: int,
    stamps: Stamps | None = None,
) -> tuple[tuple[Any, ...], dict[str, bytes], Stamps]:
    """Per manifest file of `listing`, its path and digest (or why it is not read), spending
    the input budget as read_repo does; the bytes read, by path; and the stamps to keep.

    A file whose stamp (size, mtime, ctime, inode, device: FileRef.stamp) is the one `stamps`
    holds for it is not read again: its digest is the one held. ctime cannot be set back from
    user space, so any write changes the stamp, unless it falls in the timestamp tick of the
    stamp itself: a stamp is kept only for a file last changed RACY_NS before it was read."""
    parts: list[Any] = []
    data: dict[str, bytes] = {}
    kept: Stamps = {}
    known = stamps or {}
    settled = time.time_ns() - RACY_NS
    for ref in _charged(listing, max_file_bytes, max_total_bytes, parts):
        stamp = ref.stamp
        held = known.get(ref.rel)
        if stamp is not None and held is not None and held[0] == stamp:
            kept[ref.rel] = held
            parts.append((ref.rel, held[1]))
            continue
        try:
            blob = source.read(ref.rel, max_file_bytes)
        except OSError as err:
            parts.append((ref.rel, "unreadable", err.strerror))
            continue
        data[ref.rel] = blob
        file_digest = hashlib.sha256(blob).hexdigest()
        parts.append((ref.rel, file_digest))
        if stamp is not None and len(blob) == stamp[0] and max(stamp[1], stamp[2]) < settled:
            kept[ref.rel] = (stamp, file_digest)
    return tuple(parts), data, kept


def blob_inputs(
    source: Any, listing: Any, max_file_bytes: int, max_total_bytes: int
) -> tuple[tuple[Any, ...], dict[str, str]]:
    """`manifest_inputs` for a git source (the index, a revision): per manifest file its path
    and git object id (`blob_digest`), spending the input budget as read_repo does, and those
    ids by path. Nothing is read: git lists every file's id (`git ls-files --stage`, `git
    ls-tree`), and the id is the file's content as the source reads it."""
    parts: list[Any] = []
    held: dict[str, str] = {}
    for ref in _charged(listing, max_file_bytes, max_total_bytes, parts):
        file_digest = source.blob_digest(ref.rel)
        parts.append((ref.rel, file_digest))
        if file_digest is not None:
            held[ref.rel] = file_digest
    return tuple(parts), held


def valid_stamps(value: Any) -> bool:
    """Whether a cached value has the shape of Stamps (checked, never trusted). `marshal`
    makes builtin values only, so each is checked by its exact class (a warm run checks one
    stamp per file of the repo)."""
    if value.__class__ is not dict:
        return False
    for rel, entry in value.items():
        if rel.__class__ is not str or entry.__class__ is not tuple or len(entry) != 2:
            return False
        stamp, file_digest = entry
        if stamp.__class__ is not tuple or len(stamp) != 5 or file_digest.__class__ is not str:
            return False
        size, mtime, ctime, inode, device = stamp
        if not (
            size.__class__ is int
            and mtime.__class__ is int
            and ctime.__class__ is int
            and inode.__class__ is int
            and device.__class__ is int
        ):
            return False
    return True


def valid_outside(value: Any) -> bool:
    """The shape of a stored record of files read outside the key (a source's `outside`):
    repo-relative paths, each with the state the run found (checked by exact class, as every
    cached value is; a path that leaves the root is never looked at again)."""
    from gpudrv_check.read.source import clean_rel

    return value.__class__ is dict and all(
        rel.__class__ is str
        and state.__class__ is str
        and "\0" not in rel
        and clean_rel(rel) == rel
        for rel, state in value.items()
    )


def outside_holds(outside: dict[str, str], source: Any) -> bool:
    """Whether every file a run read or looked for outside the key (`outside`, the source's
    record of them: read/tree.py `WorkingTree.watch`) is found as that run found it: the Flux
    scope's `Kustomization` file no listing names, say (model/placeholders.py)."""
    if not outside:
        return True
    state_of = getattr(source, "state_of", None)
    if state_of is None:
        return False
    return all(
        state_of(rel, state not in ("present", "")) == state for rel, state in outside.items()
    )
