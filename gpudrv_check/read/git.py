"""A git revision as a source: files read from the object store, never from the working tree.

`--rev REV` checks the tree of a commit exactly as it was committed: blobs are read with
`git cat-file` through gitpython, so neither the working tree nor the index is touched, and
uncommitted edits do not leak in. When PATH is a directory inside the repository, the source is
that directory's subtree at REV. gitpython is imported here only, when a revision is asked for,
or when the index (`--staged`) is one read/git_index.py leaves to git.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.read.config_file import DEFAULT_MAX_TOTAL_BYTES, ConfigError
from gpudrv_check.read.exclude import Exclusions, exclusions_of
from gpudrv_check.read.safe_io import DEFAULT_LIMIT, TooLarge
from gpudrv_check.read.source import clean_rel
from gpudrv_check.read.tree import (
    MANIFEST_SUFFIXES,
    SKIP_DIRS,
    SKIP_FILES,
    FileRef,
    Listing,
    Skipped,
    display_name,
    is_manifest_name,
)

_SYMLINK, _SUBMODULE = 0o120000, 0o160000
#: the object id of the empty blob (SHA-1, SHA-256): what an intent-to-add entry names
_EMPTY_BLOBS = frozenset(
    (
        b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
        b"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
    )
)
#: `ce_flags` bit of an entry added with `git add -N` (git's cache.h CE_INTENT_TO_ADD)
_INTENT_TO_ADD = 1 << 29
_DEBUG_FLAGS = re.compile(rb"  size: \d+\tflags: ([0-9a-f]+)(?:\n|\Z)")  # last: no newline
# manifests are read in one batch when they are small enough to hold at once
_PREFETCH_FILE_BYTES = 8 * 1024 * 1024
_PREFETCH_TOTAL_BYTES = 512 * 1024 * 1024

SHALLOW_HINT = (
    "fetch the history first: `git fetch --unshallow` (or `git fetch origin <branch>`); in "
    "GitHub Actions set `fetch-depth: 0` on actions/checkout, in GitLab CI set `GIT_DEPTH: 0`"
)


@record(frozen=True, slots=True)
class _Entry:
    mode: int
    sha: bytes  # binary object id
    size: int


#: how a usage error names the options that read git: (the options, what they read, verb)
REV_OR_BASE = ("--rev/--base", "--rev and --base read commits from git", "need")
STAGED = ("--staged", "--staged reads the git index", "needs")


def _import_git(use: tuple[str, str, str] = REV_OR_BASE) -> Any:
    try:
        import git  # gitpython: only for --rev, --base and --staged
    except ImportError as err:  # also raised when the git executable is missing
        raise ConfigError(
            f"{use[0]} {use[2]} gitpython and the git command on PATH: {err}".splitlines()[0]
        ) from None
    return git


def open_repository(path: Path, use: tuple[str, str, str] = REV_OR_BASE) -> Any:
    """The git repository that contains `path`, or a usage error saying what to do (naming
    the option given, `use`)."""
    git = _import_git(use)
    try:
        if os.environ.get("GIT_DIR"):
            return _repository_of_environment(git)
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(
            f"{path} is not inside a git repository; {use[1]}: run in a clone (not a "
            f"downloaded archive), or drop {use[0]} to check the files on disk"
        ) from None


#: the variables that name a repository's parts; git resolves a relative one from the current
#: directory (a hook gets `GIT_WORK_TREE=.`, `GIT_INDEX_FILE=.git/index.lock`...)
_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
)


def _repository_of_environment(git: Any) -> Any:
    """The repository GIT_DIR names, as git finds it when the variable is set (a hook of a
    bare repository with a separate work tree: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE), not
    the one above PATH. gitpython reads GIT_DIR only when it is given no path, and takes a
    bare repository for one without a work tree whatever GIT_WORK_TREE says: the work tree
    is git's own answer (`rev-parse --show-toplevel`), and the commands are given every
    location as an absolute path, since gitpython runs them from another directory."""
    env = {
        name: os.path.abspath(os.environ[name])
        for name in _LOCATION_VARIABLES
        if os.environ.get(name)
    }
    try:
        top = git.Git(os.getcwd()).rev_parse("--show-toplevel").strip()
    except git.GitCommandError:
        top = ""  # no work tree: a revision can still be read
    repo = git.Repo(env["GIT_DIR"])
    if top:
        env["GIT_WORK_TREE"] = top
    repo.git.update_environment(**env)
    repo.gpudrv_top = top or None  # see `_prefix`
    return repo


def is_shallow(repo: Any) -> bool:
    common = getattr(repo, "common_dir", None) or repo.git_dir
    return os.path.exists(os.path.join(common, "shallow"))


def resolve_tree(repo: Any, rev: str) -> Any:
    """The tree of the commit `rev` names; unknown and unfetched revisions are usage errors."""
    git = _import_git()
    from gitdb.exc import BadName, BadObject

    top = repo.working_tree_dir or repo.git_dir
    try:
        # git itself reads the name: every revision syntax it knows (`HEAD@{yesterday}`,
        # `main@{upstream}`, `:/message`) works, and a name starting with `-` is no option
        sha = repo.git.rev_parse("--verify", "--end-of-options", rev)
        commit = repo.commit(sha.strip())  # a tag is peeled; a tree or a blob is refused
        tree = commit.tree
        tree.hexsha  # noqa: B018 (forces the object to be read: missing in shallow clones)
        repo.odb.info(tree.binsha)
    except (
        BadName,
        BadObject,
        ValueError,
        IndexError,
        KeyError,
        NotImplementedError,
        git.GitCommandError,
    ) as err:
        if is_shallow(repo):
            raise ConfigError(
                f"revision {rev!r} is not in {top}, a shallow clone: if the name is right, "
                f"{SHALLOW_HINT}"
            ) from None
        detail = _git_detail(err)
        raise ConfigError(
            f"unknown revision {rev!r} in {top} ({detail}): check the name (`git log --oneline`, "
            "`git branch -a`), or fetch it first (`git fetch origin <branch>`)"
        ) from None
    return tree


def _git_detail(err: Exception) -> str:
    """The first line git (or gitpython) gave as the reason, without the command's dump."""
    stderr = getattr(err, "stderr", None)
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    text = stderr if isinstance(stderr, str) and stderr.strip() else str(err)
    for line in text.strip().splitlines():
        line = line.strip().removeprefix("stderr:").strip().strip("'").strip()
        if line:
            return line.removeprefix("fatal: ")
    return type(err).__name__


class NotAtRevision(ConfigError):
    """PATH is not a directory at the revision (e.g. a pull request adds it)."""


class GitTree:
    """The subtree at PATH of the commit REV, listed with `git ls-tree` and read from the odb."""

    def __init__(self, path: str | os.PathLike[str], rev: str) -> None:
        self.disk_root = Path(path)
        self.rev = rev
        self.repo = open_repository(_existing(self.disk_root))
        self.prefix = _prefix(self.repo, self.disk_root)
        self.label = f"{rev}:{self.prefix or '.'}"
        tree = resolve_tree(self.repo, rev)
        if self.prefix:
            try:
                tree = tree / self.prefix
            except KeyError:
                raise NotAtRevision(
                    f"{self.prefix}/ does not exist at revision {rev!r}; check PATH, or the "
                    "revision that should contain it"
                ) from None
            if tree.type != "tree":
                raise NotAtRevision(f"{self.prefix} is not a directory at revision {rev!r}")
        self.tree_sha = tree.hexsha
        self._raw = {}
        self.entries = self._ls_tree(tree.hexsha)
        self._wanted: list[str] = []
        self._cache: dict[str, bytes] = {}

    def _ls_tree(self, tree_sha: str) -> dict[str, _Entry]:
        git = _import_git()
        try:
            raw = self.repo.git.ls_tree("-r", "-l", "-z", tree_sha, stdout_as_string=False)
        except git.GitCommandError as err:
            if is_shallow(self.repo):
                raise ConfigError(
                    f"revision {self.rev!r} is incomplete in this shallow clone: {SHALLOW_HINT}"
                ) from None
            raise ConfigError(f"cannot list revision {self.rev!r}: {err}") from None
        entries: dict[str, _Entry] = {}
        for line in raw.split(b"\0"):
            if not line:
                continue
            meta, _, path = line.partition(b"\t")
            mode, _kind, sha, size = meta.split(None, 3)
            rel = self._shown(path.decode("utf-8", "surrogateescape"))
            size_text = size.strip()
            entries[rel] = _Entry(
                int(mode, 8),
                bytes.fromhex(sha.decode()),
                int(size_text) if size_text.isdigit() else 0,
            )
        return entries

    #: the names git lists that reports show escaped (`display_name`: bytes that are not
    #: UTF-8, control characters), by the name shown; the entries are keyed by the name shown
    _raw: dict[str, str]

    def _shown(self, rel: str) -> str:
        """`rel` as reports name it, as the working tree's walk names it; its own name kept."""
        if rel.isascii() and rel.isprintable():
            return rel
        shown = display_name(rel)
        if shown != rel:
            self._raw[shown] = rel
        return shown

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        """The same walk as the working tree's: same suffixes, exclusions and skipped links
        (no .gitignore: a revision holds only what was committed)."""
        rules = exclusions_of(exclude)
        listing = Listing()
        excluded_dirs: set[str] = set()
        kept_dirs: set[str] = set()
        for rel in sorted(self.entries):
            entry = self.entries[rel]
            parts = rel.split("/")
            # a directory pattern excludes the whole subtree; report the directory once
            hidden = False
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory in kept_dirs:
                    continue
                if directory in excluded_dirs or parts[depth - 1] in SKIP_DIRS:
                    hidden = True
                    break
                why = rules.reason(directory, is_dir=True)
                if why is not None:
                    excluded_dirs.add(directory)
                    listing.skipped.append(Skipped(directory + "/", why))
                    hidden = True
                    break
                kept_dirs.add(directory)
            if hidden:
                continue
            name = parts[-1]
            if entry.mode == _SUBMODULE:
                listing.skipped.append(Skipped(rel, "git submodule, not checked"))
                continue
            if not is_manifest_name(name) or (len(parts) == 1 and name in SKIP_FILES):
                continue
            why = rules.reason(rel)
            if why is not None:
                listing.skipped.append(Skipped(rel, why))
                continue
            if entry.mode == _SYMLINK:
                listing.skipped.append(Skipped(rel, "symbolic link, not followed"))
                continue
            listing.files.append(FileRef(rel, entry.size))
        listing.skipped.sort(key=lambda s: s.rel)
        self._wanted = [f.rel for f in listing.files if f.size <= _PREFETCH_FILE_BYTES]
        return listing

    #: check's whole-result cache (`watch`, as read/tree.py WorkingTree): what the run read or
    #: looked for that the cache key does not name, by path; None: not watched
    outside: dict[str, str] | None = None
    _named: frozenset[str] = frozenset()

    def watch(self, named: set[str]) -> None:
        """From now on, record every file read or looked for outside `named`."""
        self.outside, self._named = {}, frozenset(named)

    def state_of(self, rel: str, read: bool = True) -> str:
        """What a run found at `rel`: its object id, or "" when there is no such file."""
        return self.blob_digest(rel) or ""

    def _saw(self, rel: str) -> None:
        if self.outside is not None and rel not in self._named:
            self.outside[rel] = self.state_of(rel)

    def blob_digest(self, rel: str) -> str | None:
        """The content identity of a regular file: its git object id, as the tree or index
        lists it (no byte is read). The caches key a git source's files by it."""
        entry = self.entries.get(rel)
        if entry is None or entry.mode in (_SYMLINK, _SUBMODULE):
            return None
        return "git:" + entry.sha.hex()

    def expect(self, rels: list[str]) -> None:
        """The files the run will read from now on: read in one batch at the next read, in
        place of every listed file (a run the caches answer for reads few or none)."""
        self._wanted = [r for r in rels if r in self.entries]

    def read(self, rel: str, limit: int = DEFAULT_LIMIT, follow_inside: bool = False) -> bytes:
        """A blob of the revision (links and submodules are never read); over `limit` it is
        refused before a byte is read."""
        self._saw(rel)
        entry = self.entries.get(rel)
        if entry is None or entry.mode in (_SYMLINK, _SUBMODULE):
            raise FileNotFoundError(2, "No such file at revision " + self.rev, rel)
        if entry.size > limit:
            raise TooLarge(entry.size, limit, rel)
        if self._wanted:
            self._prefetch(self._wanted)
            self._wanted = []
        cached = self._cache.pop(rel, None)
        if cached is not None:
            return cached
        return self._blob(rel, entry)

    def _blob(self, rel: str, entry: _Entry) -> bytes:
        """The blob's bytes; a corrupt or missing object is an OSError (a finding at the file),
        whatever gitpython raises for it."""
        try:
            return self.repo.odb.stream(entry.sha).read()
        except OSError:
            raise
        except Exception as err:  # noqa: BLE001 - gitdb/gitpython errors for a damaged object
            raise OSError(
                errno.EIO,
                f"git object {entry.sha.hex()[:12]} is damaged ({type(err).__name__})",
                rel,
            ) from None

    def _prefetch(self, rels: list[str]) -> None:
        """Read the listed files ahead (`_fetch`) when they fit the bounds of a batch
        (`_PREFETCH_FILE_BYTES` each, `_PREFETCH_TOTAL_BYTES` in all); else each is read
        when asked."""
        rels = [r for r in rels if self.entries[r].size <= _PREFETCH_FILE_BYTES]
        if rels and sum(self.entries[r].size for r in rels) <= _PREFETCH_TOTAL_BYTES:
            self._fetch(rels)

    def _fetch(self, rels: list[str]) -> None:
        """Read the listed files in one `git cat-file --batch` (one object at a time is slow)."""
        import tempfile

        git = _import_git()
        shas = [self.entries[r].sha.hex() for r in rels]
        with tempfile.TemporaryFile() as request:
            request.write(("\n".join(shas) + "\n").encode())
            request.seek(0)
            try:
                out = self.repo.git.cat_file("--batch", istream=request, stdout_as_string=False)
            except git.GitCommandError:
                return  # read one by one instead
        try:
            by_sha = _batch_objects(out)
        except ValueError:  # output cut short by a damaged object: read one by one instead
            return
        for rel, sha in zip(rels, shas, strict=True):
            if sha in by_sha:
                self._cache[rel] = by_sha[sha]

    def exists(self, rel: str) -> bool:
        self._saw(rel)
        entry = self.entries.get(rel)
        return entry is not None and entry.mode not in (_SYMLINK, _SUBMODULE)

    def files_under(self, prefix: str) -> list[str]:
        """Every regular file below the directory `prefix` ("" for the root), sorted."""
        start = prefix.rstrip("/") + "/" if prefix else ""
        return sorted(
            rel
            for rel, entry in self.entries.items()
            if rel.startswith(start) and entry.mode not in (_SYMLINK, _SUBMODULE)
        )

    def materialize(
        self, dest: Path, limit: int = DEFAULT_LIMIT, total: int = DEFAULT_MAX_TOTAL_BYTES
    ) -> list[str]:
        """Write the regular files of the subtree under `dest` (for tools that read from disk):
        none over `limit` bytes, and no more than `total` bytes in all (in path order). Returns
        the files left out for their size; a tool that needs one fails on it, and says so."""
        left_out = []
        for rel, entry in sorted(self.entries.items()):
            name = self._raw.get(rel, rel)  # on disk as git names it
            if entry.mode in (_SYMLINK, _SUBMODULE) or clean_rel(name) != name:
                continue  # never write outside dest, never create links
            if entry.size > min(limit, total):
                left_out.append(rel)
                continue
            total -= entry.size
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self._blob(rel, entry))
        return left_out

    def close(self) -> None:
        self.repo.close()


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor on disk when it is gone (`--rev` reads a directory
    deleted since from the revision): the repository is found from there."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _prefix(repo: Any, disk_root: Path) -> str:
    """PATH inside the repository, from its top ("" for the top itself)."""
    top = Path(getattr(repo, "gpudrv_top", None) or repo.working_tree_dir or repo.git_dir)
    top = top.resolve()
    try:
        prefix = disk_root.resolve().relative_to(top).as_posix()
    except ValueError:
        # a link out of the work tree (git holds a link there, nothing below it), or
        # GIT_DIR/GIT_WORK_TREE naming another repository: never the whole repository
        raise ConfigError(
            f"{disk_root} is outside the git work tree {top} (a symbolic link out of it, or "
            "GIT_DIR/GIT_WORK_TREE naming another repository): git holds no files there; "
            "check a directory of the repository itself"
        ) from None
    return "" if prefix == "." else prefix


class IndexTree(GitTree):
    """The subtree at PATH of the git index: what the next commit records (`--staged`).

    The pre-commit hook checks this, not the working tree: untracked and ignored files never
    count, a staged deletion is gone, and unstaged edits do not count. Blobs are read from
    the object store as for a revision (`git add` wrote them there). An entry in conflict
    (stages 1-3 of an unfinished merge) is listed as skipped, not guessed.

    The index file and the loose objects are read without git when read/git_index.py can
    read them as git does (the hook's usual run then imports no gitpython and starts no git
    process); anything else is asked of git, through gitpython, as before.
    """

    def __init__(self, path: str | os.PathLike[str], sizes: dict[bytes, int] | None = None) -> None:
        """`sizes`: blob sizes by binary object id, known from earlier runs (an object id
        names its content, so its size, for ever); the index's other blobs are measured."""
        self.disk_root = Path(path)
        self.rev = "the index"
        self.tree_sha = ""
        self.unmerged: list[str] = []
        self._raw = {}
        self._wanted = []
        self._cache = {}
        self._repo: Any = None
        #: the repository's parts when the index was read without git (read/git_index.py)
        self._paths: Any = None
        #: whether git measured a size now (the caller keeps them for the next run: `sizes`)
        self.sizes_learned = False
        self._kept: dict[bytes, int] = {}
        fast = self._read_index(sizes or {})
        if fast is None:
            self.prefix = _prefix(self.repo, self.disk_root)
            self.entries = self._ls_index()
        else:
            self.entries = fast
        self.label = f"index:{self.prefix or '.'}"

    @property
    def repo(self) -> Any:
        """gitpython's repository, opened when first asked: a hook run that git's own files
        answer (`_read_index`) never imports gitpython."""
        if self._repo is None:
            self._repo = open_repository(self.disk_root, STAGED)
        return self._repo

    def _read_index(self, known: dict[bytes, int]) -> dict[str, _Entry] | None:
        """The staged entries as `_ls_index` lists them, read from the index file and the
        loose objects (read/git_index.py), or None when that reader does not answer for this
        repository (git is asked then, as always before)."""
        from gpudrv_check.read.git_index import (
            locate,
            loose_header,
            loose_names,
            read_index_file,
            special,
            special_object,
        )

        paths = locate(self.disk_root)
        if paths is None:
            return None
        try:
            prefix = self.disk_root.resolve().relative_to(paths.top).as_posix()
        except (OSError, ValueError, RuntimeError):
            return None  # outside the work tree: `_prefix` says so
        entries = read_index_file(paths.index)
        if entries is None:
            if special(paths.index):  # git would wait on it for ever
                raise ConfigError(f"cannot read the git index: {paths.index} is not a regular file")
            return None
        self.prefix = "" if prefix == "." else prefix
        start = self.prefix + "/" if self.prefix else ""
        staged: dict[str, tuple[int, bytes]] = {}
        for entry in entries:
            rel = self._staged(entry.path, start, entry.stage)
            if rel is None:
                continue
            if entry.intent_to_add and entry.sha.hex().encode() in _EMPTY_BLOBS:
                continue  # `git add -N`: not in the next commit
            staged[rel] = (entry.mode, entry.sha)
        sizes: dict[bytes, int] = {}
        unmeasured: dict[bytes, None] = {}
        for mode, sha in staged.values():
            if mode == _SUBMODULE:
                continue
            size = known.get(sha)
            if size is None:
                unmeasured[sha] = None
            else:
                sizes[sha] = self._kept[sha] = size
        # a loose object's header, as `git cat-file -s` reads it (never kept: a size is kept
        # only as git gave it, `blob_sizes`); only the objects the fan-out directories list
        # are opened (all of them when those cannot be listed)
        loose = loose_names(paths.common_dir) if unmeasured else None
        unknown: list[bytes] = []
        for sha in unmeasured:
            if loose is not None and sha.hex() not in loose:
                unknown.append(sha)  # packed, or missing
                continue
            size = loose_header(paths.common_dir, sha)
            if size is not None:
                sizes[sha] = size
            elif not special_object(paths.common_dir, sha):  # git would wait on that one
                unknown.append(sha)  # (`_blob` refuses it)
        if unknown:  # packed (or missing): git measures them, as it measures every blob
            measured = self._sizes([sha.hex() for sha in unknown])
            for sha in unknown:
                if sha.hex() in measured:
                    sizes[sha] = self._kept[sha] = measured[sha.hex()]
                    self.sizes_learned = True
        self._paths = paths
        return {rel: _Entry(mode, sha, sizes.get(sha, 0)) for rel, (mode, sha) in staged.items()}

    def blob_sizes(self) -> dict[bytes, int]:
        """The sizes to keep for the next run (`sizes`), by binary object id: those kept from
        earlier runs that the index still names, and those git measured now. A loose
        object's header is read again each run (microseconds), never kept: a missing object
        (git lists no size) or a damaged loose copy of a packed one (git reads the pack) must
        not outlive the run that met it."""
        return dict(self._kept)

    def _loose(self, entry: _Entry) -> bytes | None:
        """The blob read as a loose object, when it is one of the size listed (read/git_index.py
        checks its content against its id), or None: git is asked."""
        from gpudrv_check.read.git_index import loose_blob

        found = loose_blob(self._paths.common_dir, entry.sha, entry.size)
        return found if found is not None and len(found) == entry.size else None

    def _blob(self, rel: str, entry: _Entry) -> bytes:
        paths = self._paths
        if paths is not None:
            from gpudrv_check.read.git_index import special_object

            found = self._loose(entry)
            if found is not None:
                return found
            if special_object(paths.common_dir, entry.sha):  # git would wait on it
                raise OSError(
                    errno.EIO, f"git object {entry.sha.hex()[:12]} is not a regular file", rel
                )
        self.repo  # noqa: B018 - opened outside `_blob`'s error handling: a usage error
        return super()._blob(rel, entry)

    def _fetch(self, rels: list[str]) -> None:
        """The loose objects read directly; the others in one `git cat-file --batch`."""
        paths = self._paths
        if paths is not None:
            from gpudrv_check.read.git_index import special_object

            rest = []
            for rel in rels:
                entry = self.entries[rel]
                found = self._loose(entry)
                if found is not None:
                    self._cache[rel] = found
                elif not special_object(paths.common_dir, entry.sha):  # `_blob` refuses it
                    rest.append(rel)
            rels = rest
        if rels:
            super()._fetch(rels)

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()

    def _ls_index(self) -> dict[str, _Entry]:
        git = _import_git(STAGED)
        start = self.prefix + "/" if self.prefix else ""
        try:
            raw = self.repo.git.ls_files("--stage", "-z", stdout_as_string=False)
        except git.GitCommandError as err:
            raise ConfigError(f"cannot read the git index: {_git_detail(err)}") from None
        staged: dict[str, tuple[int, str]] = {}
        empty: list[bytes] = []  # entries of the empty blob: added with -N, or empty files
        for line in raw.split(b"\0"):
            meta, _, path = line.partition(b"\t")
            if not path:
                continue
            mode, sha, stage = meta.split()
            rel = self._staged(path, start, int(stage))
            if rel is None:
                continue
            staged[rel] = (int(mode, 8), sha.decode())
            if sha in _EMPTY_BLOBS:
                empty.append(path)
        for path in self._intent_to_add(empty):
            rel = path.decode("utf-8", "surrogateescape")
            staged.pop(self._shown(rel[len(start) :]), None)
        sizes = self._sizes([sha for mode, sha in staged.values() if mode != _SUBMODULE])
        return {
            rel: _Entry(mode, bytes.fromhex(sha), sizes.get(sha, 0))
            for rel, (mode, sha) in staged.items()
        }

    def _staged(self, path: bytes, start: str, stage: int) -> str | None:
        """The name below PATH of an index entry at stage 0 (`start`: PATH's prefix in the
        work tree, "" at its top); None for an entry outside PATH, or in conflict (stages
        1-3: recorded in `unmerged`, once per name)."""
        rel = path.decode("utf-8", "surrogateescape")
        if not rel.startswith(start):
            return None
        rel = self._shown(rel[len(start) :])
        if stage != 0:
            if rel not in self.unmerged:
                self.unmerged.append(rel)
            return None
        return rel

    def _intent_to_add(self, paths: list[bytes]) -> list[bytes]:
        """Those of `paths` that `git add -N` put in the index: entries the next commit does
        not record (`git write-tree` leaves them out), which the index lists with the empty
        blob's id. Their flags are in `git ls-files --debug` (CE_INTENT_TO_ADD)."""
        git = _import_git(STAGED)
        out: list[bytes] = []
        for at in range(0, len(paths), 500):  # a command line of a bounded length
            specs = [
                ":(literal)" + p.decode("utf-8", "surrogateescape") for p in paths[at : at + 500]
            ]
            try:
                raw = self.repo.git.ls_files("--debug", "-z", "--", *specs, stdout_as_string=False)
            except git.GitCommandError as err:
                raise ConfigError(f"cannot read the git index: {_git_detail(err)}") from None
            # each entry: its path, NUL, then its debug lines, the last one its flags
            path, pos = None, 0
            while pos < len(raw):
                if path is None:
                    end = raw.index(b"\0", pos)
                    path, pos = raw[pos:end], end + 1
                    continue
                found = _DEBUG_FLAGS.search(raw, pos)
                if found is None:
                    break
                if int(found.group(1), 16) & _INTENT_TO_ADD:
                    out.append(path)
                path, pos = None, found.end()
        return out

    def _sizes(self, shas: list[str]) -> dict[str, int]:
        """Blob sizes by sha, in one `git cat-file --batch-check`."""
        if not shas:
            return {}
        import tempfile

        git = _import_git()
        with tempfile.TemporaryFile() as request:
            request.write(("\n".join(shas) + "\n").encode())
            request.seek(0)
            try:
                out = self.repo.git.cat_file("--batch-check", istream=request)
            except git.GitCommandError as err:
                raise ConfigError(f"cannot read the git index: {_git_detail(err)}") from None
        sizes: dict[str, int] = {}
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[2].isdigit():
                sizes[fields[0]] = int(fields[2])
        return sizes

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        listing = super().list_manifests(exclude)
        reason = "in conflict in the index (an unfinished merge): resolve it and `git add` it"
        listing.skipped.extend(
            Skipped(rel, reason) for rel in self.unmerged if rel.endswith(MANIFEST_SUFFIXES)
        )
        listing.skipped.sort(key=lambda s: s.rel)
        return listing


def _batch_objects(out: bytes) -> dict[str, bytes]:
    """The objects of `git cat-file --batch` output by sha; ValueError when it is malformed."""
    by_sha: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        header_end = out.index(b"\n", pos)
        fields = out[pos:header_end].split()
        if len(fields) != 3:  # "<sha> missing"
            pos = header_end + 1
            continue
        size = int(fields[2]) if fields[2].isdigit() and len(fields[2]) < 19 else -1
        start = header_end + 1
        if size < 0 or start + size > len(out):
            raise ValueError("cut short")
        by_sha[fields[0].decode()] = out[start : start + size]
        pos = start + size + 1
    return by_sha
