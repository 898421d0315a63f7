"""Which paths the walk leaves out: default folders, `.gitignore`, and the config's `exclude:`.

Every pattern has gitignore semantics (the `pathspec` package's matcher, which follows git's
`dir.c`): `vendor/*.yaml` matches `vendor/a.yaml` but not `vendor/a/b.yaml`, a pattern without
a slash matches at any depth, a trailing slash matches directories only, `**` crosses folders,
and `!pattern` takes a path back. The defaults come first and the config's `exclude:` after
them, so `exclude: ["!testdata/"]` checks a folder the defaults leave out; `default_exclude: []`
drops the defaults altogether.

`.gitignore` files (the root's and those of the folders walked, each relative to its folder,
the deeper one deciding) are honoured in a working tree only: a git revision holds only what
was committed. The config decides before `.gitignore` does, so a negation there also takes back
a path `.gitignore` ignores.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.records import record

if TYPE_CHECKING:
    from collections.abc import Iterable

#: folders that hold other people's files, CI and editor settings: never this repo's manifests
DEFAULT_EXCLUDE = (
    "vendor/",
    "third_party/",
    "node_modules/",
    "testdata/",
    ".github/",
    ".gitlab/",
    ".vscode/",
    ".devcontainer/",
    ".idea/",
)
GITIGNORE = ".gitignore"
#: a .gitignore larger than this is not read (a real one is a few kilobytes)
MAX_GITIGNORE_BYTES = 1024 * 1024
BY_CONFIG = "excluded by config"
BY_DEFAULT = "excluded by default (set default_exclude: [] or exclude: ['!DIR/'] to check it)"
BY_GITIGNORE = "ignored by {file}"


def _plain(pattern: str) -> bool:
    """A plain name, or a folder name with its trailing slash (`vendor/`, `steps`): no glob,
    escape, negation, comment, inner slash or dot-only name."""
    name = pattern[:-1] if pattern.endswith("/") else pattern
    return bool(name) and name.strip(".") != "" and all(c in _NAME_CHARS for c in name)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@record(frozen=True)
class _Hit:
    include: bool
    index: int


class _Names:
    """Patterns that are all plain names (the defaults, `exclude: [steps/]`): in gitignore a
    name without an inner slash matches at any depth, and a trailing slash matches folders
    only, so a path's components answer without importing pathspec (start-up time)."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns
        # name -> the last pattern naming it: `name/` (folders only), `name` (any component)
        self.folders: dict[str, int] = {}
        self.names: dict[str, int] = {}
        for index, pattern in enumerate(patterns):
            if pattern.endswith("/"):
                self.folders[pattern[:-1]] = index
            else:
                self.names[pattern] = index

    def check_file(self, path: str) -> _Hit | None:
        """The last pattern matching `path` (gitignore: the last match decides)."""
        *parents, last = path.split("/")
        folders, names = self.folders, self.names
        hit = names.get(last, -1)
        for part in parents:
            hit = max(hit, folders.get(part, -1), names.get(part, -1))
        return None if hit < 0 else _Hit(True, hit)


class _Spec:
    """A gitignore spec and one regular expression of all its patterns: most paths match no
    pattern, and one match answers that ~10x faster than asking each pattern in turn."""

    def __init__(self, lines: Iterable[str]) -> None:
        import re

        from pathspec import GitIgnoreSpec

        # a line git cannot read (a lone `!`, a trailing `\`) matches nothing, as in git
        self.spec = GitIgnoreSpec.from_lines([a for a in map(_anchor, lines) if valid(a)])
        parts = [
            regex.pattern.replace("(?P<ps_d>", "(")
            for p in self.spec.patterns
            if p.include is not None and (regex := getattr(p, "regex", None)) is not None
        ]
        self.any = re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None

    def check_file(self, path: str) -> Any:
        if self.any is None or self.any.match(path) is None:
            return None
        return self.spec.check_file(path)


def valid(pattern: str) -> bool:
    """Whether the gitignore matcher can read `pattern`."""
    if _plain(pattern):
        return True
    from pathspec import GitIgnoreSpec

    try:
        GitIgnoreSpec.from_lines([pattern])
    except ValueError:  # GitIgnorePatternError
        return False
    return True


def _spec(lines: Iterable[str]) -> _Spec | _Names:
    patterns = [_anchor(line) for line in lines]
    if all(_plain(p) for p in patterns):
        return _Names(patterns)
    return _Spec(patterns)


def _anchor(pattern: str) -> str:
    """`./x` (the old spelling of a path from the root) is gitignore's `/x`."""
    text = pattern.strip()
    return "/" + text[2:] if text.startswith("./") else text


def _decision(spec: Any, rel: str) -> tuple[bool | None, int]:
    """(excluded?, index of the deciding pattern), (None, -1) when no pattern matches."""
    result = spec.check_file(rel)
    if result is None or result.include is None:
        return None, -1
    return bool(result.include), result.index if result.index is not None else -1


@record
class Exclusions:
    """The patterns of one walk; `reason(rel, is_dir)` says why a path is left out, or None."""

    exclude: list[str] = field(default_factory=list)
    default: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    gitignore: bool = False  # honour .gitignore files (a working tree)
    # folder ("" or "a/b/") -> its .gitignore's spec, for the folders walked so far
    _ignores: dict[str, Any] = field(default_factory=dict)
    # those folders, deepest first (sorted when one is added, not for every path asked about)
    _deepest: tuple[str, ...] = field(default=(), compare=False, repr=False)
    _config: Any = None

    def key(self) -> tuple:
        """What identifies these exclusions (a listing is cached per key)."""
        return (tuple(self.exclude), tuple(self.default), self.gitignore)

    def reason(self, rel: str, is_dir: bool = False) -> str | None:
        path = rel.rstrip("/") + ("/" if is_dir else "")
        if self._config is None:
            self._config = _spec([*self.default, *self.exclude])
        excluded, index = _decision(self._config, path)
        if excluded is not None:
            if not excluded:
                return None
            return BY_DEFAULT if index < len(self.default) else BY_CONFIG
        return self._ignored(path) if self.gitignore else None

    def _ignored(self, path: str) -> str | None:
        """The deepest .gitignore with a pattern for `path` decides."""
        for folder in self._deepest:
            if not path.startswith(folder) or path == folder:
                continue
            excluded, _ = _decision(self._ignores[folder], path[len(folder) :])
            if excluded is not None:
                return BY_GITIGNORE.format(file=folder + GITIGNORE) if excluded else None
        return None

    def add_gitignore(self, folder: str, raw: bytes) -> None:
        """Take in `folder`'s .gitignore, given as the bytes the walk read (bounded, through
        read/safe_io.py: no link followed)."""
        if not self.gitignore or len(raw) > MAX_GITIGNORE_BYTES:
            return
        lines = raw.decode("utf-8", "replace").splitlines()
        # the matcher's own escapes and comments; a trailing-space rule is git's, kept as is
        self._ignores[folder] = _spec(line for line in lines if line.strip())
        self._deepest = tuple(sorted(self._ignores, key=len, reverse=True))


def exclusions_of(exclude: Any, gitignore: bool = False) -> Exclusions:
    """An `Exclusions` from what a source was given: one already, or a list of patterns."""
    if isinstance(exclude, Exclusions):
        return Exclusions(exclude.exclude, exclude.default, exclude.gitignore and gitignore)
    return Exclusions(list(exclude or ()), list(DEFAULT_EXCLUDE), gitignore)


def from_config(config: Any) -> Exclusions:
    """The exclusions a config asks for (`exclude:`, `default_exclude:`, `gitignore:`); a
    pattern the matcher cannot read is a usage error at its line."""
    for key in ("exclude", "default_exclude"):
        for i, pattern in enumerate(getattr(config, key)):
            if not valid(_anchor(pattern)):
                raise config.error(f"{key}[{i}]: {pattern!r} is not a gitignore pattern", key, i)
    return Exclusions(list(config.exclude), list(config.default_exclude), config.gitignore)
