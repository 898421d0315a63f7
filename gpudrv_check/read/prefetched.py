"""The manifest bytes `check` read before a run (read/manifests.py `read_repo` takes them).

A module of its own: a run the whole-result cache answers makes one and imports nothing of
the readers (the line reader's expressions alone take milliseconds to compile).
"""

from __future__ import annotations


class Prefetched(dict):
    """Manifest bytes `check` read before the run (for the cache keys), by path; `held`: the
    digests of the files it did not read, because their stamps vouch for them (the working
    tree, engine/cache/inputs.py) or git lists them (the index, a revision: their object ids).
    `read_repo` reads a held file only when the per-file cache does not answer for that digest,
    or when the run decodes a file whose result it holds none of."""

    def __init__(
        self,
        data: dict[str, bytes],
        held: dict[str, str] | None = None,
        digests: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data)
        self.held: dict[str, str] = held or {}
        #: the SHA-256 of the bytes it holds, by path, when the caller computed them (a
        #: working tree's key hashes every file it reads): read_repo does not hash them again
        self.digests: dict[str, str] = digests or {}
        #: set by read_repo when a held file was read with other content than its digest:
        #: the whole-result key no longer names what the run read (see RepoContent.unsettled)
        self.unsettled = False
