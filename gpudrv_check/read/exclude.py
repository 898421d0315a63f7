"""Which paths the walk leaves out: default folders, `.gitignore`, and the config's `exclude:`.

Every pattern has gitignore semantics, matched as git matches them (read/gitignore.py, after
git's dir.c and wildmatch.c): `vendor/*.yaml` matches `vendor/a.yaml` but not
`vendor/a/b.yaml`, a pattern without a slash matches at any depth, a trailing slash matches
folders only, `**` crosses folders, and `!pattern` takes a path back; within one list the
last pattern that matches the path itself decides, and a folder left out is not walked, so
nothing below it is taken back. The defaults come first and the config's `exclude:` after
them, so `exclude: ["!testdata/"]` checks a folder the defaults leave out; `default_exclude:
[]` drops the defaults altogether.

`.gitignore` files (the root's and those of the folders walked, each relative to its folder,
the deeper one deciding) are honoured in a working tree only: a git revision holds only what
was committed. The config decides before `.gitignore` does, so a negation there also takes back
a path `.gitignore` ignores. Only the `.gitignore` files below the checked root are read
(nothing outside it is: the root's parents' files, `.git/info/exclude` and
`core.excludesFile` are not).
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.read.gitignore import (
    Pattern,
    PatternList,
    parse_pattern,
    patterns_of,
    trim_trailing_spaces,
)

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
#: a .gitignore larger than this is not read (a real one is a few kilobytes), and `-v` says so
MAX_GITIGNORE_BYTES = 1024 * 1024
BY_CONFIG = "excluded by config"
BY_DEFAULT = "excluded by default (set default_exclude: [] or exclude: ['!DIR/'] to check it)"
BY_GITIGNORE = "ignored by {file}"
GITIGNORE_TOO_LARGE = f"over {MAX_GITIGNORE_BYTES} bytes: not read, it ignores nothing"


def _config_pattern(text: str, index: int) -> Pattern | None:
    """A pattern of the config's lists, as a .gitignore line (`./x`, the old spelling of a
    path from the root, is gitignore's `/x`)."""
    line = trim_trailing_spaces(os.fsencode(text))
    if line.startswith(b"./"):
        line = b"/" + line[2:]
    return parse_pattern(line, index)


def _config_list(patterns: list[str]) -> PatternList:
    parsed = (_config_pattern(text, i) for i, text in enumerate(patterns))
    return PatternList([p for p in parsed if p is not None])


def valid(pattern: str) -> bool:
    """Whether a config pattern names something: not a lone `!` or `/`, not ending in a lone
    backslash (git keeps such lines, and they match no path)."""
    parsed = _config_pattern(pattern, 0)
    if parsed is None:
        return False
    text = parsed.text
    backslashes = len(text) - len(text.rstrip(b"\\"))
    return backslashes % 2 == 0


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
    # every pattern of the config names folders only (`vendor/`: the defaults): no file
    # matches one, so a file is left out by a .gitignore or not at all
    _folders_only: bool = field(default=False, compare=False, repr=False)

    def key(self) -> tuple:
        """What identifies these exclusions (a listing is cached per key)."""
        return (tuple(self.exclude), tuple(self.default), self.gitignore)

    def reason(self, rel: str, is_dir: bool = False, raw: str | None = None) -> str | None:
        """Why the walk leaves `rel` out, or None. `raw`: its name as the file system has it,
        when the walk shows it escaped (git compares the name's own bytes)."""
        if self._config is None:
            self._config = _config_list([*self.default, *self.exclude])
            self._folders_only = all(p.dir_only for p in self._config.patterns)
        if not is_dir and self._folders_only and not (self.gitignore and self._deepest):
            return None  # (a walk asks this of every file)
        path = os.fsencode(raw if raw is not None else rel).rstrip(b"/")
        decided = self._config.decide(path, is_dir)
        if decided is not None:
            if decided.negative:
                return None
            return BY_DEFAULT if decided.line < len(self.default) else BY_CONFIG
        return self._ignored(path, is_dir) if self.gitignore else None

    def _ignored(self, path: bytes, is_dir: bool) -> str | None:
        """The deepest .gitignore with a pattern for `path` decides."""
        for folder in self._deepest:
            prefix = os.fsencode(folder)
            if not path.startswith(prefix) or path == prefix.rstrip(b"/"):
                continue
            decided = self._ignores[folder].decide(path[len(prefix) :], is_dir)
            if decided is not None:
                return None if decided.negative else BY_GITIGNORE.format(file=folder + GITIGNORE)
        return None

    def add_gitignore(self, folder: str, raw: bytes) -> bool:
        """Take in `folder`'s .gitignore, given as the bytes the walk read (bounded, through
        read/safe_io.py: no link followed); False when it is too large to be taken."""
        if not self.gitignore:
            return True
        if len(raw) > MAX_GITIGNORE_BYTES:
            return False
        self._ignores[folder] = patterns_of(raw)
        self._deepest = tuple(sorted(self._ignores, key=len, reverse=True))
        return True


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
            if not valid(pattern):
                raise config.error(f"{key}[{i}]: {pattern!r} is not a gitignore pattern", key, i)
    return Exclusions(list(config.exclude), list(config.default_exclude), config.gitignore)
