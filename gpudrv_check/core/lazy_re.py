"""Regular expressions compiled when first used.

`re.compile` costs 10 to 400 µs a pattern (the `re` module's compiler is Python), and every
process compiles its patterns again: a module-level pattern is paid for by every run that
imports its module, used or not. A check of a repo after a one-line edit imports about 60 of
ours and used about 20 of them (the others quote TOML headers, JSON numbers, selector strings,
escapes for output formats it does not write...): their compiling was about 3 ms of a 140 ms
run. `lazy_compile` gives an object that compiles its pattern the first time one of its
attributes is asked for, then holds the compiled pattern's bound methods, so that later calls
cost what a compiled pattern's do.
"""

from __future__ import annotations

import re
from typing import Any, cast

#: what a compiled pattern offers (`re.Pattern`'s methods and data)
_ATTRIBUTES = (
    "match",
    "fullmatch",
    "search",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class _Lazy:
    __slots__ = ("_source", "_options", *_ATTRIBUTES)

    def __init__(self, source: str | bytes, options: int) -> None:
        self._source = source
        self._options = options

    def __getattr__(self, name: str) -> Any:
        # called only for an attribute not set yet: the first use compiles and sets them all
        # (not for a private or special name: `copy` and `pickle` ask an instance made without
        # `__init__` for `__setstate__`, whose `_source` is not set either)
        if name.startswith("_"):
            raise AttributeError(name)
        compiled = re.compile(self._source, self._options)
        for attribute in _ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        maker = "lazy_compile" if isinstance(self._source, str) else "lazy_compile_bytes"
        return f"{maker}({self._source!r}, {self._options!r})"

    def __reduce__(self) -> tuple[Any, tuple[str | bytes, int]]:
        maker = lazy_compile if isinstance(self._source, str) else lazy_compile_bytes
        return (maker, (self._source, self._options))

    def __copy__(self) -> _Lazy:
        return self  # as a compiled pattern: immutable

    def __deepcopy__(self, memo: Any) -> _Lazy:
        return self

    def _compiled(self) -> re.Pattern[Any]:
        return re.compile(self._source, self._options)  # re's own cache: compiled once

    def __eq__(self, other: object) -> bool:
        """Equal as the compiled patterns are (a record holding one compares it)."""
        if isinstance(other, _Lazy):
            other = other._compiled()
        return self._compiled() == other

    def __hash__(self) -> int:
        return hash(self._compiled())


def lazy_compile(source: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, compiled when first used (an invalid pattern raises
    `re.error` then, not here: a test compiles every one of ours, tests/core/test_lazy_re.py)."""
    return cast("re.Pattern[str]", _Lazy(source, flags))


def lazy_compile_bytes(source: bytes, flags: int = 0) -> re.Pattern[bytes]:
    """`lazy_compile` of a pattern over bytes."""
    return cast("re.Pattern[bytes]", _Lazy(source, flags))
