"""The working tree as a source of files: a deterministic, bounded walk."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import field
from pathlib import Path

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.read.exclude import (
    GITIGNORE,
    GITIGNORE_TOO_LARGE,
    MAX_GITIGNORE_BYTES,
    Exclusions,
    exclusions_of,
)
from gpudrv_check.read.safe_io import DEFAULT_LIMIT, Beneath, TooLarge, is_file, read_inside

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: read although they have no suffix: kustomize's third kustomization file name (api/konfig/
#: general.go RecognizedKustomizationFileNames), whose patches and resources matter as much
#: as a kustomization.yaml's
MANIFEST_NAMES = frozenset(("Kustomization",))
SKIP_DIRS = frozenset((".git", ".hg", ".svn"))
# our own config is not a manifest
SKIP_FILES = frozenset((".gpudrv-check.yaml",))


@record(slots=True)
class FileRef:
    rel: str  # POSIX path relative to the root, printable (see display_name)
    size: int
    error: str | None = None  # why the path cannot be read (reported as a finding)
    #: (size, mtime_ns, ctime_ns, inode, device) when walked on disk: what the whole-result
    #: cache compares before it reads and hashes the file again (engine/cache/inputs.py)
    stamp: tuple[int, ...] | None = field(default=None, compare=False)


# characters a path must not carry into a report line (controls, line and bidi overrides)
_UNPRINTABLE = lazy_compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def is_manifest_name(name: str) -> bool:
    return name.endswith(MANIFEST_SUFFIXES) or name in MANIFEST_NAMES


def display_name(name: str) -> str:
    """A file name as reports show it: undecodable bytes and control characters escaped.

    A name can hold any byte but NUL and `/`; printed raw, a newline or an escape sequence
    would forge report lines or CI annotations.
    """
    if name.isascii() and name.isprintable():
        return name
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@record(slots=True)
class Skipped:
    rel: str
    reason: str


@record
class Listing:
    files: list[FileRef] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def inside_root(root: str | os.PathLike[str], rel: str) -> bool:
    """Whether `rel` stays inside `root` once `..` and symbolic links are resolved."""
    try:
        (Path(root) / rel).resolve().relative_to(Path(root).resolve())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a link loop
        return False
    return True


def _read_gitignore(
    exclude: Exclusions, entries: list[os.DirEntry[str]], rel_dir: str, files: Beneath, disk: str
) -> Skipped | None:
    """A folder's .gitignore, when it is a regular file (a link is not followed; one that
    cannot be read ignores nothing, as in git); one too large to be read is said."""
    if not exclude.gitignore:
        return None
    for entry in entries:
        if entry.name == GITIGNORE and entry.is_file(follow_symlinks=False):
            try:
                raw = files.read(disk + GITIGNORE, MAX_GITIGNORE_BYTES + 1)
            except TooLarge:
                return Skipped(rel_dir + GITIGNORE, GITIGNORE_TOO_LARGE)
            except OSError:
                return None
            if not exclude.add_gitignore(rel_dir, raw):
                return Skipped(rel_dir + GITIGNORE, GITIGNORE_TOO_LARGE)
            return None
    return None


def _links_to_dir(entry: os.DirEntry[str]) -> bool:
    """Whether a link points at a directory (it is not followed; a loop or a target that
    cannot be reached (ELOOP, EACCES) is simply not a directory)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


class WorkingTree:
    """Files under a directory, walked in sorted order.

    Symbolic links are never followed (no escape from the root, no loops); a directory met
    twice (a bind mount) is walked once; only regular files are read (a FIFO would block the
    read forever); a directory that cannot be listed is reported, not silently skipped.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.disk_root = self.root
        self.label = str(root)
        # display path -> path on disk, for the names display_name had to escape
        self._on_disk: dict[str, str] = {}
        self._listings: dict[tuple[str, ...], Listing] = {}
        self._files = Beneath(self.root)
        #: check's whole-result cache (`watch`): what the run read or looked for that the
        #: cache key does not name, by path (`state_of`); None: not watched
        self.outside: dict[str, str] | None = None
        self._named: frozenset[str] = frozenset()

    def watch(self, named: set[str]) -> None:
        """From now on, record every file read or looked for outside `named` (the files the
        whole-result key holds): a kustomization a Flux scope reads (model/placeholders.py)
        may be a file no listing names (`Kustomization`, or in an excluded directory)."""
        self.outside, self._named = {}, frozenset(named)

    def state_of(self, rel: str, read: bool) -> str:
        """What a run found at `rel` as `outside` records it: the SHA-256 of its bytes (or
        "unreadable") when it was read, else "present" or "" (absent)."""
        if not read:
            return "present" if is_file(self.root / rel) else ""
        try:
            return hashlib.sha256(self.read(rel)).hexdigest()
        except (OSError, ValueError):
            return "unreadable"

    def _saw(self, rel: str, state: str, read: bool) -> None:
        if self.outside is not None and rel not in self._named:
            if read:
                self.outside[rel] = state
            else:
                self.outside.setdefault(rel, state)

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        """Every manifest file under the root, in path order (walked once per instance and
        exclusions; each call gets its own lists). `.gitignore` files are honoured."""
        rules = exclusions_of(exclude, gitignore=True)
        known = self._listings.get(rules.key())
        if known is None:
            known = self._listings[rules.key()] = self._walk(rules)
        return Listing(list(known.files), list(known.skipped))

    def _walk(self, exclude: Exclusions) -> Listing:
        listing = Listing()
        seen_dirs: set[tuple[int, int]] = set()
        pending: list[tuple[str, str]] = [("", "")]  # (display, on disk): "" or "a/b/"
        while pending:
            rel_dir, disk_dir = pending.pop()
            try:
                # by descriptor: no link followed, and no PATH_MAX however deep the tree
                dir_fd = self._files.open_dir(disk_dir.rstrip("/"))
            except OSError as err:
                reason = err.strerror or type(err).__name__
                listing.files.append(
                    FileRef(rel_dir or "./", 0, f"cannot list directory: {reason}")
                )
                continue
            try:
                info = os.fstat(dir_fd)
                with os.scandir(dir_fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as err:
                os.close(dir_fd)
                reason = err.strerror or type(err).__name__
                listing.files.append(
                    FileRef(rel_dir or "./", 0, f"cannot list directory: {reason}")
                )
                continue
            if (info.st_dev, info.st_ino) in seen_dirs:
                os.close(dir_fd)
                listing.skipped.append(Skipped(rel_dir, "directory already walked (mount loop)"))
                continue
            seen_dirs.add((info.st_dev, info.st_ino))
            too_large = _read_gitignore(exclude, entries, rel_dir, self._files, disk_dir)
            if too_large is not None:
                listing.skipped.append(too_large)
            subdirs = []
            for entry in entries:
                name = entry.name
                rel, disk = rel_dir + display_name(name), disk_dir + name
                manifest_name = is_manifest_name(name)
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as err:
                    if manifest_name:
                        listing.files.append(FileRef(rel, 0, f"cannot stat: {err.strerror}"))
                        self._remember(rel, disk)
                    continue
                if stat.S_ISLNK(st.st_mode):
                    if manifest_name:
                        listing.skipped.append(Skipped(rel, "symbolic link, not followed"))
                    elif _links_to_dir(entry):
                        listing.skipped.append(
                            Skipped(rel + "/", "symbolic link to a directory, not followed")
                        )
                elif stat.S_ISDIR(st.st_mode):
                    if name in SKIP_DIRS:
                        continue
                    why = exclude.reason(rel, is_dir=True, raw=disk)
                    if why is not None:
                        listing.skipped.append(Skipped(rel + "/", why))
                    else:
                        subdirs.append((rel + "/", disk + "/"))
                elif not manifest_name or (not rel_dir and name in SKIP_FILES):
                    continue
                elif (why := exclude.reason(rel, raw=disk)) is not None:
                    listing.skipped.append(Skipped(rel, why))
                elif not stat.S_ISREG(st.st_mode):
                    listing.skipped.append(
                        Skipped(rel, "not a regular file (FIFO, socket, device)")
                    )
                else:
                    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
                    listing.files.append(FileRef(rel, st.st_size, None, stamp))
                    self._remember(rel, disk)
            os.close(dir_fd)  # the entries stat relative to it: open until they are sorted
            pending.extend(reversed(subdirs))
        listing.files.sort(key=lambda f: f.rel)
        listing.skipped.sort(key=lambda s: s.rel)
        return listing

    @property
    def disk_names(self) -> dict[str, str]:
        """The names the walk escaped for display (`display_name`), as the file system has
        them (str with `surrogateescape` bytes)."""
        return self._on_disk

    def _remember(self, rel: str, disk: str) -> None:
        if rel != disk:
            self._on_disk[rel] = disk

    def read(self, rel: str, limit: int = DEFAULT_LIMIT, follow_inside: bool = False) -> bytes:
        """The bytes of a file below the root (read/safe_io.py): no link is followed (with
        `follow_inside`, links that stay inside the root are: paths the config names), only a
        regular file of at most `limit` bytes is read."""
        try:
            if follow_inside:
                data = read_inside(self.root, rel, limit)
            else:
                data = self._files.read(self._on_disk.get(rel, rel), limit)
        except OSError:
            self._saw(rel, "unreadable", True)
            raise
        if self.outside is not None and rel not in self._named:
            self._saw(rel, hashlib.sha256(data).hexdigest(), True)
        return data

    def exists(self, rel: str) -> bool:
        found = is_file(self.root / rel)
        self._saw(rel, "present" if found else "", False)
        return found

    def resolve_inside(self, rel: str) -> Path | None:
        """The real path of `rel` when it stays inside the root after resolving links."""
        try:
            real = (self.root / rel).resolve()
            real.relative_to(self.root.resolve())
        except (OSError, ValueError, RuntimeError):  # RuntimeError: a link loop
            return None
        return real
