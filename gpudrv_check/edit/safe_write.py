"""Atomic, checked replacement of files inside the repo root."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpudrv_check.core.records import record


class EditError(Exception):
    """An edit cannot be made safely; nothing was written."""


@record(frozen=True)
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
    try:
        data = _read_regular(path)
    except OSError as err:  # unreadable, or too large: `plan --write` reports it, no bug
        raise EditError(f"{rel}: cannot read it: {err.strerror or err}") from None
    if not expected_digest or digest(data) != expected_digest:
        raise EditError(f"{rel} changed since it was read; run the command again")
    return path, data


def _read_regular(path: Path) -> bytes:
    """The bytes of a real path inside the root (read/safe_io.py: no link, no FIFO)."""
    from gpudrv_check.read.safe_io import read_named

    return read_named(path, limit=1 << 30)


def replace_atomically(path: Path, expected: bytes, updated: bytes) -> None:
    """Write ``updated`` to a temporary file beside ``path`` and rename it over ``path``
    (read/safe_io.py `write_atomic`: fsynced, a link at the target is never followed).

    Refuses (raising EditError, original untouched) when ``path`` no longer holds ``expected``.
    The new file keeps the original's permission bits.
    """
    from gpudrv_check.read.safe_io import write_atomic

    def unchanged() -> None:
        if _read_regular(path) != expected:
            raise EditError(f"{path.name} changed while it was being rewritten; nothing written")

    write_atomic(path, updated, before_rename=unchanged)


def apply_edits(edits: list[FileEdit]) -> None:
    """Apply every edit, or none: a failure restores the files already replaced."""
    done: list[FileEdit] = []
    current: FileEdit | None = None
    try:
        for edit in edits:
            current = edit
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
            name = current.rel if current is not None else "the file"
            raise EditError(f"cannot write {name}: {err.strerror or err}") from None
        raise
