"""Message wording shared by several rules (lists of names, counted nouns)."""

from __future__ import annotations

MAX_NAMES = 5


def names(items: list[str], limit: int = MAX_NAMES) -> str:
    """`a, b, c` or `a, b, c and 4 more`."""
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"


def plural(count: int, noun: str) -> str:
    """`1 replica` / `3 replicas`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
