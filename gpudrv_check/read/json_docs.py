"""JSON text → located documents, for the valid JSON that libyaml will not read.

`.json` files go through the YAML reader first (JSON is nearly a subset of YAML, and libyaml is
fast). libyaml refuses some valid JSON: surrogate-pair escapes (`"\\ud83d\\ude00"`), raw DEL, C1
or U+FFFE characters inside strings, keys longer than 1024 characters, and several values in
one file (a JSON stream, which kubectl reads). Those files are read here into the same located
`LMap`/`LSeq` trees, iteratively (no recursion) and with the YAML reader's depth limit.
Numbers read as Kubernetes reads them: integers that fit int64 stay integers, others are floats.
"""

from __future__ import annotations

import math
from json import JSONDecodeError
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed (C or Python)
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import LMap, LSeq, Pos
from gpudrv_check.core.yaml_scalars import json_number
from gpudrv_check.read.policy import builtin
from gpudrv_check.read.yaml_docs import (
    MAX_DEPTH,
    Doc,
    LineIndex,
    LoadProblem,
    ParsedFile,
    append_item,
    set_key,
)

_WS = lazy_compile(r"[ \t\n\r]*")
_NUMBER = lazy_compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_SURROGATE = lazy_compile("[\ud800-\udfff]")
# Kubernetes decodes JSON numbers as int64 when they are integers that fit, else float64
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

_SYNTAX_HINT = "Fix the syntax at this position; nothing after it in this file was checked."
_DEPTH_HINT = "Kubernetes objects are never this deep: this file is generated or hostile."

# what the parser expects next
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _NEXT = range(6)


class _JSONError(Exception):
    def __init__(self, index: int, message: str, syntax: bool = True) -> None:
        super().__init__(message)
        self.index = index
        self.message = message
        self.syntax = syntax


def _clean(text: str) -> str:
    """Lone surrogates (`"\\ud800"`) become U+FFFD, as Go's JSON decoder reads them."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _number(text: str, frac: str | None, exp: str | None) -> int | float:
    if frac is None and exp is None and len(text) <= 21:
        value = int(text)
        if _INT_MIN <= value <= _INT_MAX:
            return value
        return float(text)  # past 64 bits: the float the YAML reader gives too
    # kubectl decodes a JSON number into a float64 and encodes it again (k8s.io/apimachinery
    # util/json), as sigs.k8s.io/yaml does a YAML float: `2.0` reaches the API server as 2
    number = float(text)
    return json_number(number) if math.isfinite(number) else number


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = LineIndex(text)
        self.problems: list[LoadProblem] = []

    def skip(self, i: int) -> int:
        return _WS.match(self.text, i).end()  # type: ignore[union-attr]

    def string(self, i: int) -> tuple[str, int]:
        try:
            value, end = scanstring(self.text, i + 1, True)
        except JSONDecodeError as err:
            raise _JSONError(err.pos, err.msg.lower()) from None
        return _clean(value), end

    def value(self, i: int) -> tuple[Any, int]:
        """One JSON value starting at `i` (after whitespace); returns it and the end index."""
        text = self.text
        stack: list[list[Any]] = []  # [container, pending key, key position]
        expect = _VALUE
        while True:
            i = self.skip(i)
            if i >= len(text):
                raise _JSONError(i, "unexpected end of the JSON text")
            ch = text[i]
            raw: str | None = None
            if expect == _COLON:
                if ch != ":":
                    raise _JSONError(i, f"expected ':' after the key, found {quoted(ch)}")
                expect = _VALUE
                i += 1
                continue
            if expect in (_KEY, _KEY_OR_CLOSE) and ch == '"':
                key_pos = self.lines.pos(i)
                key, i = self.string(i)
                stack[-1][1], stack[-1][2] = key, key_pos
                expect = _COLON
                continue
            if expect == _NEXT and ch == ",":
                expect = _KEY if isinstance(stack[-1][0], LMap) else _VALUE
                i += 1
                continue
            closing = (expect in (_NEXT, _VALUE_OR_CLOSE) and ch == "]") or (
                expect in (_NEXT, _KEY_OR_CLOSE) and ch == "}"
            )
            if closing:
                if (ch == "}") != isinstance(stack[-1][0], LMap):
                    raise _JSONError(i, f"unexpected {quoted(ch)}")
                value = stack.pop()[0]
                pos = value.pos
                i += 1
            elif expect == _NEXT:
                close = "}" if isinstance(stack[-1][0], LMap) else "]"
                raise _JSONError(i, f"expected ',' or '{close}', found {quoted(ch)}")
            elif expect in (_KEY, _KEY_OR_CLOSE):
                raise _JSONError(i, f"expected a quoted key, found {quoted(ch)}")
            elif ch in "{[":
                if len(stack) >= MAX_DEPTH:
                    raise _JSONError(
                        i, f"nesting deeper than {MAX_DEPTH} levels; document not read", False
                    )
                pos = self.lines.pos(i)
                stack.append([LMap(pos) if ch == "{" else LSeq(pos), None, None])
                expect = _KEY_OR_CLOSE if ch == "{" else _VALUE_OR_CLOSE
                i += 1
                continue
            else:
                pos = self.lines.pos(i)
                if ch == '"':
                    value, i = self.string(i)
                elif text.startswith("true", i) or text.startswith("null", i):
                    raw = text[i : i + 4]
                    value = _LITERALS[raw]
                    i += 4
                elif text.startswith("false", i):
                    raw, value = "false", False
                    i += 5
                else:
                    number = _NUMBER.match(text, i)
                    if number is None:
                        raise _JSONError(i, f"expected a value, found {quoted(ch)}")
                    raw = number.group()
                    value = _number(raw, number.group(1), number.group(2))
                    i = number.end()
                if value is None:
                    raw = None
            if not stack:
                return value, i
            self.attach(stack[-1], value, pos, raw)
            expect = _NEXT

    def attach(self, frame: list[Any], value: Any, pos: Pos, raw: str | None) -> None:
        node = frame[0]
        if isinstance(node, LSeq):
            append_item(node, value, pos, raw)
            return
        key, key_pos = frame[1], frame[2]
        set_key(node, key, key_pos, value, raw, self.problems)


def parse_json(text: str) -> ParsedFile:
    """Every JSON value of the text (a stream of values is several documents)."""
    reader = _Reader(text)
    result = ParsedFile()
    index = 0
    i = reader.skip(0)
    while i < len(text):
        start = reader.lines.pos(i)
        try:
            value, i = reader.value(i)
        except _JSONError as err:
            line, col = reader.lines.clamp(err.index)
            reader.problems.append(
                LoadProblem(
                    builtin("unreadable-file").id,
                    line,
                    col,
                    f"JSON syntax error: {err.message}" if err.syntax else err.message,
                    _SYNTAX_HINT if err.syntax else _DEPTH_HINT,
                )
            )
            result.failed = True
            break
        result.docs.append(Doc(index, value, start))
        index += 1
        i = reader.skip(i)
    result.problems = reader.problems
    return result
