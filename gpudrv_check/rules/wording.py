"""Message wording shared by several rules (lists of names, counted nouns)."""

from __future__ import annotations

MAX_NAMES = 5


def names(items: list[str], limit: int = MAX_NAMES, total: int | None = None) -> str:
    """`a, b, c` or `a, b, c and 4 more`. ``total``: how many there are when ``items`` holds
    only the first of them (at least ``limit`` of them, so that none is spelled out for a
    long list that is cut at once)."""
    count = len(items) if total is None else total
    if count <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {count - limit} more"


def plural(count: int, noun: str) -> str:
    """`1 replica` / `3 replicas`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
