"""The content-hash cache of `check`: what each file contributes, and whole results.

Where: `--cache-dir DIR`, else `$XDG_CACHE_HOME/gpudrv-check`, else `~/.cache/gpudrv-check`
(created with mode 0700: it is the user's own). `--no-cache` neither reads nor writes it.

Six kinds of entry, one file each per checked repo root (`partitions`: one per namespace):
- `config-*`: what the whole-result key reads of the validated config, under the digest of
  the config's bytes and the flags that override it (engine/cache/config.py): a run the
  result answers validates no config;
- `files-*`: per file, a `FileEntry` (engine/cache/files.py): the SHA-256 of its bytes and
  its FileResult (read/codec.py), valid for one tool version and one way of reading
  (max_file_bytes, chart template directories, skim plan);
- `partitions-*`: a `PartitionEntry` per namespace, its findings and its workloads' capacity
  outcome (engine/cache/partition.py), stored under the partition's key (derived from
  `RunInputs.context_key`, engine/cache/inputs.py): a run writes the entries of the
  namespaces it evaluated, no other;
- `occupancy-*`: per namespace, under the same key, what the shared-capacity simulation needs
  of its workloads (model/occupancy.py `InputTables`), and the last simulation's outcomes
  under the digest of all its inputs (`Occupancy.memo_value`);
- `result-*`: the rendered reports of the last `check` and how many findings of each severity
  it had, keyed by `RunInputs.result_key`, the digest of every input (tool version,
  arguments, environment that picks formats and colour, config, matrix, every file's path and
  digest). It directs no write: where the reports go and the exit code are decided by the run
  that reads it;
- `stamps-*`: per manifest file, its stamp (size, mtime, ctime, inode, device) when it was
  last hashed and its digest (engine/cache/inputs.py `manifest_inputs`, `Stamps`: the paths
  joined by NUL, and a 72-byte record per path): a file with the same stamp is not read
  again for the whole-result key.

An entry is `MAGIC | HMAC-SHA256(secret, rest) | rest`, where rest is `length | header |
payload`: the header a `marshal` dump of (`code_identity()`: tool version and a digest of
its files' stamps, key), its length in 4 bytes, the payload
a `marshal` dump of the value (a result's written in pieces: `stream_payload`). The secret is
32 random bytes in `DIR/.key`, created mode 0600 on first use: whoever cannot read it cannot
forge an entry, even with write access to the directory. An entry stored under another key or
version is a miss from its first bytes (the rest is not read: the last run's 30 MB result costs
nothing when an edit changed its key); otherwise the MAC is checked before anything is decoded.
A truncated, corrupt, foreign or stale entry is ignored (and rewritten by this run).
`marshal` constructs only builtin values and calls nothing, unlike pickle; callers still check
the shape of every value they load (`load(..., valid=...)`).

Entries nobody uses go: an entry a run takes is marked used (its mtime set to now, at most
once a day), and at most once a day (the mtime of `DIR/.pruned`) a run that stores an entry
removes the entries of this directory unused for `PRUNE_AFTER_DAYS` days (another tool
version's, a repo no longer checked, a namespace renamed) and the temporary files of writes
that never finished: only regular files of the user's own, named exactly as the cache names
them (`KINDS`, `TEMP_PREFIX`), never through a link, and only in a directory the cache may
use. A `--cache-dir` may hold the user's own files too: none of them is touched.

The directory, the secret and every entry must be owned by the user and not writable (for
entries and the secret: not readable either) by group or others; otherwise the cache is not used
and stderr says so once. An entry that is a link, a FIFO or a device is a miss: it is opened
with O_NOFOLLOW|O_NONBLOCK and read only when fstat says it is a regular file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import marshal
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from gpudrv_check import __version__
from gpudrv_check.core.lazy_re import lazy_compile

MAGIC = b"GPUDRVC\x03"
_LENGTH = 4  # bytes of the header length
_DIGEST = 32
SECRET = ".key"
_OPEN = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_OPEN |= getattr(os, "O_CLOEXEC", 0)
_MARK = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_MARK |= getattr(os, "O_CLOEXEC", 0)
#: what was already said on stderr about unusable cache paths (said once per process)
_SAID: set[str] = set()
#: an entry unused this long is removed (see the module docstring)
PRUNE_AFTER_DAYS = 30
_DAY = 86_400
PRUNED = ".pruned"
#: the names the cache gives its entries and its temporary files, exactly (a `--cache-dir`
#: may be a directory that holds the user's own files too: only these are ever pruned)
KINDS = ("blobsizes", "config", "files", "occupancy", "partitions", "result", "stamps")
_ENTRY_NAME = lazy_compile(r"(?:" + "|".join(KINDS) + r")-[0-9a-f]{32}\.bin\Z")
TEMP_PREFIX = ".gpudrv-check-tmp-"
_TEMP_NAME = lazy_compile(re.escape(TEMP_PREFIX) + r"[a-z0-9_]{8}\Z")  # mkstemp's own form


def default_dir() -> Path | None:
    """None when there is no home to put it in (no $HOME and a uid without a passwd entry,
    as in a container run as an arbitrary user): the cache is then not used (see Cache)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "gpudrv-check"
    try:
        return Path.home() / ".cache" / "gpudrv-check"
    except (RuntimeError, KeyError):  # older Pythons raise KeyError
        return None


_CODE: list[str] = []  # code_identity, once per process


def code_identity() -> str:
    """What made the entries this run writes: the tool's version, and the size and
    modification time of every file of the package and of the files shipped with it
    (`policies/`, `schemas/`). A checkout installed in place (`pip install -e`) keeps its
    version while its code changes: an entry of the code before an edit is a miss, never
    taken for this code's. About 300 files: a stat each, once per run that uses the cache."""
    if not _CODE:
        package = Path(__file__).resolve().parents[2]
        stamps = _stamps(package)
        for name in ("policies", "schemas"):  # where core/resources.py `resource_dir` finds them
            if not (package / name).is_dir():  # a checkout: at its top, beside the package
                stamps += [
                    (f"../{name}/{rel}", size, mtime)
                    for rel, size, mtime in _stamps(package.parent / name)
                ]
        _CODE.append(f"{__version__}+{digest(stamps)[:16]}")
    return _CODE[0]


def _stamps(root: Path) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of the files below `root`, in path order; bytecode left out."""
    out: list[tuple[str, int, int]] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(root, rel)) as entries:
                found = sorted((e.name, e) for e in entries if e.name != "__pycache__")
        except OSError:
            continue
        for name, entry in found:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(f"{rel}{name}/")
                else:
                    info = entry.stat(follow_symlinks=False)
                    out.append((rel + name, info.st_size, info.st_mtime_ns))
            except OSError:
                continue
    out.sort()
    return out


def digest(*parts: object) -> str:
    """The SHA-256 of `parts` (a cache key): each part by its value, bytes as they are. A part
    of builtin values is encoded by `marshal` version 0, which writes each value with its type
    and writes every string alike (no interned-string mark, no back-references: equal values,
    equal bytes, in any process), two to three times faster than its `repr` on the large keys
    (a 10k repo's files and simulation records: 8 -> 2.5 ms); any other part by its `repr`."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, bytes):
            data = part
        else:
            try:
                data = b"m" + marshal.dumps(part, 0)  # type: ignore[arg-type]
            except ValueError:  # a value of another class (or nested too deep)
                data = b"r" + repr(part).encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class Untrusted(Exception):
    """A cache path another user could have written: the cache is not used."""


def _say_once(directory: Path, path: Path, why: str) -> None:
    """Say on stderr, once per cache directory, that (a file of) it is not used."""
    if str(directory) in _SAID:
        return
    _SAID.add(str(directory))
    from gpudrv_check.core.finding import printable

    sys.stderr.write(f"gpudrv-check: warning: cache {printable(str(path))} is not used: {why}\n")


def _trust(path: Path, st: os.stat_result, private: bool) -> None:
    """Raise Untrusted unless `path` is the user's own and closed to group and others
    (`private`: not even readable by them, as an entry or the secret must be)."""
    uid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    if st.st_uid != uid:
        raise Untrusted(f"owned by another user (uid {st.st_uid})")
    loose = 0o077 if private else 0o022
    if st.st_mode & loose:
        wanted = "600" if private else "700"
        raise Untrusted(
            f"its mode {st.st_mode & 0o777:04o} lets group or others in (chmod {wanted})"
        )


def _read_regular(path: Path, private: bool = True, head: bytes | None = None) -> bytes | None:
    """The bytes of `path` when it is a regular file the user alone can write; None when it is
    missing, a link, a FIFO or a device. Raises Untrusted for another owner or loose modes.
    With `head`: None as soon as the bytes after the MAC are not `head` (nothing more read)."""
    try:
        fd = os.open(path, _OPEN)
    except OSError:  # missing, or a link (ELOOP under O_NOFOLLOW)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        _trust(path, st, private)
        chunks, left = [], st.st_size
        if head is not None:
            first = _read_exactly(fd, len(MAGIC) + _DIGEST + len(head))
            if first[: len(MAGIC)] != MAGIC or first[len(MAGIC) + _DIGEST :] != head:
                return None
            chunks.append(first)
            left -= len(first)
            if time.time() - st.st_mtime > _DAY:  # an entry in use: not pruned
                with contextlib.suppress(OSError, NotImplementedError):
                    os.utime(fd)
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_exactly(fd: int, size: int) -> bytes:
    """Up to `size` bytes from `fd` (fewer at the end of the file)."""
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _head(key: str) -> bytes:
    """What follows the MAC in an entry stored under `key` by this version: length, header.
    Compared byte for byte with a stored entry's, so dumped in marshal version 2: a version 3
    dump flags an object held elsewhere too (its reference count), and the same key could be
    written two ways."""
    header = marshal.dumps((code_identity(), key), 2)
    return len(header).to_bytes(_LENGTH, "big") + header


def entry_bytes(secret: bytes, key: str, value: Any) -> tuple[bytes, ...]:
    """The parts of the entry of `value` under `key` (ValueError: not marshal-able)."""
    head, payload = _head(key), marshal.dumps(value)
    mac = hmac.new(secret, head, hashlib.sha256)
    mac.update(payload)
    return (MAGIC, mac.digest(), head, payload)


def stream_payload(value: Any) -> Iterator[bytes]:
    """A `marshal` dump of `value` in pieces: the tuples and lists in it written as their
    header and then their items one by one, every other value by `marshal.dumps`. A result
    entry holds the report (10k workloads: 14 MB; 40k: 60 MB) in pieces of a megabyte: dumped
    whole, its copy was the peak of a run's memory. The leaves are dumped in marshal version
    2, which writes no references: a version 3 dump numbers the objects it may refer back to
    from 0, which in a stream of several dumps would name the objects of an earlier one."""
    cls = value.__class__
    if cls is tuple or cls is list:
        code = b"(" if cls is tuple else b"["
        yield code + len(value).to_bytes(4, "little")
        for item in value:
            yield from stream_payload(item)
    else:
        yield marshal.dumps(value, 2)


def entry_fields(blob: bytes) -> tuple[Any, Any, Any]:
    """(version, key, value) of an entry's bytes, unchecked (for tests and tools)."""
    start = len(MAGIC) + _DIGEST
    length = int.from_bytes(blob[start : start + _LENGTH], "big")
    version, key = marshal.loads(blob[start + _LENGTH : start + _LENGTH + length])
    return version, key, marshal.loads(blob[start + _LENGTH + length :])


class Cache:
    """One cache directory. Every failure to read or write it is silent: a cache miss; a
    directory or file another user could have written is not used, and stderr says so once."""

    def __init__(self, directory: Path | None) -> None:
        """`directory` None (see default_dir): every load is a miss, every store is dropped."""
        self._off = directory is None
        self.dir = Path(directory) if directory is not None else Path()
        self._secret: bytes | None = None
        self._pruned = False
        self._quiet = False

    def _path(self, kind: str, name: str) -> Path:
        if kind not in KINDS:  # the names pruning may remove are these kinds' alone
            raise ValueError(f"not a kind of cache entry: {kind!r}")
        return self.dir / f"{kind}-{digest(code_identity(), name)[:32]}.bin"

    def _usable(self, create: bool) -> bool:
        """Whether the directory exists (or was made) and is the user's own."""
        if self._off:
            return False
        try:
            if create:
                self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.stat(self.dir)
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(st.st_mode):
                raise Untrusted("not a directory")
            _trust(self.dir, st, private=False)
        except Untrusted as why:
            self._say(self.dir, str(why))
            return False
        return True

    def _key(self, create: bool) -> bytes | None:
        """The directory's secret; made on first store. None: the cache is not used."""
        if self._secret is not None:
            return self._secret
        path = self.dir / SECRET
        try:
            secret = _read_regular(path)
            if secret is None and create and not os.path.lexists(path):
                _make_secret(path)
                secret = _read_regular(path)
        except Untrusted as why:
            self._say(path, str(why))
            return None
        except OSError:
            return None
        if secret is None or len(secret) != _DIGEST:
            return None
        self._secret = secret
        return secret

    def _say(self, path: Path, why: str) -> None:
        if not self._quiet:
            _say_once(self.dir, path, why)

    def load(
        self,
        kind: str,
        name: str,
        key: str,
        valid: Callable[[Any], bool] | None = None,
        quiet: bool = False,
    ) -> Any | None:
        """The value stored under (kind, name) with this key (and passing `valid`), or None.
        `quiet`: a cache that is not used is not said to be (yet): a load made before the run
        knows its arguments are usable (a usage error then is the only thing said)."""
        self._quiet = quiet
        try:
            return self._load(kind, name, key, valid)
        finally:
            self._quiet = False

    def _load(
        self, kind: str, name: str, key: str, valid: Callable[[Any], bool] | None
    ) -> Any | None:
        if not self._usable(create=False):
            return None
        secret = self._key(create=False)
        if secret is None:
            return None
        path = self._path(kind, name)
        head = _head(key)
        try:
            blob = _read_regular(path, head=head)
        except Untrusted as why:
            self._say(path, str(why))
            return None
        if blob is None:
            return None
        return _unpack(blob, secret, len(head), valid)

    def drop(self, kind: str, name: str) -> None:
        """Remove the entry of (kind, name), if any: one no run will ask for again (a
        namespace gone from the repo). The name is unlinked, never followed."""
        if not self._usable(create=False):
            return
        with contextlib.suppress(OSError):
            os.unlink(self._path(kind, name))

    def store(self, kind: str, name: str, key: str, value: Any, streamed: bool = False) -> None:
        """Store `value` under (kind, name) with this key. `streamed`: its payload is written
        a piece at a time (`stream_payload`), never as one copy of the whole value."""
        if not self._usable(create=True):
            return
        secret = self._key(create=True)
        if secret is None:
            return
        path = self._path(kind, name)
        if streamed:
            with contextlib.suppress(OSError, ValueError, RecursionError):
                _write_streamed(self.dir, path, secret, _head(key), stream_payload(value))
        else:
            try:
                parts = entry_bytes(secret, key, value)
            except ValueError:
                return
            with contextlib.suppress(OSError):
                _write_entry(self.dir, path, parts)
        if not self._pruned:  # asked once per run
            self._pruned = True
            self.prune()

    def prune(self, now: float | None = None) -> int:
        """At most once a day: remove the entries unused for PRUNE_AFTER_DAYS days and the
        temporary files older than a day (see the module docstring). How many went. Only
        in a directory the cache may use (the user's own, closed to others, with its key)."""
        if not self._usable(create=False) or self._key(create=False) is None:
            return 0
        now = time.time() if now is None else now
        marker = self.dir / PRUNED
        try:
            st = os.lstat(marker)
            if stat.S_ISREG(st.st_mode) and 0 <= now - st.st_mtime < _DAY:
                return 0
        except FileNotFoundError:
            pass
        except OSError:
            return 0
        try:  # the mark first: a run starting meanwhile does not prune too
            fd = os.open(marker, _MARK, 0o600)
        except OSError:
            return 0
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return 0
            os.utime(fd, (now, now))
        except (OSError, NotImplementedError):
            return 0
        finally:
            os.close(fd)
        uid = os.geteuid() if hasattr(os, "geteuid") else None
        removed = 0
        try:
            with os.scandir(self.dir) as found:
                for entry in found:
                    name = entry.name
                    if _ENTRY_NAME.match(name):
                        limit = PRUNE_AFTER_DAYS * _DAY
                    elif _TEMP_NAME.match(name):
                        limit = _DAY
                    else:
                        continue
                    try:
                        est = entry.stat(follow_symlinks=False)
                        if (
                            stat.S_ISREG(est.st_mode)
                            and (uid is None or est.st_uid == uid)
                            and now - est.st_mtime > limit
                        ):
                            os.unlink(self.dir / name)
                            removed += 1
                    except OSError:
                        continue
        except OSError:
            pass
        return removed


def _unpack(blob: bytes, secret: bytes, head: int, valid: Callable[[Any], bool] | None) -> Any:
    """The value of an entry whose magic and head (version and key) were compared already."""
    start = len(MAGIC) + _DIGEST
    if len(blob) < start + head:
        return None
    rest = memoryview(blob)[start:]  # no copy of a large entry
    mac = hmac.new(secret, rest, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, blob[len(MAGIC) : start]):
        return None
    try:
        value = marshal.loads(rest[head:])
    except Exception:  # noqa: BLE001 - any undecodable payload is a miss
        return None
    if valid is not None and not valid(value):
        return None
    return value


def _make_secret(path: Path) -> None:
    """32 random bytes at `path`, mode 0600; never over an existing file (another process
    may have made it first: then that one is used)."""
    fd, tmp = _mkstemp(dir=path.parent, prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(_DIGEST))
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _write_streamed(
    directory: Path, path: Path, secret: bytes, head: bytes, payload: Iterable[bytes]
) -> None:
    """`_write_entry` of a payload in pieces: the MAC, known once every piece is written, goes
    in its place last (until then the file is a temporary one, never an entry)."""
    fd, tmp = _mkstemp(dir=directory, prefix=TEMP_PREFIX)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(MAGIC + bytes(_DIGEST) + head)
            mac = hmac.new(secret, head, hashlib.sha256)
            for part in payload:
                mac.update(part)
                fh.write(part)
            fh.seek(len(MAGIC))
            fh.write(mac.digest())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_entry(directory: Path, path: Path, parts: tuple[bytes, ...]) -> None:
    fd, tmp = _mkstemp(dir=directory, prefix=TEMP_PREFIX)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:  # in parts: no second copy of a large payload
                fh.write(part)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: the characters of a temporary name after its prefix (tempfile's own: `_TEMP_NAME`)
_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
#: created, never opened if there: a name taken or a link in its place is tried again
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_TEMP_FLAGS |= getattr(os, "O_BINARY", 0)


def _mkstemp(*, dir: Any, prefix: str) -> tuple[int, str]:  # noqa: A002 - mkstemp's name
    """A new file of `dir`, mode 0600, open for writing, and its absolute path: what
    tempfile.mkstemp makes (Lib/tempfile.py `_mkstemp_inner`: the same flags, form of name
    and tries), without importing `tempfile` and `random` (2 ms of every run that stores an
    entry)."""
    folder = os.path.abspath(dir)
    for _ in range(getattr(os, "TMP_MAX", 10000)):
        name = "".join(_TEMP_CHARS[b % len(_TEMP_CHARS)] for b in os.urandom(8))
        path = os.path.join(folder, prefix + name)
        try:
            return os.open(path, _TEMP_FLAGS, 0o600), path
        except FileExistsError:
            continue
        except PermissionError:
            # Windows says so for a directory of that name (as tempfile, tried again)
            if os.name == "nt" and os.path.isdir(folder) and os.access(folder, os.W_OK):
                continue
            raise
    raise FileExistsError(errno.EEXIST, "no unused temporary name", folder)
