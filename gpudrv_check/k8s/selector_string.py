"""Label selectors written as strings (``app in (trainer),tier!=web``), as ``labels.Parse``
(k8s.io/apimachinery/pkg/labels/selector.go) reads them for list options such as the
upgrade policy's ``podSelector``.

Supported: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists) and
``!k`` (does not exist), comma-separated and ANDed; the empty string selects everything.
``parse_selector`` returns None for text labels.Parse rejects (so the caller can say so).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Matcher = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"\s*([^\s!=,()]+)\s+(in|notin)\s+\(([^()]*)\)\s*")
_EQ_RE = re.compile(r"\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)\s*")
_EXISTS_RE = re.compile(r"\s*(!?)\s*([^\s!=,()]+)\s*")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _requirement(part: str) -> Matcher | None:
    match = _SET_RE.fullmatch(part)
    if match:
        key, op = match.group(1), match.group(2)
        values = {v.strip() for v in match.group(3).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    match = _EQ_RE.fullmatch(part)
    if match:
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = _EXISTS_RE.fullmatch(part)
    if match:
        negate, key = match.group(1) == "!", match.group(2)
        return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
    return None


def parse_selector(text: str) -> Matcher | None:
    """A predicate over a pod's labels, or None when the text is not a valid selector."""
    if not text.strip():
        return lambda labels: True
    matchers = [_requirement(part) for part in _split(text)]
    if any(m is None for m in matchers):
        return None
    checks = [m for m in matchers if m is not None]
    return lambda labels: all(check(labels) for check in checks)
