"""Standard input as a source: one multi-document stream, e.g. `kustomize build … | gpudrv-check
check -`.

The stream is the only manifest file (named by `--stdin-name` in every location). Everything
else a run needs — the config, the support matrix, `inventory:` files — is read from the
working directory, as the config names it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gpudrv_check.read.exclude import Exclusions
from gpudrv_check.read.safe_io import DEFAULT_LIMIT
from gpudrv_check.read.tree import FileRef, Listing, WorkingTree

DEFAULT_STDIN_NAME = "<stdin>"


class StdinSource:
    """Standard input as the only manifest file, read once, when first listed or read, and
    never more than `limit` bytes of it (the config's max_file_bytes, given to `bound` once
    the config is read: a stream over it is reported, not held in memory)."""

    def __init__(
        self, name: str, data: bytes | None, cwd: Path | None = None, stream: Any = None
    ) -> None:
        self.name = name
        self._data = data
        self._stream = stream
        self._over = False  # the stream went on past `limit`
        self.limit = DEFAULT_LIMIT
        self.disk_root = cwd or Path(".")
        self.label = "standard input"
        self._disk = WorkingTree(self.disk_root)
        # the config, the matrix and custom policies are read from the working directory
        self.config_source = self._disk

    @classmethod
    def from_stdin(cls, name: str, cwd: Path | None = None) -> StdinSource:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream without bytes below it (tests, embedding)
            return cls(name, sys.stdin.read().encode("utf-8"), cwd)
        return cls(name, None, cwd, stream)

    def bound(self, max_file_bytes: int, max_total_bytes: int) -> None:  # noqa: ARG002
        """The config's limits, before the stream is first read: it is one file."""
        self.limit = max_file_bytes

    @property
    def data(self) -> bytes:
        """The bytes of the stream, at most `limit` of them (see `over_limit`)."""
        if self._data is None:
            chunks, size = [], 0
            while size <= self.limit:
                chunk = self._stream.read(min(1 << 20, self.limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
            self._over = len(data) > self.limit
            self._data = data[: self.limit] if self._over else data
        return self._data

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        data = self.data
        if self._over:
            why = (
                f"standard input is over the max_file_bytes limit of {self.limit} bytes; not "
                "read (raise max_file_bytes in .gpudrv-check.yaml, or check the stream in parts)"
            )
            return Listing(files=[FileRef(self.name, self.limit + 1, why)])
        return Listing(files=[FileRef(self.name, len(data))])

    def read(self, rel: str, limit: int = DEFAULT_LIMIT, follow_inside: bool = False) -> bytes:
        if rel == self.name:
            return self.data
        return self._disk.read(rel, limit, follow_inside)

    def exists(self, rel: str) -> bool:
        return rel == self.name or self._disk.exists(rel)
