"""Standard input as a source: one multi-document stream, e.g. `kustomize build … | gpudrv-check
check -`.

The stream is the only manifest file (named by `--stdin-name` in every location). Everything
else a run needs — the config, the support matrix, `inventory:` files — is read from the
working directory, as the config names it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpudrv_check.read.exclude import Exclusions
from gpudrv_check.read.safe_io import DEFAULT_LIMIT
from gpudrv_check.read.tree import FileRef, Listing, WorkingTree

DEFAULT_STDIN_NAME = "<stdin>"


class StdinSource:
    def __init__(self, name: str, data: bytes, cwd: Path | None = None) -> None:
        self.name = name
        self.data = data
        self.disk_root = cwd or Path(".")
        self.label = "standard input"
        self._disk = WorkingTree(self.disk_root)
        # the config, the matrix and custom policies are read from the working directory
        self.config_source = self._disk

    @classmethod
    def from_stdin(cls, name: str, cwd: Path | None = None) -> StdinSource:
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
        return cls(name, data, cwd)

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        return Listing(files=[FileRef(self.name, len(self.data))])

    def read(self, rel: str, limit: int = DEFAULT_LIMIT, follow_inside: bool = False) -> bytes:
        if rel == self.name:
            return self.data
        return self._disk.read(rel, limit, follow_inside)

    def exists(self, rel: str) -> bool:
        return rel == self.name or self._disk.exists(rel)
