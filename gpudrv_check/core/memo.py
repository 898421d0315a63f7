"""Results of pure functions of located data, remembered by the text of their input.

A repo's workloads repeat the same pieces (a chart's tolerations, node affinity and resources,
copied into every release): the API server's validation of such a piece says the same of each
copy. The located trees hold builtin values only (the loader's str, int, float, bool, None,
dicts and lists), whose `repr` names the type and the value of each, so two pieces with the
same repr are equal, type for type, and a function that reads nothing else of them (no
position, no raw text: its messages quote values) gives the same result for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: distinct inputs remembered at most (the table starts again when full)
LIMIT = 4096
#: an input whose text is longer is not remembered (a hostile file's megabytes of it)
LONGEST = 4096
#: what the table holds for an input not seen yet (None is a result like any other)
_UNSEEN: Any = object()


class TextMemo(Generic[T]):
    """One function's results by the repr of its input (see the module docstring). The
    results are shared between callers: they must not be changed (tuples, not lists)."""

    def __init__(self) -> None:
        self.table: dict[str, T] = {}

    def get(self, value: object, compute: Callable[..., T], *args: Any) -> T:
        """The result for `value`: remembered, or `compute(*args)` (its result remembered)."""
        return self.by_text(repr(value), compute, *args)

    def by_text(self, key: str, compute: Callable[..., T], *args: Any) -> T:
        """`get` of the value whose repr the caller made already (`key`)."""
        if len(key) > LONGEST:
            return compute(*args)
        table = self.table
        found = table.get(key, _UNSEEN)
        if found is _UNSEEN:
            if len(table) >= LIMIT:
                table.clear()
            found = table[key] = compute(*args)
        return found
