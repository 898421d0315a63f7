"""The content-hash cache of `check`: what each file contributes, and whole results.

Where: `--cache-dir DIR`, else `$XDG_CACHE_HOME/gpudrv-check`, else `~/.cache/gpudrv-check`
(created with mode 0700: it is the user's own). `--no-cache` neither reads nor writes it.

Two kinds of entry, one file each per checked repo root:
- `files-*`: per file, its path, the SHA-256 of its bytes and its FileResult (load/codec.py),
  valid for one tool version and one reading configuration (max_file_bytes);
- `result-*`: the rendered reports, exit code and stderr of the last `check`, keyed by the
  digest of every input (tool version, arguments, environment that picks formats and colour,
  config, matrix, every file's path and digest; see commands/check.py).

An entry is `MAGIC | SHA-256(payload) | payload`, the payload a `marshal` dump of builtin
values. Before anything is decoded, the magic, the checksum and the tool version are checked;
a truncated, corrupt, foreign or stale entry is ignored (and rewritten by this run), never
trusted. `marshal` constructs only builtin values and calls nothing, unlike pickle, so even a
forged entry that passes the checksum cannot execute code; at worst it yields wrong findings,
which is why the directory must stay the user's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import tempfile
from pathlib import Path
from typing import Any

from gpudrv_check import __version__

MAGIC = b"GPUDRVC\x01"
_DIGEST = 32


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "gpudrv-check"


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class Cache:
    """One cache directory. Every failure to read or write it is silent: a cache miss."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    def _path(self, kind: str, name: str) -> Path:
        return self.dir / f"{kind}-{digest(__version__, name)[:32]}.bin"

    def load(self, kind: str, name: str, key: str) -> Any | None:
        """The value stored under (kind, name) with this key, or None."""
        try:
            blob = self._path(kind, name).read_bytes()
        except OSError:
            return None
        head = len(MAGIC) + _DIGEST
        if len(blob) < head or not blob.startswith(MAGIC):
            return None
        payload = memoryview(blob)[head:]  # no copy of a large entry
        if hashlib.sha256(payload).digest() != blob[len(MAGIC) : head]:
            return None
        try:
            version, stored_key, value = marshal.loads(payload)
        except Exception:  # noqa: BLE001 - any undecodable payload is a miss
            return None
        if version != __version__ or stored_key != key:
            return None
        return value

    def store(self, kind: str, name: str, key: str, value: Any) -> None:
        try:
            payload = marshal.dumps((__version__, key, value))
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(MAGIC)  # in parts: no second copy of a large payload
                    fh.write(hashlib.sha256(payload).digest())
                    fh.write(payload)
                os.replace(tmp, self._path(kind, name))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except (OSError, ValueError):
            return
