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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple
from zlib import crc32

from gpudrv_check.core.located import LMap
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
    from gpudrv_check.core.manifest import Manifest
    from gpudrv_check.read.manifests import FileResult

KIND = "files"
#: the layout of the entries (a Summary once held capacity digests; 4: a node file's view;
#: 5: a node file's facts)
FORMAT = 5
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
    (engine/cache/partition.py `node_view`; None for any other file) and, once a run decoded
    it, what the model makes of it (`facts`: the header of each object and
    model/inventory.py `node_file_facts`, with the file's problems and skipped documents), from
    which the next runs build its nodes without decoding its trees (`FilesCache.result`)."""

    digest: str
    helm: bool
    blob: bytes
    summary: Summary
    view: Any = None
    facts: Any = None

    @classmethod
    def loaded(cls, value: Any) -> FileEntry | None:
        """The entry of a stored value, or None when it has not the shape of one (a cache
        entry is checked, never trusted to be of the right type; `marshal` makes builtin
        values only, so each field is checked by its exact class)."""
        if value.__class__ is not tuple or len(value) != 6:
            return None
        file_digest, helm, blob, summary, view, _ = value  # the facts: checked when used
        if (
            file_digest.__class__ is not str
            or helm.__class__ is not bool
            or blob.__class__ is not bytes
            or not valid_summary(summary)
            or not (view is None or valid_view(view))
        ):
            return None
        return tuple.__new__(cls, value)

    def stored(self) -> tuple[str, bool, bytes, Summary, Any, Any]:
        """As `marshal` stores it: a plain tuple (it refuses tuple subclasses)."""
        return (self.digest, self.helm, self.blob, self.summary, self.view, self.facts)


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

    def result(
        self, rel: str, reparse: Callable[[], FileResult] | None = None
    ) -> FileResult | None:
        """The FileResult of a hit, or None when its entry holds none (not encoded yet) or
        does not decode: the caller parses the bytes again and hands the result to `needed`.
        A node file whose facts are kept gives its objects undecoded (`_undecoded`; `reparse`
        parses the file again should its trees, asked for later, not decode)."""
        from gpudrv_check.read.codec import CodecError, decode

        entry = self.fresh[rel]
        blob = entry.blob
        if not blob:
            return None
        if entry.facts is not None and entry.view is not None:
            undecoded = _undecoded(rel, entry, reparse)
            if undecoded is not None:
                return undecoded
        try:
            result = decode(blob)
        except CodecError:
            return None
        if entry.view is not None:
            self._keep_facts(rel, result)
        return result

    def _keep_facts(self, rel: str, result: FileResult) -> None:
        """Keep what the model makes of a node file's objects with its entry (a file of Node
        objects without placeholders: the only ones with a view), for the next runs."""
        from gpudrv_check.model.inventory import node_file_facts

        entry = self.fresh[rel]
        facts = node_file_facts(result.manifests)
        if facts is None:
            return
        headers = tuple(
            (m.file, m.doc, m.api_version, m.kind, m.name, m.namespace, m.item)
            for m in result.manifests
        )
        problems = tuple(f.record() for f in result.problems)
        skipped = tuple((s.rel, s.reason) for s in result.skipped)
        kept = (headers, facts, problems, skipped)
        if kept != entry.facts:
            self.fresh[rel] = entry._replace(facts=kept)
            self._dirty.add(self._where.get(rel, bucket(rel)))

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
        if entry.view is not None:
            self._keep_facts(result.rel, result)

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


class _Trees:
    """The trees of a node file's undecoded objects (core/manifest.py `CachedManifest`), all
    decoded when the first of them is asked for; each object holds this and its index (no
    reference back: no cycle for the collector). `places`: each object's (doc, item)."""

    __slots__ = ("blob", "places", "reparse", "trees")

    def __init__(
        self,
        blob: bytes,
        places: list[tuple[int, int | None]],
        reparse: Callable[[], FileResult] | None,
    ) -> None:
        self.blob = blob
        self.places = places
        self.reparse = reparse
        self.trees: list[Any] | None = None

    def tree(self, index: int) -> Any:
        if self.trees is None:
            self.trees = self._decoded()
        return self.trees[index]

    def _decoded(self) -> list[Any]:
        from gpudrv_check.read.codec import CodecError, decode

        count = len(self.places)
        try:
            found = decode(self.blob).manifests
        except CodecError:
            found = []
        if len(found) != count and self.reparse is not None:
            found = self.reparse().manifests  # the entry checked out, yet did not decode
        if len(found) == count:
            return [m.data for m in found]
        # the entry and the file disagree (a damaged entry that passed its MAC, and the file
        # changed during the run): each object takes the tree at its place in the file, or
        # an empty one at the file's start, and the run goes on
        at = {(m.doc, m.item): m.data for m in found}
        return [at[place] if place in at else LMap((1, 1)) for place in self.places]


def _undecoded(
    rel: str, entry: FileEntry, reparse: Callable[[], FileResult] | None
) -> FileResult | None:
    """A node file's FileResult from its kept facts, its objects' trees not decoded until
    asked for (`_Trees`); None when the facts have not the shape `_keep_facts` gives them."""
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.core.manifest import CachedManifest
    from gpudrv_check.model.inventory import loaded_node_facts
    from gpudrv_check.read.manifests import FileResult
    from gpudrv_check.read.tree import Skipped

    kept = entry.facts
    if kept.__class__ is not tuple or len(kept) != 4:
        return None
    headers, facts, problems, skipped = kept
    if not (
        headers.__class__ is tuple
        and facts.__class__ is tuple
        and problems.__class__ is tuple
        and skipped.__class__ is tuple
        # one per object, as the view has one (a file with a view has objects)
        and len(headers) == len(facts) == len(entry.view[1]) > 0
    ):
        return None
    loaded = []
    for header, value in zip(headers, facts, strict=True):
        node_facts = loaded_node_facts(value)
        if node_facts is None or not _valid_header(header, rel):
            return None
        loaded.append(node_facts)
    trees = _Trees(entry.blob, [(header[1], header[6]) for header in headers], reparse)
    manifests: list[Manifest] = [
        CachedManifest.undecoded(header, node_facts, (trees, index))
        for index, (header, node_facts) in enumerate(zip(headers, loaded, strict=True))
    ]
    result = FileResult(rel, digest=entry.digest)
    result.manifests = manifests
    try:
        result.problems = [Finding.from_record(p) for p in problems]
    except ValueError:
        return None
    if not all(
        s.__class__ is tuple and len(s) == 2 and all(t.__class__ is str for t in s) for s in skipped
    ):
        return None
    result.skipped = [Skipped(r, why) for r, why in skipped]
    return result


def _valid_header(header: Any, rel: str) -> bool:
    """(file, doc, api_version, kind, name, namespace, item) of a Node object of `rel`."""
    if header.__class__ is not tuple or len(header) != 7:
        return False
    file, doc, api, kind, name, namespace, item = header
    return (
        file == rel
        and file.__class__ is str
        and doc.__class__ is int
        and (api, kind) == ("v1", "Node")
        and (name is None or name.__class__ is str)
        and (namespace is None or namespace.__class__ is str)
        and (item is None or item.__class__ is int)
    )
