"""The walk's ignore rules against git's own (read/gitignore.py; issue 22 review): which files
a working tree's walk reads, for .gitignore files and config patterns, as `git ls-files
--others --exclude-standard` lists them. Each row's expectation is what git 2.39 answers
(dir.c `last_matching_pattern_from_list`, `match_basename`, `match_pathname`,
`add_patterns_from_buffer`, `trim_trailing_spaces`; wildmatch.c `dowild`); with a `git`
command on PATH each case of CASES is also asked of git itself."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpudrv_check.read.exclude import Exclusions, exclusions_of
from gpudrv_check.read.gitignore import wildmatch
from gpudrv_check.read.tree import WorkingTree

DOC = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

# (.gitignore files by folder, manifest files, the files git leaves in)
CASES = [
    # a `x/**` pattern does not match the folder itself: a file below is taken back
    ({"": b"gen/**\n!gen/keep.yaml\n"}, ["gen/keep.yaml", "gen/other.yaml"], ["gen/keep.yaml"]),
    # `**/` and `*/` match folders at any depth
    ({"": b"**/\n"}, ["top.yaml", "sub/a.yaml"], ["top.yaml"]),
    ({"": b"e/d\n", "e/": b"!*/\n"}, ["e/d/a.yaml"], ["e/d/a.yaml"]),
    # the allow-list idiom
    ({"": b"*\n!*/\n!*.yaml\n"}, ["top.yaml", "sub/a.yaml"], ["sub/a.yaml", "top.yaml"]),
    # a negation for a folder decides that folder only, not what is below it
    ({"": b"*.yaml\n", "d/": b"!e/\n"}, ["d/e/a.yaml"], []),
    ({"": b"e/\n!d/\n"}, ["d/e/a.yaml", "d/b.yaml"], ["d/b.yaml"]),
    # POSIX classes in brackets; one byte per `?`
    ({"": b"[[:alpha:]].yaml\n"}, ["a.yaml", "1.yaml"], ["1.yaml"]),
    ({"": b"?.yaml\n"}, ["\u00e9.yaml", "b.yaml"], ["\u00e9.yaml"]),
    # `./` is no spelling of the root in a .gitignore
    ({"": b"./a.yaml\n"}, ["a.yaml"], ["a.yaml"]),
    # spaces: a leading one is part of the name, trailing ones go unless escaped, a tab stays
    ({"": b" a.yaml\n"}, ["a.yaml", " a.yaml"], ["a.yaml"]),
    ({"": b"d\\ \n"}, ["d /x.yaml", "d/x.yaml"], ["d/x.yaml"]),
    ({"": b"a.yaml\t\n"}, ["a.yaml"], ["a.yaml"]),
    ({"": b"a.yaml   \n"}, ["a.yaml"], []),
    # lines end at LF (a CR before it dropped, a lone CR is part of the pattern); a BOM
    ({"": b"a.yaml\rb.yaml\n"}, ["a.yaml", "b.yaml"], ["a.yaml", "b.yaml"]),
    ({"": b"a.yaml\r\nb.yaml\r\n"}, ["a.yaml", "b.yaml", "c.yaml"], ["c.yaml"]),
    ({"": b"\xef\xbb\xbfa.yaml\n"}, ["a.yaml", "b.yaml"], ["b.yaml"]),
    # `**` after a path pattern's literal start crosses folders (match_pathname strips it)
    ({"": b"d**/a.yaml\n"}, ["d/e/a.yaml", "x/a.yaml"], ["x/a.yaml"]),
    # escapes, comments, a line git cannot use
    ({"": b"\\#h.yaml\n#b.yaml\n\\!e.yaml\n[a-\n"}, ["#h.yaml", "b.yaml", "!e.yaml"], ["b.yaml"]),
    # the deeper file decides; the last matching line of a file decides
    ({"": b"*.yaml\n", "d/": b"!keep.yaml\n"}, ["d/keep.yaml", "d/x.yaml"], ["d/keep.yaml"]),
    ({"": b"!a.yaml\n*.yaml\n"}, ["a.yaml"], []),
    # a folder left out is not walked: nothing below it is taken back
    ({"": b"d/\n!d/a.yaml\n"}, ["d/a.yaml"], []),
    ({"": b"/d/*\n!/d/e\n"}, ["d/a.yaml", "d/e/b.yaml"], ["d/e/b.yaml"]),
    # `**/` may stand for no folder at all, wherever it is
    ({"": b"**/d\n"}, ["d/a.yaml", "x/d/b.yaml", "e/c.yaml"], ["e/c.yaml"]),
    ({"": b"*.yaml\n!**/a.yaml\n"}, ["a.yaml", "x/a.yaml", "b.yaml"], ["a.yaml", "x/a.yaml"]),
    ({"": b"a/**/b.yaml\n"}, ["a/b.yaml", "a/x/y/b.yaml", "b.yaml"], ["b.yaml"]),
    ({"": b"**a.yaml\n"}, ["xa.yaml", "d/a.yaml", "b.yaml"], ["b.yaml"]),
    # a pattern with a slash is anchored to its file's folder
    ({"d/": b"e/a.yaml\n"}, ["d/e/a.yaml", "d/x/e/a.yaml"], ["d/x/e/a.yaml"]),
]


def _tree(root: Path, ignores: dict[str, bytes], files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(DOC)
    for folder, text in ignores.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / ".gitignore").write_bytes(text)


def _walked(root: Path) -> list[str]:
    listing = WorkingTree(root).list_manifests(exclusions_of([], gitignore=True))
    return sorted(f.rel for f in listing.files)


def _git_lists(root: Path) -> list[str] | None:
    if shutil.which("git") is None:
        return None
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    out = subprocess.run(
        ["git", "-c", "core.excludesFile=/dev/null", "ls-files", "-z", "--others"]
        + ["--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    names = [os.fsdecode(p) for p in out.split(b"\0") if p.endswith(b".yaml")]
    return sorted(names)


@pytest.mark.parametrize(("ignores", "files", "kept"), CASES)
def test_the_walk_leaves_out_what_git_ignores(tmp_path: Path, ignores, files, kept):
    _tree(tmp_path, ignores, files)
    assert _walked(tmp_path) == sorted(kept)
    from_git = _git_lists(tmp_path)
    if from_git is not None:
        assert from_git == sorted(kept)


# config patterns: the same matcher over the root, the defaults first
@pytest.mark.parametrize(
    ("exclude", "path", "is_dir", "excluded"),
    [
        (["gen/**", "!gen/keep.yaml"], "gen", True, False),
        (["gen/**", "!gen/keep.yaml"], "gen/keep.yaml", False, False),
        (["gen/**", "!gen/keep.yaml"], "gen/x.yaml", False, True),
        (["**/"], "sub", True, True),
        (["*", "!*/", "!*.yaml"], "sub", True, False),
        (["e/", "!d/"], "d/e", True, True),
        (["[[:digit:]].yaml"], "1.yaml", False, True),
        (["./top.yaml"], "top.yaml", False, True),  # in the config `./` is the root
        (["./top.yaml"], "sub/top.yaml", False, False),
    ],
)
def test_config_patterns_decide_as_git_does(exclude, path, is_dir, excluded):
    got = Exclusions(exclude, []).reason(path, is_dir=is_dir)
    assert (got is not None) is excluded, got


@pytest.mark.parametrize(
    ("pattern", "text", "pathname", "expected"),
    [
        (b"*.yaml", b"a/b.yaml", True, False),  # `*` stops at a slash with WM_PATHNAME
        (b"*.yaml", b"a/b.yaml", False, True),
        (b"a/**/b", b"a/b", True, True),  # `/**/` is also no folder at all
        (b"a/**/b", b"a/x/y/b", True, True),
        (b"a/**", b"a/", True, True),
        (b"a**b", b"a/b", True, False),  # not between slashes: one folder's `*`
        (b"**/b", b"b", True, True),
        (b"[!a]", b"/", True, False),  # a bracket never matches `/` in a path
        (b"[!a]", b"/", False, True),
        (b"[]a]", b"]", False, True),
        (b"[a-c]x", b"bx", False, True),
        (b"[c-a]x", b"bx", False, False),  # a reversed range is empty
        (b"[[:foo:]]", b"f", False, False),  # an unknown class: no match at all
        (b"[[:a]", b"[", False, True),  # no `:]`: `[` and `:` are items of the set
        (b"a\\", b"a", False, False),  # a trailing backslash matches nothing
        (b"\\*", b"*", False, True),
        (b"[a", b"a", False, False),  # an unclosed bracket matches nothing
    ],
)
def test_wildmatch(pattern: bytes, text: bytes, pathname: bool, expected: bool):
    assert wildmatch(pattern, text, pathname) is expected
