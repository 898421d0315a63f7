"""JSON with comments (JSONC): editor and tool settings (`settings.json`, `tsconfig.json`,
`devcontainer.json`) allow `//` and `/* */` comments and trailing commas, which JSON and YAML
refuse. Such a file is not a Kubernetes object (kubectl refuses JSONC too); it is read only to
tell that, so it is skipped like any other document that is not one, instead of being reported
as a syntax error.
"""

from __future__ import annotations

import re

_TRAILING = re.compile(r",(?=\s*[\]}])")


def without_comments(text: str) -> str | None:
    """`text` with its comments and trailing commas blanked (same length, newlines kept, so
    positions do not move); None when it has neither."""
    out = list(text)
    i, n = 0, len(text)
    changed = False
    while i < n:
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch == "/" and i + 1 < n and text[i + 1] in "/*":
            end = _comment_end(text, i)
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            changed = True
            i = end
            continue
        i += 1
    blanked = "".join(out)
    # a comma before a closing bracket, once comments are spaces (strings may hold ",]")
    stripped = _strip_trailing_commas(blanked)
    if stripped != blanked:
        changed = True
    return stripped if changed else None


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"' or text[i] == "\n":
            return i + 1
        i += 1
    return i


def _comment_end(text: str, start: int) -> int:
    if text[start + 1] == "/":
        end = text.find("\n", start)
        return len(text) if end < 0 else end
    end = text.find("*/", start + 2)
    return len(text) if end < 0 else end + 2


def _strip_trailing_commas(text: str) -> str:
    out = []
    last = 0
    i = 0
    while i < len(text):
        if text[i] == '"':
            i = _string_end(text, i)
            continue
        if text[i] == "," and _TRAILING.match(text, i):
            out.append(text[last:i])
            out.append(" ")
            last = i + 1
        i += 1
    out.append(text[last:])
    return "".join(out)
