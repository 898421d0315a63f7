"""Label selectors written as strings (``app in (trainer),tier!=web``), as ``labels.Parse``
(k8s.io/apimachinery/pkg/labels/selector.go) reads them for list options such as the
upgrade policy's ``podSelector``.

The grammar of ``Parse``: requirements separated by commas and ANDed, each ``[!]KEY`` alone
(exists, does not exist) or ``KEY`` followed by ``in``/``notin`` and a parenthesised list,
``=``/``==``/``!=`` and one value, or ``>``/``<`` and one integer; the empty string selects
everything. The lexer (``Lexer.Lex``) splits at blanks (space, tab, CR, LF) and at the symbols
``= ! ( ) , > <`` (``!=`` and ``==`` are one token); ``in`` and ``notin`` are operators after a
key and values anywhere else. A value may be empty (``k=``, ``k in (a,,b)``, ``k in ()`` is the
set of the empty string). Every requirement is checked as ``NewRequirement`` checks it: the key
a qualified name, each value a label value, a ``>``/``<`` value an integer (``strconv.ParseInt``
base 10, 64 bits).

``parse_selector`` returns None for text ``labels.Parse`` rejects (so the caller can say so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.k8s.labels import is_valid_label_key, is_valid_label_value

Matcher = Callable[[Mapping[str, str]], bool]

_BLANKS = " \t\r\n"
_SYMBOLS = "=!(),><"
#: a token: a two-character operator, a symbol, or a run of anything else
_TOKEN = lazy_compile(r"!=|==|[=!(),><]|[^=!(),><\0" + _BLANKS + "]+")
_KEYWORDS = ("in", "notin")
#: strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, within int64
_INT = lazy_compile(r"[+-]?[0-9]+")
_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Invalid(Exception):
    """The text is no selector labels.Parse accepts."""


def _tokens(text: str) -> list[str]:
    """The lexer's tokens, blanks dropped; "" ends them (EndOfStringToken). The lexer reads a
    NUL byte as its end of input (`Lexer.read` returns 0 there): where a token would start it
    ends the tokens, right after a token it is consumed with it."""
    out: list[str] = []
    at = 0
    while at < len(text):
        if text[at] in _BLANKS:
            at += 1
            continue
        if text[at] == "\0":
            break
        match = _TOKEN.match(text, at)
        assert match is not None  # every other character is a symbol or starts a run
        out.append(match.group())
        at = match.end()
        if text[at : at + 1] == "\0":
            at += 1
    out.append("")
    return out


def _is_identifier(token: str) -> bool:
    """In the Values context (`Parser.lookahead`), `in` and `notin` are identifiers too."""
    return token != "" and token not in _SYMBOLS and token not in ("!=", "==")


def _integer(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at]

    def take(self) -> str:
        self.at += 1
        return self.tokens[self.at - 1]

    def selector(self) -> list[Matcher]:
        """`Parser.parse`: requirements until the end of the string."""
        found: list[Matcher] = []
        while True:
            token = self.peek()
            if token == "":
                return found
            if not (_is_identifier(token) or token == "!"):
                raise _Invalid
            found.append(self.requirement())
            after = self.take()
            if after == "":
                return found
            if after != "," or not (_is_identifier(self.peek()) or self.peek() == "!"):
                raise _Invalid

    def requirement(self) -> Matcher:
        """`parseRequirement` and `NewRequirement`'s checks."""
        absent = self.peek() == "!"
        if absent:
            self.take()
        key = self.take()
        if not _is_identifier(key) or not is_valid_label_key(key):
            raise _Invalid
        if absent or self.peek() in ("", ","):
            return _absent(key) if absent else _exists(key)
        operator = self.take()  # the KeyAndOperator context: `in` and `notin` are operators
        if operator in _KEYWORDS:
            values = self.value_set()
        elif operator in ("=", "==", "!=", ">", "<"):
            values = {self.exact_value()}
        else:
            raise _Invalid
        if not all(is_valid_label_value(v) for v in values):
            raise _Invalid
        if operator in (">", "<"):
            bound = _integer(next(iter(values)))
            if bound is None:
                raise _Invalid
            return _compare(key, bound, operator == ">")
        if operator in ("in", "=", "=="):
            return _one_of(key, frozenset(values))
        return _none_of(key, frozenset(values))

    def value_set(self) -> set[str]:
        """`parseValues` and `parseIdentifiersList`: `()` is {""}, an empty item is ""."""
        if self.take() != "(":
            raise _Invalid
        first = self.peek()
        if first == ")":
            self.take()
            return {""}
        if not (_is_identifier(first) or first == ","):
            raise _Invalid
        values: set[str] = set()
        while True:
            token = self.take()
            if _is_identifier(token):
                values.add(token)
                if self.peek() == ",":
                    continue
                if self.peek() == ")":
                    break
                raise _Invalid
            if token != ",":
                raise _Invalid
            if not values:
                values.add("")  # `(,`
            if self.peek() == ")":
                values.add("")  # `,)`
                break
            if self.peek() == ",":
                self.take()
                values.add("")  # `,,`
        if self.take() != ")":
            raise _Invalid
        return values

    def exact_value(self) -> str:
        """`parseExactValue`: one value, empty before a comma or the end."""
        if self.peek() in ("", ","):
            return ""
        token = self.take()
        if not _is_identifier(token):
            raise _Invalid
        return token


def _exists(key: str) -> Matcher:
    return lambda labels: key in labels


def _absent(key: str) -> Matcher:
    return lambda labels: key not in labels


def _one_of(key: str, values: frozenset[str]) -> Matcher:
    return lambda labels: key in labels and labels[key] in values


def _none_of(key: str, values: frozenset[str]) -> Matcher:
    return lambda labels: key not in labels or labels[key] not in values


def _compare(key: str, bound: int, greater: bool) -> Matcher:
    """`Requirement.Matches` for Gt and Lt: a label whose value is no integer never matches."""

    def matches(labels: Mapping[str, str]) -> bool:
        value = _integer(labels[key]) if key in labels else None
        if value is None:
            return False
        return value > bound if greater else value < bound

    return matches


def parse_selector(text: str) -> Matcher | None:
    """A predicate over a pod's labels, or None when the text is not a valid selector."""
    try:
        checks = _Parser(text).selector()
    except _Invalid:
        return None
    return lambda labels: all(check(labels) for check in checks)
