"""git's ignore rules, as git applies them: a pattern list's parsing (dir.c
`add_patterns_from_buffer`, `trim_trailing_spaces`, `parse_path_pattern`), which pattern of a
list decides (`last_matching_pattern_from_list`: the last one that matches; `match_basename`,
`match_pathname`) and git's own glob matcher (wildmatch.c `dowild`).

Matching works on bytes, as git's does: `?` and a bracket take one byte. Each pattern keeps
what it needs for the quick answers git itself takes (a pattern without wildcards compared
whole, `*literal` compared by its end, the literal start of a path pattern compared before
the glob runs); the glob itself runs only on what gets past those.
"""

from __future__ import annotations

import os
from typing import Any

from gpudrv_check.core.records import record

_STAR, _QUESTION, _LBRACKET, _RBRACKET = 42, 63, 91, 93
_BACKSLASH, _SLASH, _BANG, _CARET, _DASH, _COLON = 92, 47, 33, 94, 45, 58
_GLOB_SPECIAL = frozenset(b"*?[\\")
_MATCH, _NOMATCH, _ABORT_ALL, _ABORT_TO_STARSTAR = 0, 1, -1, -2
#: a pattern longer than a path can be is kept as written but matches nothing (git has no
#: limit; this bounds the matcher's work on a hostile file)
MAX_PATTERN_BYTES = 4096


def _byte_set(test: Any) -> frozenset[int]:
    return frozenset(b for b in range(128) if test(chr(b)))


# the C library's character classes in the C locale (wildmatch.c CC_EQ; ASCII only)
_CLASSES = {
    b"alnum": _byte_set(str.isalnum),
    b"alpha": _byte_set(str.isalpha),
    b"blank": frozenset(b" \t"),
    b"cntrl": frozenset([*range(32), 127]),
    b"digit": frozenset(b"0123456789"),
    b"graph": frozenset(range(33, 127)),
    b"lower": _byte_set(str.islower),
    b"print": frozenset(range(32, 127)),
    b"punct": frozenset(b for b in range(33, 127) if not chr(b).isalnum()),
    b"space": frozenset(b" \t\n\v\f\r"),
    b"upper": _byte_set(str.isupper),
    b"xdigit": frozenset(b"0123456789abcdefABCDEF"),
}


def wildmatch(pattern: bytes, text: bytes, pathname: bool) -> bool:
    """Whether `text` matches the glob `pattern`; `pathname`: git's WM_PATHNAME (`*`, `?` and
    brackets stop at `/`, `**` between slashes crosses folders)."""
    return _dowild(pattern, 0, text, 0, pathname) == _MATCH


def _dowild(p: bytes, pi: int, t: bytes, ti: int, pathname: bool) -> int:
    start, plen, tlen = pi, len(p), len(t)
    while pi < plen:
        pc = p[pi]
        if ti >= tlen and pc != _STAR:
            return _ABORT_ALL
        tc = t[ti] if ti < tlen else 0
        if pc == _BACKSLASH:  # the next byte literally (none: matches no byte)
            pi += 1
            if tc != (p[pi] if pi < plen else 0):
                return _NOMATCH
        elif pc == _QUESTION:
            if pathname and tc == _SLASH:
                return _NOMATCH
        elif pc == _STAR:
            pi += 1
            if pi < plen and p[pi] == _STAR:
                before = pi - 2
                while pi < plen and p[pi] == _STAR:
                    pi += 1
                if not pathname:
                    match_slash = True
                elif (before < start or p[before] == _SLASH) and (
                    pi == plen
                    or p[pi] == _SLASH
                    or (p[pi] == _BACKSLASH and pi + 1 < plen and p[pi + 1] == _SLASH)
                ):
                    # `**/` after a slash: no folder at all first, then any number of them
                    if pi < plen and p[pi] == _SLASH and _dowild(p, pi + 1, t, ti, True) == _MATCH:
                        return _MATCH
                    match_slash = True
                else:
                    match_slash = False
            else:
                match_slash = not pathname
            if pi == plen:  # a trailing star: the rest, within the folder unless it crosses
                return _NOMATCH if not match_slash and t.find(b"/", ti) >= 0 else _MATCH
            if not match_slash and p[pi] == _SLASH:  # `*/`: the rest of this folder's name
                slash = t.find(b"/", ti)
                if slash < 0:
                    return _NOMATCH
                pi, ti = pi + 1, slash + 1
                continue
            while ti < tlen:
                tc = t[ti]
                literal = p[pi]
                if literal not in _GLOB_SPECIAL:  # skip to where the literal after `*` is
                    while ti < tlen and (match_slash or t[ti] != _SLASH):
                        if t[ti] == literal:
                            break
                        ti += 1
                    tc = t[ti] if ti < tlen else 0
                    if tc != literal:
                        return _NOMATCH
                matched = _dowild(p, pi, t, ti, pathname)
                if matched != _NOMATCH:
                    if not match_slash or matched != _ABORT_TO_STARSTAR:
                        return matched
                elif not match_slash and tc == _SLASH:
                    return _ABORT_TO_STARSTAR
                ti += 1
            return _ABORT_ALL
        elif pc == _LBRACKET:
            found = _bracket(p, pi, tc)
            if found is None:
                return _ABORT_ALL
            matched_class, pi = found
            if not matched_class or (pathname and tc == _SLASH):
                return _NOMATCH
        elif tc != pc:
            return _NOMATCH
        pi += 1
        ti += 1
    return _NOMATCH if ti < tlen else _MATCH


def _bracket(p: bytes, pi: int, tc: int) -> tuple[bool, int] | None:
    """A bracket expression at `p[pi]` (`[`) against the byte `tc`: (whether it matches,
    the index of its `]`), or None when the pattern ends inside it (git: no match at all)."""
    plen = len(p)

    def at(i: int) -> int:
        return p[i] if i < plen else 0

    pi += 1
    pc = at(pi)
    if pc == _CARET:
        pc = _BANG
    negated = pc == _BANG
    if negated:
        pi += 1
        pc = at(pi)
    prev, matched = 0, False
    while True:
        if pc == 0:
            return None
        if pc == _BACKSLASH:
            pi += 1
            pc = at(pi)
            if pc == 0:
                return None
            matched = matched or tc == pc
        elif pc == _DASH and prev and at(pi + 1) and at(pi + 1) != _RBRACKET:
            pi += 1
            pc = at(pi)
            if pc == _BACKSLASH:
                pi += 1
                pc = at(pi)
                if pc == 0:
                    return None
            matched = matched or prev <= tc <= pc
            pc = 0  # no range goes on from a range's end
        elif pc == _LBRACKET and at(pi + 1) == _COLON:
            name_at = pi + 2
            end = name_at
            while at(end) and at(end) != _RBRACKET:
                end += 1
            if not at(end):
                return None
            if end - name_at - 1 < 0 or p[end - 1] != _COLON:
                pc = _LBRACKET  # no `:]`: the `[` is an item of the set
                matched = matched or tc == pc
            else:
                members = _CLASSES.get(p[name_at : end - 1])
                if members is None:
                    return None  # an unknown class: the pattern matches nothing
                matched = matched or tc in members
                pi, pc = end, 0
        else:
            matched = matched or tc == pc
        prev = pc
        pi += 1
        pc = at(pi)
        if pc == _RBRACKET:
            return matched != negated, pi


@record(frozen=True, slots=True)
class Pattern:
    """One line of a pattern list, parsed as git parses it."""

    text: bytes  # without `!` and the trailing `/`; a leading `/` kept (match_pathname drops it)
    negative: bool
    dir_only: bool  # a trailing `/`: folders only
    basename: bool  # no `/` inside: matched against the last component at any depth
    literal: int  # bytes before the first wildcard (`simple_length`)
    ends_with: bool  # `*literal`: compared by its end
    line: int  # 1-based line in its file (or index in the config's list)
    # what any text it matches must end with (its bytes after the last glob character: the
    # glob is anchored at both ends), and how many slashes such a path has (-1: any, `**`)
    tail: bytes = b""
    slashes: int = -1
    # the longest run of literal bytes it has (a pattern without brackets and escapes): any
    # text it matches holds it
    core: bytes = b""


def simple_length(text: bytes) -> int:
    """The length of `text` before its first glob character."""
    for i, b in enumerate(text):
        if b in _GLOB_SPECIAL:
            return i
    return len(text)


def parse_pattern(line: bytes, number: int) -> Pattern | None:
    """A line after trimming (`trim_lines`); None when it names nothing (a lone `!` or `/`:
    git keeps those, and they match no path)."""
    text, negative = line, False
    if text[:1] == b"!":
        text, negative = text[1:], True
    dir_only = text.endswith(b"/")
    if dir_only:
        text = text[:-1]
    if not text or len(text) > MAX_PATTERN_BYTES:
        return None
    anchored = text[1:] if text[:1] == b"/" else text
    # after the last `*`, `?`, `[`, `]` or `\`: only literal bytes, outside any bracket
    last_glob = max(anchored.rfind(c) for c in (b"*", b"?", b"[", b"]", b"\\"))
    return Pattern(
        text=text,
        negative=negative,
        dir_only=dir_only,
        basename=b"/" not in text,
        literal=min(simple_length(text), len(text)),
        ends_with=text[:1] == b"*" and simple_length(text[1:]) == len(text) - 1,
        line=number,
        tail=_tail(anchored, last_glob),
        core=_core(anchored),
        # `*`, `?` and brackets never match a slash in a path, so without `**` (or an escape,
        # counted apart) every slash of the path is one of the pattern's
        slashes=anchored.count(b"/") if b"**" not in text and b"\\" not in text else -1,
    )


def _tail(text: bytes, last_glob: int) -> bytes:
    tail = text[last_glob + 1 :]
    if last_glob >= 0 and text[last_glob] == _STAR and tail[:1] == b"/":
        return tail[1:]  # after `**`, that slash may stand for no folder at all
    return tail


def _core(text: bytes) -> bytes:
    if b"[" in text or b"\\" in text:
        return b""
    # a slash after `**` may stand for no folder at all (`**/d` matches `d`): not required
    text = text.replace(b"**/", b"*").replace(b"?", b"*")
    return max(text.split(b"*"), key=len)


def trim_trailing_spaces(line: bytes) -> bytes:
    """git's `trim_trailing_spaces`: the spaces at the end go unless escaped (`\\ `); a tab
    stays."""
    last_space = -1
    i, n = 0, len(line)
    while i < n:
        b = line[i]
        if b == 32:
            if last_space < 0:
                last_space = i
        elif b == _BACKSLASH:
            i += 1
            if i >= n:
                return line
            last_space = -1
        else:
            last_space = -1
        i += 1
    return line if last_space < 0 else line[:last_space]


def lines_of(raw: bytes) -> list[tuple[int, bytes]]:
    """The pattern lines of a .gitignore as git reads them (`add_patterns_from_buffer`): a
    UTF-8 byte order mark skipped, lines ended by LF alone (one CR before it dropped), empty
    lines and lines starting with `#` left out, trailing spaces trimmed; with their numbers."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    out = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line or line[:1] == b"#":
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        line = line.split(b"\0", 1)[0]  # git's C string ends there
        out.append((number, trim_trailing_spaces(line)))
    return out


class PatternList:
    """The patterns of one file (or of the config), relative to one folder: which of them
    decides a path (`decide`), as git asks (`last_matching_pattern_from_list`)."""

    def __init__(self, patterns: list[Pattern]) -> None:
        self.patterns = patterns
        # the quick answers first: a whole name, a whole path (no wildcard: compared whole,
        # as git compares them), `*literal` (compared by its end); the other globs in order
        self.names: dict[bytes, list[int]] = {}
        self.paths: dict[bytes, list[int]] = {}
        self.endings: list[int] = []
        self.globs: list[int] = []
        for index, pattern in enumerate(patterns):
            text = pattern.text
            if pattern.literal == len(text):
                whole = self.names if pattern.basename else self.paths
                whole.setdefault(text[1:] if text[:1] == b"/" else text, []).append(index)
            elif pattern.basename and pattern.ends_with:
                self.endings.append(index)
            else:
                self.globs.append(index)
        self.suffixes = tuple(patterns[i].text[1:] for i in self.endings)

    def decide(self, path: bytes, is_dir: bool) -> Pattern | None:
        """The last pattern matching `path` (relative to this list's folder), or None."""
        patterns = self.patterns
        basename = path.rsplit(b"/", 1)[-1]
        best = -1
        for index in (*self.names.get(basename, ()), *self.paths.get(path, ())):
            if index > best and (is_dir or not patterns[index].dir_only):
                best = index
        if self.suffixes and basename.endswith(self.suffixes):
            for index in reversed(self.endings):
                if index < best:
                    break
                pattern = patterns[index]
                if (is_dir or not pattern.dir_only) and basename.endswith(pattern.text[1:]):
                    best = index
                    break
        for index in reversed(self.globs):
            if index < best:
                break
            pattern = patterns[index]
            if (is_dir or not pattern.dir_only) and _matches(pattern, path, basename):
                best = index
                break
        return patterns[best] if best >= 0 else None


def _matches(pattern: Pattern, path: bytes, basename: bytes) -> bool:
    text = pattern.text
    if pattern.basename:  # match_basename
        if pattern.ends_with:
            return basename.endswith(text[1:])
        # the glob is anchored at both ends: its literal start and end are the name's
        if (
            not basename.startswith(text[: pattern.literal])
            or not basename.endswith(pattern.tail)
            or pattern.core not in basename
        ):
            return False
        return wildmatch(text, basename, pathname=False)
    if (
        not path.endswith(pattern.tail)
        or (pattern.slashes >= 0 and path.count(b"/") != pattern.slashes)
        or pattern.core not in path
    ):
        return False
    # match_pathname: the pattern has the list's folder in front of it
    literal = pattern.literal
    if text[:1] == b"/":
        text, literal = text[1:], literal - 1
    if literal:
        if path[:literal] != text[:literal]:
            return False
        text, path = text[literal:], path[literal:]
        if not text and not path:
            return True
    return wildmatch(text, path, pathname=True)


def patterns_of(raw: bytes) -> PatternList:
    """A .gitignore's patterns."""
    parsed = (parse_pattern(line, number) for number, line in lines_of(raw))
    return PatternList([p for p in parsed if p is not None])


def encoded(rel: str) -> bytes:
    """A path as git compares it: the name's own bytes."""
    return os.fsencode(rel)
