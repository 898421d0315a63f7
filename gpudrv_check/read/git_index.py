"""The git index and loose objects, read without git: the pre-commit hook's fast path.

`--staged` lists the index and reads blobs from the object store (read/git.py `IndexTree`).
Through gitpython that costs its import (40-60 ms, with the `git version` it runs) and a git
process per question, most of a warm hook run on a small repo. This module reads what the
usual hook run needs itself, and answers None whenever it is not sure it reads exactly what
git would; the caller then asks git, as before:

- where the repository is (`locate`): the `.git` directory or `gitdir:` file above PATH, as
  gitpython finds it, or GIT_DIR and GIT_WORK_TREE when they are set; the index GIT_INDEX_FILE
  names, as git gives it to a pre-commit hook run at the top of the work tree (git 2.39:
  `.git/index` for a plain commit, the absolute path of `index.lock` or `next-index-*.lock`
  for `commit -a` and `commit <paths>`); never a bare repository, a `core.worktree` or
  `core.bare` setting, another object format than SHA-1, GIT_OBJECT_DIRECTORY,
  GIT_COMMON_DIR, GIT_ALTERNATE_OBJECT_DIRECTORIES or GIT_CEILING_DIRECTORIES, or a
  repository another user owns (git's `safe.directory` check decides those);
- the index file (`read_index`), as gitformat-index(5) describes it: versions 2, 3 and 4
  (paths prefix-compressed), the extended flags (intent-to-add, skip-worktree), long names
  (a length of 0xFFF: NUL-terminated), every stage; its SHA-1 trailer checked (a skipped
  hash, all zeros, is not trusted); a split index (`link`) or a sparse one (`sdir`, or an
  entry of mode 040000) is left to git, any other required extension too;
- loose objects (`loose_header`, `loose_blob`): zlib, the `blob <size>` header, and the
  object id checked against the content. A packed object is left to the caller.

Every read is bounded; nothing is written or executed.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import struct
import zlib
from pathlib import Path

from gpudrv_check.core.records import record
from gpudrv_check.read.safe_io import read_descriptor

#: the largest index file read (a 50,000-file index is about 5 MB)
MAX_INDEX_BYTES = 256 * 1024 * 1024
#: the largest config file read to decide whether a repository is an ordinary one
_MAX_CONFIG_BYTES = 1024 * 1024
_SHA1 = 20
#: variables that move the repository's parts where this module does not look
_UNSUPPORTED_ENV = (
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
_SPARSE_DIR_MODE = 0o040000
#: an entry's mode, object id and flags, past its ctime, mtime, dev and ino (24 bytes) and
#: uid, gid and size (12) (gitformat-index(5))
_ENTRY_HEAD = struct.Struct(">24xI12x20sH")
#: the config lines `_plain_config` reads (git-config(1) "Syntax"): a section header alone on
#: its line, and a key with or without a value (`bare = false` is in every `git init`'s)
_SECTION_LINE = re.compile(rb'\[[A-Za-z0-9.-]+(?:[ \t]+"(?:[^"\\\n]|\\.)*")?\]')
_KEY_LINE = re.compile(rb"([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:=(.*))?")
_FALSE = frozenset((b"false", b"no", b"off", b"0"))


@record(frozen=True, slots=True)
class IndexEntry:
    path: bytes  # as git stores it: relative to the top of the work tree
    mode: int
    sha: bytes  # binary SHA-1
    stage: int  # 0, or 1-3 for an entry in conflict
    intent_to_add: bool  # `git add -N`: the next commit does not record it


@record(frozen=True, slots=True)
class GitPaths:
    top: Path  # the top of the work tree
    git_dir: Path
    common_dir: Path  # where the objects and the config are (a worktree's main .git)
    index: Path


def locate(start: Path) -> GitPaths | None:
    """The repository `start` (a directory) is in, as git and gitpython find it for
    `--staged`; None when it is not an ordinary one this module reads (see the module)."""
    env = os.environ
    if any(env.get(name) for name in _UNSUPPORTED_ENV):
        return None
    try:
        if env.get("GIT_DIR"):
            found = _from_environment()
        else:
            if env.get("GIT_WORK_TREE"):
                return None
            found = _discover(start)
        if found is None:
            return None
        top, git_dir = found
        top = top.resolve()
        common = _common_dir(git_dir)
        if common is None or not _ordinary(top, git_dir, common):
            return None
        index_env = env.get("GIT_INDEX_FILE")
        if index_env:
            if not os.path.isabs(index_env) and not env.get("GIT_DIR"):
                # git resolves it from where it runs: gitpython runs it at the top
                if Path.cwd().resolve() != top:
                    return None
            index = Path(os.path.abspath(index_env))
        else:
            index = git_dir / "index"
        return GitPaths(top, git_dir, common, index)
    except (OSError, ValueError, RuntimeError):
        return None


def _from_environment() -> tuple[Path, Path] | None:
    """GIT_DIR (and GIT_WORK_TREE) when they are set, relative to the current directory;
    without GIT_WORK_TREE the current directory is the top of the work tree (git(1))."""
    git_dir = Path(os.path.abspath(os.environ["GIT_DIR"]))
    if not _is_git_dir(git_dir):
        return None
    work = os.environ.get("GIT_WORK_TREE")
    top = Path(os.path.abspath(work)) if work else Path.cwd()
    return top.resolve(), git_dir.resolve()


def _discover(start: Path) -> tuple[Path, Path] | None:
    """The first directory from `start` up holding a `.git` directory or `gitdir:` file, as
    gitpython walks it (`Repo(search_parent_directories=True)`: the absolute path's parents as
    written, links followed only to look inside); None for a directory that is itself a git
    directory (a bare repository, or inside `.git`), for a `.git` that is neither, and for a
    path gitpython would expand (`~`, `$VAR`)."""
    text = str(start)
    if "$" in text or text.startswith("~"):
        return None
    start = Path(os.path.normpath(os.path.abspath(text)))
    for directory in (start, *start.parents):
        if _is_git_dir(directory):
            return None
        dotgit = directory / ".git"
        try:
            info = os.lstat(dotgit)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            return (directory, dotgit) if _is_git_dir(dotgit) else None
        if stat.S_ISREG(info.st_mode):
            target = _gitfile(dotgit)
            if target is None or not _is_git_dir(target):
                return None
            return directory, target
        return None  # a link or anything else: git's own rules
    return None


def _gitfile(path: Path) -> Path | None:
    """The directory a `gitdir: <path>` file names (relative to the file's directory)."""
    text = _read_small(path, 64 * 1024)
    if text is None or not text.startswith(b"gitdir: "):
        return None
    target = text[len(b"gitdir: ") :].rstrip(b"\r\n")  # git: read_gitfile_gently
    if not target or b"\0" in target:
        return None
    return (path.parent / os.fsdecode(target)).resolve()


def _is_git_dir(path: Path) -> bool:
    """Whether `path` looks like a git directory as git's setup checks it: HEAD, objects and
    refs (a worktree's git directory has `commondir` in place of its own objects)."""
    if not (path / "HEAD").is_file():
        return False
    if (path / "commondir").is_file():
        return True
    return (path / "objects").is_dir() and (path / "refs").is_dir()


def _common_dir(git_dir: Path) -> Path | None:
    """Where a git directory's objects and config are: itself, or what its `commondir` file
    names (a linked worktree)."""
    named = git_dir / "commondir"
    if not named.exists():
        return git_dir
    text = _read_small(named, 64 * 1024)
    if text is None:
        return None
    target = text.rstrip(b"\r\n")  # as git reads it: line ends only
    if not target or b"\0" in target:
        return None
    common = (git_dir / os.fsdecode(target)).resolve()
    return common if (common / "objects").is_dir() else None


def _ordinary(top: Path, git_dir: Path, common: Path) -> bool:
    """A repository of this user, SHA-1, with its work tree where it was found: no setting
    in its config (or the worktree's) that moves the work tree or changes the format."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    for path in (top, git_dir, common):
        if uid is not None and os.stat(path).st_uid != uid:
            return False  # git's safe.directory check: let git decide
    for config in (common / "config", git_dir / "config.worktree"):
        text = _read_small(config, _MAX_CONFIG_BYTES)
        if text is None:
            if config.name == "config":
                return False
            continue
        if not _plain_config(text.replace(b"\r\n", b"\n")):
            return False
    return True


def _plain_config(text: bytes) -> bool:
    """Whether a repository's config leaves the work tree and the format as they are found:
    every line a section header alone, a comment, or `key` / `key = value` (anything else,
    a continued line or a key on a header's line, is left to git's own parser), no
    `core.worktree`, no extensions or includes, `bare` false, the format version 0 or 1."""
    for line in text.split(b"\n"):
        stripped = line.strip()
        if not stripped or stripped[:1] in (b"#", b";"):
            continue
        if stripped[:1] == b"[":
            if not _SECTION_LINE.fullmatch(stripped):
                return False
            section = stripped[1:-1].strip().lower()
            if section.startswith((b"extensions", b"include")):
                return False
            continue
        found = _KEY_LINE.fullmatch(stripped)
        if found is None or stripped.endswith(b"\\"):
            return False
        key = found.group(1).lower()
        value = (found.group(2) or b"").split(b"#")[0].split(b";")[0].strip().lower()
        if key == b"worktree":
            return False
        if key == b"bare" and (found.group(2) is None or value not in _FALSE):
            return False  # a key alone is true
        if key == b"repositoryformatversion" and value not in (b"0", b"1"):
            return False
    return True


#: how every file of git's is opened: no link followed, no wait on a FIFO
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _read_small(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes, at most `limit`, or None (missing, too large, not a regular
    file, a link)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        return read_descriptor(fd, limit, str(path))
    except OSError:
        return None
    finally:
        os.close(fd)


def read_index_file(path: Path) -> list[IndexEntry] | None:
    """The entries of the index file at `path`, or None (see `read_index`)."""
    data = _read_small(path, MAX_INDEX_BYTES)
    return None if data is None else read_index(data)


def read_index(data: bytes) -> list[IndexEntry] | None:
    """The entries of an index file's bytes in their order (by path, then stage), or None
    when this reader does not take it: not an index, another version, a SHA-1 trailer that
    does not match (or was skipped), a split or sparse index, a required extension it does
    not know, or entries that run past the end."""
    size = len(data)
    if size < 12 + _SHA1 or data[:4] != b"DIRC":
        return None
    trailer = data[-_SHA1:]
    if trailer == bytes(_SHA1) or hashlib.sha1(data[:-_SHA1]).digest() != trailer:  # noqa: S324
        return None  # git's own checksum of the file (a skipped one is all zeros)
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    end = size - _SHA1
    pos = 12
    entries: list[IndexEntry] = []
    previous = b""
    for _ in range(count):
        fixed = pos + 62
        if fixed > end:
            return None
        mode, sha, flags = _ENTRY_HEAD.unpack_from(data, pos)
        intent = False
        if flags & 0x4000:  # extended flags (version 3 and up)
            if version < 3 or fixed + 2 > end:
                return None
            extended = int.from_bytes(data[fixed : fixed + 2], "big")
            if extended & ~0x6000:  # git dies on any bit but skip-worktree, intent-to-add
                return None  # (read-cache.c: "unknown index entry format")
            intent = bool(extended & 0x2000)
            fixed += 2
        stage = (flags >> 12) & 3
        length = flags & 0xFFF
        if version == 4:
            strip, name_at = _varint(data, fixed, end)
            if strip is None or strip > len(previous):
                return None
            nul = data.find(b"\0", name_at, end)
            if nul < 0:
                return None
            path = previous[: len(previous) - strip] + data[name_at:nul]
            pos = nul + 1
        else:
            if length < 0xFFF:
                nul = fixed + length
                if nul >= end or data[nul] != 0:
                    return None
            else:
                nul = data.find(b"\0", fixed, end)
                if nul < 0:
                    return None
            path = data[fixed:nul]
            # 1-8 NULs pad the entry to a multiple of eight bytes
            pos = pos + ((fixed - pos + (nul - fixed) + 8) & ~7)
            if pos > end:
                return None
        if not path or (length < 0xFFF and len(path) != length) or b"\0" in path:
            return None  # a NUL inside a name: git prints it cut there, and keeps it whole
        if mode == _SPARSE_DIR_MODE:
            return None  # a sparse directory: git expands it from the trees
        entries.append(IndexEntry(path, mode, sha, stage, intent))
        previous = path
    while pos < end:  # extensions: a signature, a 32-bit length, the data
        if pos + 8 > end:
            return None
        signature = data[pos : pos + 4]
        length = int.from_bytes(data[pos + 4 : pos + 8], "big")
        if not b"A" <= signature[:1] <= b"Z":
            return None  # required (`link`: a split index; `sdir`: a sparse one): git's
        pos += 8 + length
    if pos != end:
        return None
    return entries


def _varint(data: bytes, pos: int, end: int) -> tuple[int | None, int]:
    """git's offset varint (varint.c `decode_varint`) at `pos`: (value, next position)."""
    if pos >= end:
        return None, pos
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        if pos >= end or value > 1 << 40:
            return None, pos
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def _loose_path(common: Path, sha: bytes) -> Path:
    name = sha.hex()
    return common / "objects" / name[:2] / name[2:]


#: the most loose objects `loose_names` lists (git packs them past 6,700 by default, gc.auto)
MAX_LOOSE_NAMES = 1_000_000
_HEX = frozenset("0123456789abcdef")


def loose_names(common: Path) -> set[str] | None:
    """The ids (hex) of the loose objects under `common`, from the 256 fan-out directories'
    listings: what a run asks of the object store is then looked up, not opened (a packed
    repository's objects are all missing there); None when they cannot be listed or are
    too many (each object is then tried as before)."""
    names: set[str] = set()
    try:
        with os.scandir(common / "objects") as fanout:
            prefixes = [
                e.name
                for e in fanout
                if len(e.name) == 2 and set(e.name) <= _HEX and e.is_dir(follow_symlinks=False)
            ]
        for prefix in prefixes:
            with os.scandir(common / "objects" / prefix) as listed:
                for entry in listed:
                    if len(entry.name) == 38:
                        names.add(prefix + entry.name)
                        if len(names) > MAX_LOOSE_NAMES:
                            return None
    except OSError:
        return None
    return names


def special(path: Path) -> bool:
    """Whether something other than a regular file or a link is at `path` (a FIFO, a
    socket, a device): git would wait on it for ever, so it is refused, not handed to git."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode))


def special_object(common: Path, sha: bytes) -> bool:
    """Whether the loose object `sha` is a FIFO, socket or device (`special`)."""
    return special(_loose_path(common, sha))


def loose_header(common: Path, sha: bytes) -> int | None:
    """The size of the loose blob `sha`, from its header alone; None when it is not a loose
    blob (packed, missing, another type, unreadable)."""
    try:
        fd = os.open(_loose_path(common, sha), _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 512)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        text = zlib.decompressobj().decompress(head, 64)
    except zlib.error:
        return None
    return _blob_size(text)


def _blob_size(text: bytes) -> int | None:
    nul = text.find(b"\0")
    if nul < 0 or not text.startswith(b"blob "):
        return None
    digits = text[5:nul]
    if not digits.isdigit() or len(digits) > 18 or (digits[:1] == b"0" and digits != b"0"):
        return None
    return int(digits)


def loose_blob(common: Path, sha: bytes, limit: int) -> bytes | None:
    """The content of the loose blob `sha` when it is one of at most `limit` bytes whose
    content hashes to `sha`; None otherwise (the caller asks git, which says what is wrong)."""
    # compressed, it is seldom larger than the content; zlib's worst case is a few bytes
    # per 16 KB over it
    raw = _read_small(_loose_path(common, sha), limit + limit // 100 + 1024)
    if raw is None:
        return None
    inflate = zlib.decompressobj()
    try:
        head = inflate.decompress(raw, 64)
        size = _blob_size(head)
        if size is None or size > limit:
            return None
        nul = head.index(b"\0") + 1
        body = head[nul:]
        if len(body) > size:
            return None
        # one byte past the size at most (a bound of 0 would be no bound to zlib)
        body += inflate.decompress(inflate.unconsumed_tail, size - len(body) + 1)
    except (zlib.error, ValueError):
        return None
    if len(body) != size or inflate.unconsumed_tail:
        return None
    if hashlib.sha1(head[:nul] + body).digest() != sha:  # noqa: S324 - git's object id
        return None
    return body
