"""Atomic, checked replacement of files inside the repo root."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path


class EditError(Exception):
    """An edit cannot be made safely; nothing was written."""


@dataclass(frozen=True)
class FileEdit:
    """New bytes for one repo file, and the bytes they were computed from."""

    rel: str  # as the checker names the file (relative to the repo root)
    path: Path  # real path, inside the root
    original: bytes
    updated: bytes
    summary: str  # one line: what changes


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_inside(root: Path, rel: str) -> Path:
    """The real path of ``rel`` (symbolic links resolved); it must be a file under ``root``."""
    real_root = root.resolve()
    candidate = Path(rel)
    if candidate.is_absolute():
        raise EditError(f"{rel}: refusing to write a path outside the repo root {root}")
    try:
        real = (root / candidate).resolve(strict=True)
    except (OSError, RuntimeError) as err:
        raise EditError(f"{rel}: cannot resolve: {err}") from None
    try:
        real.relative_to(real_root)
    except ValueError:
        raise EditError(
            f"{rel}: resolves to {real}, outside the repo root {real_root}; refusing to write"
        ) from None
    if not real.is_file():
        raise EditError(f"{rel}: not a regular file")
    return real


def read_unchanged(root: Path, rel: str, expected_digest: str) -> tuple[Path, bytes]:
    """The file's real path and bytes, refusing when they differ from what was read before."""
    path = resolve_inside(root, rel)
    data = path.read_bytes()
    if not expected_digest or digest(data) != expected_digest:
        raise EditError(f"{rel} changed since it was read; run the command again")
    return path, data


def replace_atomically(path: Path, expected: bytes, updated: bytes) -> None:
    """Write ``updated`` to a temporary file beside ``path`` and rename it over ``path``.

    Refuses (raising EditError, original untouched) when ``path`` no longer holds ``expected``.
    The new file keeps the original's permission bits.
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(updated)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if path.read_bytes() != expected:
            raise EditError(f"{path.name} changed while it was being rewritten; nothing written")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def apply_edits(edits: list[FileEdit]) -> None:
    """Apply every edit, or none: a failure restores the files already replaced."""
    done: list[FileEdit] = []
    try:
        for edit in edits:
            replace_atomically(edit.path, edit.original, edit.updated)
            done.append(edit)
    except BaseException as err:
        for edit in reversed(done):
            try:
                replace_atomically(edit.path, edit.updated, edit.original)
            except Exception:  # noqa: BLE001 - report the first failure, keep restoring
                pass
        if isinstance(err, EditError):
            raise
        if isinstance(err, OSError):
            raise EditError(f"cannot write: {err}") from None
        raise
