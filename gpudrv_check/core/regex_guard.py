"""Regular expressions from the repo or the config, checked for catastrophic backtracking
before they ever run (custom policy `pattern`/`patternProperties`, `cuda.images[].tag_regex`).

Python's `re` backtracks: `^(a+)+$` against 35 `a`s and a `!` never finishes. The blow-up
needs a repetition whose iterations can split the same text in more than one way. Two shapes
cover the known cases, and both are refused:

- a repetition whose body can end in an unbounded repetition, or an optional item, of
  characters the body can also start with (`(a+)+`, `(\\d+\\.?)*`, `([a-z]+[0-9]*)+`,
  `(a*)*`, `(aa?)*`, `(.*a){12}`): the inner one can take or leave each character the next
  iteration could start with;
- an unbounded repetition of an alternation whose branches can start with the same character
  (`(a|ab)*`, `(\\w|\\d)+`).

Separated repetitions such as `^[a-z0-9]+(-[a-z0-9]+)*$` pass: `-` tells the iterations apart.
The check works on the parsed pattern (the `re` module's own parser) and over-approximates
character classes (a class with characters beyond Latin-1 overlaps any other such class).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

try:  # Python 3.11+
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef, unused-ignore]  # used on 3.11+
    import sre_parse  # type: ignore[no-redef, unused-ignore]  # used on 3.11+

#: a counted repetition with more than this many iterations counts as unbounded
_UNBOUNDED_FROM = 16
_WIDE = -1  # stands for every character above U+00FF
_ALL = frozenset(range(256)) | {_WIDE}
_CATEGORIES = {
    sre_c.CATEGORY_DIGIT: frozenset(range(48, 58)) | {_WIDE},
    sre_c.CATEGORY_SPACE: frozenset(b" \t\n\r\f\v\x1c\x1d\x1e\x1f\x85\xa0") | {_WIDE},
    sre_c.CATEGORY_WORD: frozenset(c for c in range(256) if chr(c).isalnum() or c == ord("_"))
    | {_WIDE},
}
_CATEGORIES[sre_c.CATEGORY_NOT_DIGIT] = _ALL - _CATEGORIES[sre_c.CATEGORY_DIGIT] | {_WIDE}
_CATEGORIES[sre_c.CATEGORY_NOT_SPACE] = _ALL - _CATEGORIES[sre_c.CATEGORY_SPACE] | {_WIDE}
_CATEGORIES[sre_c.CATEGORY_NOT_WORD] = _ALL - _CATEGORIES[sre_c.CATEGORY_WORD] | {_WIDE}
_REPEATS = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT}


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` may not be used (it does not compile, or it can backtrack without
    bound), or None."""
    try:
        parsed = sre_parse.parse(pattern)
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        return f"invalid regular expression: {err}"
    risk = _scan(list(parsed), False)
    if risk is None:
        return None
    return (
        f"regular expression {pattern!r} can backtrack without bound ({risk}); rewrite it so "
        "that each repetition's iterations cannot split the same text two ways (e.g. "
        "`^(a+)+$` as `^a+$`)"
    )


def schema_patterns(schema: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(key path, pattern) of every regular expression a JSON Schema holds."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                yield (*path, key), value
            elif key == "patternProperties" and isinstance(value, dict):
                for name, sub in value.items():
                    if isinstance(name, str):
                        yield (*path, key, name), name
                    yield from schema_patterns(sub, (*path, key, name))
            else:
                yield from schema_patterns(value, (*path, key))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from schema_patterns(value, (*path, index))


def _scan(seq: list, in_repeat: bool) -> str | None:
    for op, av in seq:
        found = None
        if op in _REPEATS:
            low, high, body = av
            body = list(body)
            unbounded = high == sre_c.MAXREPEAT or high > _UNBOUNDED_FROM
            if high > 1:  # `(.*a){12}` costs n**12: a counted repetition is checked too
                found = _ambiguous(body)
            found = found or _scan(body, in_repeat or unbounded)
        elif op == getattr(sre_c, "POSSESSIVE_REPEAT", None):
            found = _scan(list(av[2]), False)  # possessive: never gives back
        elif op == getattr(sre_c, "ATOMIC_GROUP", None):
            found = _scan(list(av), False)
        else:
            for sub in _children(op, av):
                found = found or _scan(sub, in_repeat)
        if found:
            return found
    return None


def _children(op: Any, av: Any) -> list[list]:
    if op == sre_c.SUBPATTERN:
        return [list(av[-1])]
    if op == sre_c.BRANCH:
        return [list(b) for b in av[1]]
    if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        return [list(av[1])]
    if op == sre_c.GROUPREF_EXISTS:
        return [list(b) for b in av[1:] if b is not None]
    return []


def _ambiguous(body: list) -> str | None:
    """Whether the iterations of an unbounded repetition of `body` can split text two ways."""
    starts, ends = _first(body), _first(body, last=True)
    for chars in _tail_repeats(body):
        if chars & starts:
            return "a repetition inside a repetition can take the same characters"
    for chars in _tail_repeats(body, head=True):
        if chars & ends:
            return "a repetition inside a repetition can take the same characters"
    for op, av in _walk_heads(body):
        if op == sre_c.BRANCH:
            seen: set[int] = set()
            for branch in av[1]:
                first = _first(list(branch))
                if first & seen:
                    return "the branches of a repeated alternation can start alike"
                seen |= first
    return None


def _walk_heads(seq: list) -> Iterator[tuple[Any, Any]]:
    """The items a match of `seq` can start with (through groups and empty items)."""
    for op, av in seq:
        yield op, av
        if op == sre_c.SUBPATTERN:
            yield from _walk_heads(list(av[-1]))
        if not _nullable(op, av):
            return


def _first(seq: list, last: bool = False) -> frozenset[int]:
    """Characters a non-empty match of `seq` can start (or, `last`, end) with."""
    out: frozenset[int] = frozenset()
    for op, av in reversed(seq) if last else seq:
        out |= _first_of(op, av, last)
        if not _nullable(op, av):
            break
    return out


def _first_of(op: Any, av: Any, last: bool = False) -> frozenset[int]:
    if op in _REPEATS or op == getattr(sre_c, "POSSESSIVE_REPEAT", None):
        return _first(list(av[2]), last) if av[1] > 0 or last else frozenset()
    if op == sre_c.SUBPATTERN:
        return _first(list(av[-1]), last)
    if op == getattr(sre_c, "ATOMIC_GROUP", None):
        return _first(list(av), last)
    if op == sre_c.BRANCH:
        return frozenset().union(*(_first(list(b), last) for b in av[1]))
    return _chars_of(op, av)


def _chars_of(op: Any, av: Any) -> frozenset[int]:
    """Characters one item can consume (anywhere in it, for groups and repetitions)."""
    if op == sre_c.LITERAL:
        return frozenset((av if av < 256 else _WIDE,))
    if op == sre_c.NOT_LITERAL:
        return _ALL - {av}
    if op == sre_c.ANY:
        return _ALL
    if op == sre_c.IN:
        return _class(av)
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return frozenset()
    if op in _REPEATS or op == getattr(sre_c, "POSSESSIVE_REPEAT", None):
        return _all_chars(list(av[2]))
    if op == getattr(sre_c, "ATOMIC_GROUP", None):
        return _all_chars(list(av))
    children = _children(op, av)
    if children:
        return frozenset().union(*(_all_chars(c) for c in children))
    return _ALL  # a back reference, or anything unknown: could be any character


def _all_chars(seq: list) -> frozenset[int]:
    return frozenset().union(*(_chars_of(op, av) for op, av in seq)) if seq else frozenset()


def _class(items: list) -> frozenset[int]:
    out: set[int] = set()
    negate = False
    for op, av in items:
        if op == sre_c.NEGATE:
            negate = True
        elif op == sre_c.LITERAL:
            out.add(av if av < 256 else _WIDE)
        elif op == sre_c.RANGE:
            low, high = av
            out.update(range(low, min(high, 255) + 1))
            if high > 255:
                out.add(_WIDE)
        elif op == sre_c.CATEGORY:
            out |= _CATEGORIES.get(av, _ALL)
        else:
            out |= _ALL
    return (_ALL - out) | {_WIDE} if negate else frozenset(out)


def _nullable(op: Any, av: Any) -> bool:
    """Whether the item can match the empty string."""
    if op in _REPEATS or op == getattr(sre_c, "POSSESSIVE_REPEAT", None):
        return av[0] == 0 or _seq_nullable(list(av[2]))
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return True
    if op == sre_c.SUBPATTERN:
        return _seq_nullable(list(av[-1]))
    if op == getattr(sre_c, "ATOMIC_GROUP", None):
        return _seq_nullable(list(av))
    if op == sre_c.BRANCH:
        return any(_seq_nullable(list(b)) for b in av[1])
    if op == sre_c.GROUPREF_EXISTS:
        return True
    return op == sre_c.GROUPREF  # a back reference may be empty


def _seq_nullable(seq: list) -> bool:
    return all(_nullable(op, av) for op, av in seq)


def _tail_repeats(seq: list, head: bool = False) -> Iterator[frozenset[int]]:
    """Character sets of what a match of `seq` can end with and may or may not take: the
    unbounded repetitions and the optional items at its end (`a+`, `a?` in `(aa?)*`).
    `head`: the items it can start with instead (`.*` in `.*a`)."""
    for op, av in seq if head else reversed(seq):
        if op in _REPEATS and (av[1] == sre_c.MAXREPEAT or av[1] > _UNBOUNDED_FROM):
            yield _all_chars(list(av[2]))
        elif _nullable(op, av):
            yield _chars_of(op, av)
        elif op in _REPEATS:
            yield from _tail_repeats(list(av[2]), head)
        elif op == sre_c.SUBPATTERN:
            yield from _tail_repeats(list(av[-1]), head)
        elif op == sre_c.BRANCH:
            for branch in av[1]:
                yield from _tail_repeats(list(branch), head)
        if not _nullable(op, av):
            return
