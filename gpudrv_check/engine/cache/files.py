"""The per-file cache `read_repo` consults (its protocol: read/manifests.py `FileCache`).

The reader never knows how entries are keyed or stored: it asks this object whether the bytes
of a file are known, hands it what it parsed, and asks it which files this run must decode
(the partition plan, engine/cache/partition.py). The `files-*` entries of a repo hold, by
path, a `FileEntry`: valid for one tool version and one way of reading (max_file_bytes, the
Helm chart template directories, the skim plan). A file's entry sits in one of `BUCKETS`
cache entries, chosen by a stable hash of its path: a run rewrites the buckets whose files
changed, not the whole (40k files: 29 MB, which every edit run wrote again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple
from zlib import crc32

from gpudrv_check.engine.cache.partition import (
    PLACEHOLDERS,
    Plan,
    Summary,
    node_view,
    object_count,
    plan,
    summarize,
    valid_summary,
    valid_view,
)
from gpudrv_check.engine.cache.store import Cache, digest

if TYPE_CHECKING:
    from gpudrv_check.read.manifests import FileResult

KIND = "files"
#: the layout of the entries (a Summary once held capacity digests; 4: a node file's view)
FORMAT = 4
#: how many cache entries a repo's file entries are spread over
BUCKETS = 64


def applied_summary(summary: Summary, namespaces: tuple) -> Summary:
    """A file's summary with its objects in the namespaces a kustomization builds them into
    (the same objects as `read_repo` gives the run; pseudo-objects kept as they are)."""
    from gpudrv_check.read.kustomization import in_namespaces

    objects = tuple(
        (kind, applied)
        for kind, written in summary[0]
        for applied in (
            (written,)
            if (kind, written) == PLACEHOLDERS
            else in_namespaces(kind, written, namespaces)
        )
    )
    return (objects, summary[1])


def bucket(rel: str) -> int:
    """The bucket of a path: the same in every process (not `hash`, which is salted)."""
    return crc32(rel.encode("utf-8", "surrogatepass")) % BUCKETS


class FileEntry(NamedTuple):
    """What one file yielded: the SHA-256 of its bytes, whether it was read as a Helm chart
    template, its FileResult encoded (read/codec.py; empty until a run needs it, see
    `FilesCache.add`), its partition summary, and, for a file of Node objects only, its view
    (engine/cache/partition.py `node_view`; None for any other file)."""

    digest: str
    helm: bool
    blob: bytes
    summary: Summary
    view: Any = None

    @classmethod
    def loaded(cls, value: Any) -> FileEntry | None:
        """The entry of a stored value, or None when it has not the shape of one (a cache
        entry is checked, never trusted to be of the right type; `marshal` makes builtin
        values only, so each field is checked by its exact class)."""
        if value.__class__ is not tuple or len(value) != 5:
            return None
        file_digest, helm, blob, summary, view = value
        if (
            file_digest.__class__ is not str
            or helm.__class__ is not bool
            or blob.__class__ is not bytes
            or not valid_summary(summary)
            or not (view is None or valid_view(view))
        ):
            return None
        return tuple.__new__(cls, value)

    def stored(self) -> tuple[str, bool, bytes, Summary, Any]:
        """As `marshal` stores it: a plain tuple (it refuses tuple subclasses)."""
        return (self.digest, self.helm, self.blob, self.summary, self.view)


def load_entries(value: Any) -> dict[str, FileEntry] | None:
    """The entries of a stored `files` value, or None when any of them is malformed."""
    if value.__class__ is not dict:
        return None
    out = {}
    loaded = FileEntry.loaded
    for rel, stored in value.items():
        entry = loaded(stored)
        if rel.__class__ is not str or entry is None:
            return None
        out[rel] = entry
    return out


class FilesCache:
    """The per-file cache and the partition plan of one run. `context`: the digest of every
    input but the manifest files (engine/cache/inputs.py `RunInputs.context_key`); None: no
    partition plan, every file is decoded and evaluated. `redo`: the namespaces the plan may
    not take from the cache; None: none (every partition is evaluated and stored again)."""

    def __init__(
        self, cache: Cache, context: str | None = None, redo: frozenset[str] | None = frozenset()
    ) -> None:
        self.cache = cache
        self.context = context
        self.redo = redo
        self.name = self.key = ""
        self.source: Any = None
        self.cached: dict[str, FileEntry] = {}
        self.fresh: dict[str, FileEntry] = {}
        self._where: dict[str, int] = {}  # the bucket of each path loaded
        self._counts = [0] * BUCKETS  # how many entries each bucket held when loaded
        self._dirty: set[int] = set()  # the buckets a file was added to or changed in

    def open(self, source: Any, reading: tuple[object, ...]) -> None:
        """Load the entries of `source` stored for this way of `reading`."""
        self.source = source  # the plan asks it about files read outside the key
        self.name = digest(getattr(source, "disk_root", ""), type(source).__name__)
        # the key holds the number of buckets: an entry is its bucket's, never another's
        self.key = digest(FORMAT, BUCKETS, *reading)
        cached: dict[str, FileEntry] = {}
        where = self._where
        for number in range(BUCKETS):
            entries = load_entries(self.cache.load(KIND, self._bucket_name(number), self.key))
            if not entries:
                continue  # missing or malformed: its files are read
            cached.update(entries)
            self._counts[number] = len(entries)
            where.update(dict.fromkeys(entries, number))
        self.cached = cached

    def _bucket_name(self, number: int) -> str:
        return f"{self.name}/{number}"

    def hit(self, rel: str, file_digest: str, helm: bool) -> bool:
        """Whether the cache holds what these bytes yield (`result` decodes it)."""
        entry = self.cached.get(rel)
        if entry is None or (entry.digest, entry.helm) != (file_digest, helm):
            return False
        self.fresh[rel] = entry
        return True

    def knows(self, rel: str, file_digest: str, helm: bool) -> bool:
        """Whether `hit` would answer yes (nothing is recorded)."""
        entry = self.cached.get(rel)
        return entry is not None and (entry.digest, entry.helm) == (file_digest, helm)

    def has_result(self, rel: str) -> bool:
        """Whether a hit's entry holds an encoded result (`result` may still not decode it)."""
        return bool(self.fresh[rel].blob)

    def result(self, rel: str) -> FileResult | None:
        """The FileResult of a hit, or None when its entry holds none (not encoded yet) or
        does not decode: the caller parses the bytes again and hands the result to `needed`."""
        from gpudrv_check.read.codec import CodecError, decode

        blob = self.fresh[rel].blob
        if not blob:
            return None
        try:
            return decode(blob)
        except CodecError:
            return None

    def add(self, result: FileResult, helm: bool, blob: bytes | None, placeholders: bool) -> None:
        """What a file freshly parsed yields (`blob`: already encoded by a worker, or None).

        Its result is not encoded here: most runs never decode most files (a run after an
        edit decodes the shared files and the edited namespace's), and encoding every file
        cost a cold run as much as a sixth of its reading (10k corpus: 0.23 s). The summary
        is stored now; the result the first time a run needs it (`needed`)."""
        view = None if placeholders else node_view(result)
        entry = FileEntry(result.digest, helm, blob or b"", summarize(result, placeholders), view)
        self.fresh[result.rel] = entry
        self._dirty.add(self._where.get(result.rel, bucket(result.rel)))

    def needed(self, result: FileResult) -> None:
        """A hit parsed again because its result was not stored (or did not decode): stored
        now, encoded, so the next run that needs it decodes it."""
        from gpudrv_check.read.codec import encode

        entry = self.fresh[result.rel]
        self.fresh[result.rel] = entry._replace(blob=encode(result))
        self._dirty.add(self._where.get(result.rel, bucket(result.rel)))

    def placeholders(self, rel: str) -> bool:
        """Whether a hit's file holds `${` (its summary says so: partition.py PLACEHOLDERS)."""
        return PLACEHOLDERS in self.fresh[rel].summary[0]

    def save(self) -> None:
        """Store the buckets whose entries differ from what was loaded: a file added or
        changed in it, or one gone (a bucket no file of which was added or changed holds
        only hits, the entries it was loaded with: the same ones when as many)."""
        groups: list[dict[str, FileEntry]] = [{} for _ in range(BUCKETS)]
        where = self._where
        for rel, entry in self.fresh.items():
            number = where.get(rel)
            groups[bucket(rel) if number is None else number][rel] = entry
        for number, group in enumerate(groups):
            if number not in self._dirty and len(group) == self._counts[number]:
                continue
            if group:
                stored = {rel: entry.stored() for rel, entry in group.items()}
                self.cache.store(KIND, self._bucket_name(number), self.key, stored)
            else:
                self.cache.drop(KIND, self._bucket_name(number))

    def partitions(
        self, reads: list[tuple[str, str]], namespaces: dict[str, tuple] | None = None
    ) -> Plan | None:
        """Which files this run decodes, given how each was read (path, what it was read as:
        its digest and Helm flag, a Kustomize patch, why it was not read); None: all.
        `namespaces`: the files a kustomization builds into other namespaces than they say
        (read/kustomization.py): a summary is stored as written, so they are planned in the
        namespaces the run puts their objects in."""
        if self.context is None:
            return None
        metas = []
        for rel, how in reads:
            entry = self.fresh.get(rel)
            summary = entry.summary if entry is not None else None
            if summary is not None and namespaces and rel in namespaces:
                summary = applied_summary(summary, namespaces[rel])
            # a node file's view stands for its content when the file was read as the
            # entry says (its digest), not a patch or unreadable
            view = None
            if entry is not None and entry.view is not None and how.startswith(entry.digest):
                view = (entry.digest, entry.view)
            metas.append((rel, how, summary, view))
        return plan(self.cache, self.name, self.context, metas, self.redo, self.source)

    def unread(self, rel: str) -> tuple[int, int]:
        """The objects and skipped documents of a file this run does not decode (it was read or
        hit: it has a summary)."""
        summary = self.fresh[rel].summary
        return object_count(summary), summary[1]
