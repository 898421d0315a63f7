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


#: a file's stamp (FileRef.stamp: size, mtime and ctime in ns, inode, device) as stored
_STAMP = struct.Struct("<qqqQQ")
#: one file's record in a Stamps entry: its stamp, then the SHA-256 of its bytes
_RECORD = _STAMP.size + 32


class Stamps:
    """Per file: its stamp when it was hashed and its SHA-256. Stored as two values, the paths
    joined by NUL (no path holds one) and one bytes of a 72-byte record per path (`_RECORD`),
    not as a dict of tuples: a warm run loads a repo's stamps and a run after an edit stores
    them again, and 12,526 files' dict took 7.8 ms to decode and 2.2 ms to check by class,
    the two values 1.8 ms (with the index by path). Read like a mapping of path to (stamp,
    hex digest)."""

    __slots__ = ("rels", "packed", "_index")

    def __init__(self, rels: list[str], packed: bytes) -> None:
        self.rels = rels
        self.packed = packed
        self._index: dict[str, int] | None = None

    @property
    def index(self) -> dict[str, int]:
        """Each path's record number (the last, should a forged entry name one twice)."""
        found = self._index
        if found is None:
            found = self._index = dict(zip(self.rels, range(len(self.rels)), strict=True))
        return found

    def stored(self) -> tuple[str, bytes]:
        return ("\0".join(self.rels), self.packed)

    @classmethod
    def loaded(cls, value: Any) -> Stamps | None:
        """The table a stored value holds, or None when it has another shape (`valid_stamps`)."""
        if not valid_stamps(value):
            return None
        joined, packed = value
        return cls(joined.split("\0") if packed else [], packed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stamps):
            return NotImplemented
        return self.packed == other.packed and self.rels == other.rels

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self.rels)

    def __iter__(self) -> Iterator[str]:
        return iter(self.rels)

    def __contains__(self, rel: object) -> bool:
        return rel in self.index

    def __getitem__(self, rel: str) -> tuple[tuple[int, ...], str]:
        at = self.index[rel] * _RECORD
        record = self.packed[at : at + _RECORD]
        return _STAMP.unpack_from(record), record[_STAMP.size :].hex()

    def __repr__(self) -> str:
        return f"Stamps({len(self.rels)} files)"


def _packed(stamp: Any) -> bytes | None:
    """A stamp as its record stores it; None for one of another shape or out of range (that
    file is then hashed every run)."""
    try:
        return _STAMP.pack(*stamp)
    except (struct.error, TypeError):
        return None


def valid_stamps(value: Any) -> bool:
    """Whether a cached value has the shape of a Stamps entry (checked, never trusted): a
    string and a bytes, as many paths in the one as records in the other."""
    if value.__class__ is not tuple or len(value) != 2:
        return False
    joined, packed = value
    if joined.__class__ is not str or packed.__class__ is not bytes:
        return False
    count, rest = divmod(len(packed), _RECORD)
    if rest:
        return False
    return joined.count("\0") == count - 1 if count else not joined


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
) -> tuple[tuple[Any, ...], dict[str, bytes], Stamps, dict[str, str]]:
    """Per manifest file of `listing`, its path and digest (or why it is not read), spending
    the input budget as read_repo does; the bytes read, by path; the stamps to keep; and the
    digests of the files not read, by path.

    A file whose stamp (size, mtime, ctime, inode, device: FileRef.stamp) is the one `stamps`
    holds for it is not read again: its digest is the one held. ctime cannot be set back from
    user space, so any write changes the stamp, unless it falls in the timestamp tick of the
    stamp itself: a stamp is kept only for a file last changed RACY_NS before it was read."""
    parts: list[Any] = []
    data: dict[str, bytes] = {}
    held: dict[str, str] = {}
    rels: list[str] = []
    records: list[bytes] = []
    index: dict[str, int] = stamps.index if stamps is not None else {}
    index_get = index.get
    table = stamps.packed if stamps is not None else b""
    width = _STAMP.size
    settled = time.time_ns() - RACY_NS
    for ref in _charged(listing, max_file_bytes, max_total_bytes, parts):
        rel = ref.rel
        stamp = ref.stamp
        packed = _packed(stamp) if stamp is not None and "\0" not in rel else None
        number = index_get(rel)
        if packed is not None and number is not None:
            at = number * _RECORD
            if table[at : at + width] == packed:
                rels.append(rel)
                records.append(table[at : at + _RECORD])
                file_digest = table[at + width : at + _RECORD].hex()
                parts.append((rel, file_digest))
                held[rel] = file_digest
                continue
        try:
            blob = source.read(rel, max_file_bytes)
        except OSError as err:
            parts.append((rel, "unreadable", err.strerror))
            continue
        data[rel] = blob
        raw = hashlib.sha256(blob).digest()
        parts.append((rel, raw.hex()))
        if packed is not None and len(blob) == stamp[0] and max(stamp[1], stamp[2]) < settled:
            rels.append(rel)
            records.append(packed + raw)
    return tuple(parts), data, Stamps(rels, b"".join(records)), held


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
