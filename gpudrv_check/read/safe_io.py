"""The one way the checker reads a file and the one way it writes one.

Reading: a repo file is opened relative to the root one path component at a time (`openat`
with `O_NOFOLLOW`), so no symbolic link is followed unless asked, a path deeper than PATH_MAX
is still read, and a file swapped for a link between the walk and the read is refused, not
followed. The file is opened with `O_NONBLOCK` (a FIFO cannot block the open) and checked on
the open descriptor: a regular file, no larger than the limit, and never more than the limit
is read (a file that grows, or lies about its size, is cut off and refused).

Writing: the new bytes go to a temporary file beside the target, are fsynced, and are renamed
over it, so a failed or interrupted write leaves the old file as it was and never a partial
one; a link at the target is replaced, never followed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

#: the limit when a caller names none (the config's default max_file_bytes)
DEFAULT_LIMIT = 8 * 1024 * 1024
_O = {name: getattr(os, name, 0) for name in ("O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC", "O_NOCTTY")}
_DIR_FLAGS = os.O_RDONLY | _O["O_DIRECTORY"] | _O["O_NOFOLLOW"] | _O["O_CLOEXEC"]
_FILE_FLAGS = (
    os.O_RDONLY
    | _O["O_NOFOLLOW"]
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | _O["O_NOCTTY"]
    | _O["O_CLOEXEC"]
)
_ROOT_FLAGS = os.O_RDONLY | _O["O_DIRECTORY"] | _O["O_CLOEXEC"]
_CHUNK = 1024 * 1024


class Refused(OSError):
    """A file the checker does not read or write: a link, a special file, outside the root."""

    def __init__(self, reason: str, filename: str | None = None) -> None:
        super().__init__(errno.EPERM, reason, filename)


class TooLarge(Refused):
    def __init__(self, size: int, limit: int, filename: str | None = None) -> None:
        super().__init__(f"{size} bytes, over the limit of {limit}", filename)
        self.size = size
        self.limit = limit


def read_descriptor(fd: int, limit: int, name: str | None = None) -> bytes:
    """The bytes of an open file: refused unless a regular file of at most `limit` bytes."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused("not a regular file (FIFO, socket, device); not read", name)
    if info.st_size > limit:
        raise TooLarge(info.st_size, limit, name)
    parts: list[bytes] = []
    total = 0
    # the first read asks for one byte more than fstat said: os.read allocates what it is
    # asked for, and a small file's bytes then take a small block (not a 1 MB one shrunk);
    # when it gets exactly the size fstat gave, that is the end of the file
    want = min(_CHUNK, limit + 1, info.st_size + 1)
    while True:
        chunk = os.read(fd, want)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        if total > limit:  # grew since the fstat, or a file whose size lies (procfs)
            raise TooLarge(total, limit, name)
        if len(chunk) < want and total == info.st_size:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        want = min(_CHUNK, limit + 1 - total)


class Beneath:
    """Files below one directory, opened component by component without following links.

    The descriptor of the directory read last is kept: files are read in path order, so most
    reads cost one `openat`.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self._dir: tuple[str, int] | None = None

    def read(self, rel: str, limit: int = DEFAULT_LIMIT) -> bytes:
        """The bytes of `rel` (a normalised POSIX path below the root)."""
        directory, _, name = rel.rpartition("/")
        dir_fd = self._open_dir(directory)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as err:
            raise _explain(err, dir_fd, name, rel) from None
        try:
            return read_descriptor(fd, limit, rel)
        finally:
            os.close(fd)

    def open_dir(self, directory: str) -> int:
        """A new descriptor of a directory below the root ("" for the root); the caller closes."""
        return os.dup(self._open_dir(directory))

    def _open_dir(self, directory: str) -> int:
        if self._dir is not None and self._dir[0] == directory:
            return self._dir[1]
        parts = [p for p in directory.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise Refused("leaves the repo root; not read", directory)
        known = self._dir[0] if self._dir is not None else None
        if known is not None and (known == "" or directory.startswith(known + "/")):
            # a walk goes down one level at a time: continue from the directory held
            fd = os.dup(self._dir[1])  # type: ignore[index]
            parts = parts[len([p for p in known.split("/") if p]) :]
        else:
            fd = os.open(self.root, _ROOT_FLAGS)
        try:
            for part in parts:
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    raise _explain(err, fd, part, directory) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        self.close()
        self._dir = (directory, fd)
        return fd

    def close(self) -> None:
        if self._dir is not None:
            os.close(self._dir[1])
            self._dir = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit `os` may be gone already
            pass


def _explain(err: OSError, dir_fd: int, name: str, shown: str) -> OSError:
    """ELOOP/ENOTDIR from O_NOFOLLOW mean a symbolic link: say so."""
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return Refused("a symbolic link, not followed", shown)
    return OSError(err.errno, err.strerror, shown)


def is_file(path: str | os.PathLike[str]) -> bool:
    """`Path.is_file`, False for a name the system refuses to look up (longer than NAME_MAX or
    PATH_MAX, unreadable directory on the way): pathlib ignores only a few errors and raises the
    others, and such names come from the repo."""
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def is_dir(path: str | os.PathLike[str]) -> bool:
    """`Path.is_dir` under the same terms as `is_file`."""
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def lexists(path: str | os.PathLike[str]) -> bool:
    """Whether anything, a dangling link included, is at `path` (False for a name the system
    refuses to look up)."""
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def resolve_inside(root: str | os.PathLike[str], rel: str) -> str | None:
    """`rel` with its links resolved, relative to the real root, when it stays inside it."""
    if not rel or os.path.isabs(rel) or "\x00" in rel:
        return None
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    inner = os.path.relpath(real, real_root)
    if inner == "." or inner == ".." or inner.startswith("../") or os.path.isabs(inner):
        return None
    return inner.replace(os.sep, "/")


def read_inside(root: str | os.PathLike[str], rel: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """A path the repo names (config, matrix, policies): links are followed while they stay
    inside the root (resolved, verified, then opened with no link left to follow)."""
    inner = resolve_inside(root, rel)
    if inner is None:
        raise Refused("leaves the repo root; not read", rel)
    return Beneath(os.path.realpath(root)).read(inner, limit)


def read_named(
    path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, root: str | os.PathLike[str] = ""
) -> bytes:
    """A file named on the command line: inside `root` it is read as a repo file (no link out
    of the root); elsewhere it is the caller's own file, still a regular file within `limit`."""
    if root:
        rel = _inside(path, root)
        if rel is not None:
            return read_inside(root, rel, limit)
    fd = os.open(path, _FILE_FLAGS & ~_O["O_NOFOLLOW"])
    try:
        return read_descriptor(fd, limit, os.fspath(path))
    finally:
        os.close(fd)


def _inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str | None:
    """`path` relative to `root` when it names something below it (without resolving links)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    root: str | os.PathLike[str] = "",
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace `path` with `data`: a temporary file beside it, fsynced, renamed over it.

    A link at `path` is replaced, not followed. Below `root` (the checked repo), the directory
    written to must resolve inside the root: a committed link cannot direct the write out of
    it. `before_rename` may raise to abandon the write (the old file stays as it was).

    A character device or a FIFO is written into, as a shell's `>` would (`--output
    /dev/null`, `/dev/stdout`, a process substitution `>(…)`), never replaced by a file
    (which, run as root, would put a regular file where /dev/null was); outside the root a link
    to one is followed to it, as those names are links. A block device is refused.
    """
    target = Path(os.path.abspath(path))
    inside = bool(root) and _inside(target, root) is not None
    if inside:
        parent = os.path.realpath(target.parent)
        real_root = os.path.realpath(root)
        if os.path.commonpath([parent, real_root]) != real_root:
            raise Refused(f"the directory of {os.fspath(path)} leaves the repo root; not written")
    special = _special(target, follow=not inside)
    if special is not None:
        if stat.S_ISBLK(special):
            raise Refused(f"{os.fspath(path)} is a block device; not written")
        _write_into(target, data, follow=not inside)
        return
    mode = _mode_for(target)
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sync_directory(target.parent)


def _special(target: Path, follow: bool) -> int | None:
    """The mode of `target` when it is a character device, a FIFO or a block device (through a
    link when `follow`), else None."""
    try:
        info = os.stat(target) if follow else os.lstat(target)
    except OSError:
        return None
    mode = info.st_mode
    return mode if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISBLK(mode) else None


def _write_into(target: Path, data: bytes, follow: bool) -> None:
    """Write `data` into a device or a FIFO. A FIFO nobody reads is an error, not a wait:
    it is opened without blocking (ENXIO), then written blocking."""
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:  # open(2): a FIFO with no reader, in non-blocking mode
            raise Refused(f"{os.fspath(target)} is a FIFO no process reads; not written") from None
        raise
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode) and not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise Refused(f"{os.fspath(target)} changed while it was opened; not written")
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _mode_for(target: Path) -> int:
    """The permissions of the file being replaced; for a new file, what `open` would give."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(target))
    if info is not None and stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode)
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _sync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, _ROOT_FLAGS)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
