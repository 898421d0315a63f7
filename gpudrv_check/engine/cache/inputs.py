"""Every input of one `check`, gathered once, before anything is parsed: `RunInputs`.

Both cache keys of a run come from it, so they cannot disagree about what an input is:
- the whole-result key (`result_key`): every input, the manifest files included;
- the partition context (`context_key`, engine/cache/partition.py): every input but the
  manifest files (a changed file changes only its own partition's key).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from gpudrv_check.engine.cache.store import digest


@dataclass(frozen=True)
class RunInputs:
    """What one check reads. `context`: every input but the manifest files (tool version,
    working directory, arguments, the environment that picks formats and colour, config,
    matrix, inventory, baseline, policies, files skipped at the walk); `files`: per manifest
    file, its path and digest, or why it is not read."""

    root: str  # the checked root on disk, resolved
    cwd: str
    context: tuple[Any, ...]
    files: tuple[Any, ...]
    #: the bytes read for the digests, by path: read_repo parses these instead of reading again
    data: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @property
    def name(self) -> str:
        """Names this repo's whole-result entry in the cache directory."""
        return digest(self.root, self.cwd)

    @property
    def context_key(self) -> str:
        """The partition context: the digest of every input but the manifest files."""
        return digest(*self.context)

    @property
    def result_key(self) -> str:
        """The whole-result key: the digest of every input."""
        return digest(*self.context, *self.files)


def manifest_inputs(
    source: Any, listing: Any, max_file_bytes: int, max_total_bytes: int
) -> tuple[tuple[Any, ...], dict[str, bytes]]:
    """Per manifest file of `listing`, its path and digest (or why it is not read), spending
    the input budget as read_repo does; and the bytes read, by path."""
    parts: list[Any] = []
    data: dict[str, bytes] = {}
    budget = max_total_bytes  # as read_repo spends it: what is over it is not read
    for ref in listing.files:
        if ref.error is not None or ref.size > max_file_bytes:
            parts.append((ref.rel, ref.size, ref.error))
            continue
        if ref.size > budget:
            budget = 0
            parts.append((ref.rel, "over the input budget"))
            continue
        budget -= ref.size
        try:
            blob = source.read(ref.rel, max_file_bytes)
        except OSError as err:
            parts.append((ref.rel, "unreadable", err.strerror))
            continue
        data[ref.rel] = blob
        parts.append((ref.rel, hashlib.sha256(blob).hexdigest()))
    return tuple(parts), data
