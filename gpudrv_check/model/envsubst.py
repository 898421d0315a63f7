"""The `${...}` language of Flux post-build substitution (fluxcd/pkg envsubst), parsed and
evaluated as kustomize-controller does, for model/placeholders.py.

Written from the behaviour of fluxcd/pkg envsubst (a fork of drone/envsubst):

- parse/scan.go `scanner`: text is anything up to `${`; `$$` is an escaped `$` in text
  (`scanEscaped`, escape chars `dollar` in `parseAny`), and in the arguments of `/` replace
  also `\\/` and `\\\\` (escapeAll, mode `scanEscape`); a name is letters, digits and `_`
  (`acceptIdent`, so `${1A}` is a name); only `${...}` is a placeholder, never `$VAR`.
- parse/parse.go `parseFunc` and the functions it calls: `${#N}`, `${N}`, `${N=w}`,
  `${N:=w}` `${N:-w}` `${N:?w}` `${N:+w}` (`parseDefaultFunc`, several arguments, each text or
  a nested `${...}`), `${N:off}` `${N:off:len}` (`parseSubstrFunc`), `${N,}` `${N,,}` `${N^}`
  `${N^^}` (`parseCasingFunc`, up to two of `,^`), `${N/p/s}` `${N//p/s}` `${N/#p/s}`
  `${N/%p/s}` (`parseReplaceFunc`), `${N#p}` `${N##p}` `${N%p}` `${N%%p}`
  (`parseRemoveFunc`); anything else is an error (`bad substitution`, `missing closing
  brace`, `unable to parse variable name`, ...), and Flux's build fails with it.
- template.go `evalFunc`: arguments are evaluated first, then the variable is looked up; in
  strict mode a variable that is not set fails unless the operator is a default one
  (`isDefaultOp`: `- + = ? :- :+ := :?`); `lookupFunc` maps every default operator, `:+`
  included, and any other name (`,^`) to `toDefault` (the value, or the joined arguments
  when the value is empty).
- funcs.go: the string functions; lengths and offsets are in bytes (Go strings), the trims
  match `path.Match` globs (path/match.go), the suffix trims on the reversed value and
  pattern (`reverse`, by runes).

What this module does not reproduce exactly raises `Unsupported` (the value is then unknown,
never a literal): case mapping of non-ASCII text (Go's simple mapping is not Python's),
offsets that split a UTF-8 character, values or nesting past the limits below.
"""

from __future__ import annotations

from collections.abc import Callable

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record

#: texts, values and results longer than this (characters) are not evaluated: unknown
MAX_TEXT = 65_536
#: `${...}` nested deeper than this is not evaluated: unknown
MAX_DEPTH = 32
#: work allowed to glob trims (value length squared times pattern length) per `Budget`
MAX_GLOB_WORK = 100_000_000


class Budget:
    """Work left for glob trims, shared by the evaluations of a run (model/placeholders.py
    makes one per `substitute`), so hostile input costs at most this much in all."""

    __slots__ = ("left",)

    def __init__(self, work: int = MAX_GLOB_WORK) -> None:
        self.left = work

    def spend(self, work: int) -> None:
        if work > self.left:
            raise Unsupported("glob trims past the work allowed")
        self.left -= work


# Go's error texts (parse/parse.go), as Flux reports them
BAD_SUBSTITUTION = "bad substitution"
MISSING_BRACE = "missing closing brace"
VARIABLE_NAME = "unable to parse variable name"
FUNC_SUBSTITUTION = "unable to parse substitution within function"
DEFAULT_FUNCTION = "unable to parse default function"

#: operators that take a default (template.go `isDefaultOp`): no strict-mode error
DEFAULT_OPS = frozenset(("-", "+", "=", "?", ":-", ":+", ":=", ":?"))


class BuildError(Exception):
    """Flux's envsubst refuses the text: the Kustomization's build fails with this reason."""


class Unsupported(Exception):
    """Not modelled exactly here: the value is unknown."""


@record(slots=True)
class Func:
    """One `${...}`: the variable, the operator as scanned (`""` for `${N}`) and the
    arguments, each a list of text pieces and nested `Func`s."""

    param: str
    name: str
    args: list[list[str | Func]]


Nodes = list  # list[str | Func]


def _ident_char(c: str) -> bool:
    # Go unicode.IsLetter / IsDigit; Python's isalpha/isdecimal agree on what YAML holds
    return c == "_" or c.isalpha() or c.isdecimal()


class _Scanner:
    """Reads the text as parse/scan.go `scanner` does: a token is either `${`, `}` (when the
    mode looks for them) or a run of accepted characters, with escapes folded in."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_lbrack(self, i: int) -> bool:
        return self.text.startswith("${", i)

    def escaped(self, i: int, backslash: bool) -> bool:
        c = self.text[i]
        nxt = self.text[i + 1 : i + 2]
        if c == "$" and nxt == "$":
            return True
        return backslash and c == "\\" and nxt in ("/", "\\")

    def run(
        self,
        accept: Callable[[str, int], bool],
        lbrack: bool = False,
        escape: bool = False,
        backslash: bool = False,
    ) -> str | None:
        """A run of characters `accept` takes (its second argument: the run's length so far,
        the character included), stopping before `${` when `lbrack`; None when the first
        character is not taken (parse/scan.go `scanIdent`)."""
        text, start, out = self.text, self.pos, []
        i = start
        first = True
        while i < len(text):
            if not first and lbrack and self.at_lbrack(i):
                break
            if escape and i + 1 < len(text) and self.escaped(i, backslash):
                out.append(text[i + 1])
                i += 2
                first = False
                continue
            if not accept(text[i], i - start + 1):
                if first:
                    return None
                break
            out.append(text[i])
            i += 1
            first = False
        if first:
            return None
        self.pos = i
        return "".join(out)


class _Parser:
    """parse/parse.go `Tree`, as a loop for the text and recursion (bounded) for `${`."""

    def __init__(self, text: str) -> None:
        self.s = _Scanner(text)
        self.depth = 0

    def fail(self, reason: str) -> BuildError:
        return BuildError(reason)

    def document(self) -> Nodes:
        """parseAny: text (with `$$` escapes) and placeholders, to the end."""
        s = self.s
        out: Nodes = []
        while s.pos < len(s.text):
            if s.at_lbrack(s.pos):
                s.pos += 2
                out.append(self.func())
                continue
            piece = s.run(lambda c, i: True, lbrack=True, escape=True)
            if piece is None:  # never: every character is text here
                raise Unsupported("unreadable text")
            out.append(piece)
        return out

    def func(self) -> Func:
        """parseFunc, after `${`."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported(f"placeholders nested more than {MAX_DEPTH} deep")
        try:
            return self._func()
        finally:
            self.depth -= 1

    def _func(self) -> Func:
        s = self.s
        if s.peek() == "#":  # parseLenFunc
            s.pos += 1
            name = s.run(lambda c, i: _ident_char(c))
            if name is None:
                raise self.fail(BAD_SUBSTITUTION)
            self.close()
            return Func(name, "#", [])
        name = s.run(lambda c, i: _ident_char(c))
        if name is None:
            raise self.fail(VARIABLE_NAME)
        nxt = s.peek()
        if nxt == ":":
            after = s.text[s.pos + 1 : s.pos + 2]
            if after in ("=", "-", "?", "+"):
                return self.default(name)
            return self.substring(name)
        if nxt == "=":
            return self.default(name)
        if nxt in (",", "^"):
            op = s.run(lambda c, i: c in ",^" and i < 3)
            self.close()
            return Func(name, op or "", [])
        if nxt == "/":
            return self.replace(name)
        if nxt in ("#", "%"):
            op = s.run(lambda c, i: c == nxt and i < 3)
            arg = self.param(lambda c, i: c != "}")
            self.close()
            return Func(name, op or "", [[arg]])
        if nxt == "}":
            s.pos += 1
            return Func(name, "", [])
        raise self.fail(MISSING_BRACE)

    def param(self, accept: Callable[[str, int], bool], backslash: bool = False) -> str | Func:
        """parseParam: one argument piece, a nested `${...}` or a run of text."""
        s = self.s
        if s.at_lbrack(s.pos):
            s.pos += 2
            return self.func()
        piece = s.run(accept, lbrack=True, escape=backslash, backslash=backslash)
        if piece is None:
            raise self._past_end(FUNC_SUBSTITUTION)
        return piece

    def _past_end(self, reason: str) -> Exception:
        """An argument that reaches the end of the value: in Flux's text it runs on into
        what follows the value, which is not known here."""
        if self.s.pos >= len(self.s.text):
            return Unsupported("a placeholder's argument runs past the end of the value")
        return self.fail(reason)

    def close(self) -> None:
        """consumeRbrack."""
        s = self.s
        if s.peek() != "}":
            raise self._past_end(BAD_SUBSTITUTION)
        s.pos += 1

    def default(self, name: str) -> Func:
        """parseDefaultFunc: `=` alone, or `:` with one of `=-?+`; arguments to `}`."""
        s = self.s
        op = "=" if s.peek() == "=" else s.text[s.pos : s.pos + 2]
        s.pos += len(op)
        pieces: Nodes = []
        while s.peek() != "}":
            pieces.append(self.param(lambda c, i: c != "}"))
        s.pos += 1
        return Func(name, op, [[p] for p in pieces])

    def substring(self, name: str) -> Func:
        """parseSubstrFunc: `:offset` and an optional `:length` (several colons between)."""
        s = self.s
        s.pos += 1  # the one colon of the operator
        first = self.param(lambda c, i: c not in ":}")
        args = [[first]]
        if s.peek() == "}":
            s.pos += 1
            return Func(name, ":", args)
        if s.run(lambda c, i: c == ":") is None:
            raise self._past_end(BAD_SUBSTITUTION)
        args.append([self.param(lambda c, i: c != "}")])
        self.close()
        return Func(name, ":", args)

    def replace(self, name: str) -> Func:
        """parseReplaceFunc: `/`, `//`, `/#` or `/%`, a pattern, `/` (or several), and an
        optional replacement; `\\/` and `$$` escape in both."""
        s = self.s
        op = s.run(lambda c, i: (i == 1 and c == "/") or (i == 2 and c in "/#%"))
        args = [[self.param(lambda c, i: c != "/", backslash=True)]]
        if s.run(lambda c, i: c == "/") is None:
            raise self._past_end(BAD_SUBSTITUTION)
        if s.peek() == "}":
            s.pos += 1
            return Func(name, op or "", args)
        args.append([self.param(lambda c, i: c != "}", backslash=True)])
        self.close()
        return Func(name, op or "", args)


def parse(text: str) -> Nodes:
    """The text as pieces of text and placeholders; BuildError when Flux refuses it,
    Unsupported when it is too long or nested too deep to evaluate here."""
    if len(text) > MAX_TEXT:
        raise Unsupported("value too long")
    return _Parser(text).document()


#: lookup(name) -> (value, set): value None when unknown
Lookup = Callable[[str], tuple[str | None, bool]]


def evaluate(
    nodes: Nodes, lookup: Lookup, strict: bool, unknown: set[str], budget: Budget | None = None
) -> str | None:
    """The text Flux substitutes (envsubst `Template.Execute`), or None when it depends on an
    unknown variable (their names are added to `unknown`). BuildError in strict mode for a
    variable that is not set, as template.go `evalFunc`."""
    budget = budget or Budget()
    out: list[str] = []
    known, size = True, 0
    for node in nodes:
        value = node if isinstance(node, str) else _func(node, lookup, strict, unknown, budget)
        if value is None:
            known = False
        elif known:
            out.append(value)
            size += len(value)
            if size > MAX_TEXT:
                raise Unsupported("value too long")
    return "".join(out) if known else None


def _func(
    node: Func, lookup: Lookup, strict: bool, unknown: set[str], budget: Budget
) -> str | None:
    args = [evaluate(arg, lookup, strict, unknown, budget) for arg in node.args]
    value, is_set = lookup(node.param)
    if value is None:
        unknown.add(node.param)
    elif strict and not is_set and node.name not in DEFAULT_OPS:
        raise BuildError(f'variable not set (strict mode): "{node.param}"')
    if value is None or any(a is None for a in args):
        return None
    return apply(node.name, value, args, budget)  # type: ignore[arg-type]


def apply(name: str, s: str, args: list[str], budget: Budget) -> str:
    """funcs.go, by template.go `lookupFunc`."""
    if name == "#" and not args:
        return str(len(_bytes(s)))  # toLen: bytes
    if name in (",", ",,", "^", "^^"):
        return _case(name, s)
    if name in ("#", "##", "%", "%%"):
        return _trim(name, s, args[0], budget) if args else s
    if name == ":":
        return _substr(s, args)
    if name in ("/", "//", "/#", "/%"):
        return _replace(name, s, args)
    # toDefault: every default operator (`:+` too) and any other operator name
    return "".join(args) if not s and args else s


def _bytes(s: str) -> bytes:
    try:
        return s.encode()
    except UnicodeEncodeError as e:
        raise Unsupported("not UTF-8") from e


def _case(name: str, s: str) -> str:
    """toLower, toUpper (whole), toLowerFirst, toUpperFirst (first rune): ASCII only, Go's
    unicode simple case mapping is not Python's."""
    if not s:
        return s
    part = s if len(name) == 2 else s[0]
    if not part.isascii():
        raise Unsupported("case of non-ASCII text")
    changed = part.lower() if name[0] == "," else part.upper()
    return changed if len(name) == 2 else changed + s[1:]


_ATOI = lazy_compile(r"[+-]?[0-9]+\Z")
_INT64 = 2**63


def _atoi(text: str) -> int | None:
    """strconv.Atoi: decimal ASCII digits with a sign, int64; None when it fails."""
    if not _ATOI.match(text) or len(text) > 25:
        return None
    n = int(text)
    return n if -_INT64 <= n < _INT64 else None


def _substr(s: str, args: list[str]) -> str:
    """toSubstr, on bytes."""
    data = _bytes(s)
    pos = _atoi(args[0])
    if pos is None:
        return s
    if pos < 0:
        pos = max(len(data) + pos, 0)
    if len(args) == 1:
        return _text(data[pos:]) if pos < len(data) else ""
    length = _atoi(args[1])
    if length is None:
        return s
    end = pos + length
    if not -_INT64 <= end < _INT64:
        raise Unsupported("offset overflows")  # Go's int wraps around
    if end >= len(data):
        return _text(data[pos:]) if pos < len(data) else ""
    if end < pos:
        raise Unsupported("negative length")  # Go's slice panics
    return _text(data[pos:end])


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise Unsupported("an offset splits a character") from e


def _replace(name: str, s: str, args: list[str]) -> str:
    """replaceFirst `/`, replaceAll `//`, replacePrefix `/#`, replaceSuffix `/%`."""
    if name in ("/#", "/%"):
        if len(args) != 2:
            return s
        old, new = args
        if name == "/#":
            out = s.replace(old, new, 1) if s.startswith(old) else s
        else:
            out = s[: len(s) - len(old)] + new if s.endswith(old) else s
    else:
        old, new = args[0], args[1] if len(args) > 1 else ""
        count = 1 if name == "/" else (s.count(old) if old else len(s) + 1)
        if len(s) + count * len(new) > MAX_TEXT:
            raise Unsupported("value too long")
        out = s.replace(old, new, 1 if name == "/" else -1)
    if len(out) > MAX_TEXT:
        raise Unsupported("value too long")
    return out


def _trim(name: str, s: str, pattern: str, budget: Budget) -> str:
    """trimShortestPrefix `#`, trimLongestPrefix `##`, and the suffix ones `%` `%%` on the
    reversed value and pattern (funcs.go `trimShortest`, `trimLongest`, `reverse`)."""
    suffix = name[0] == "%"
    if suffix:
        s, pattern = s[::-1], pattern[::-1]
    data, pat = _bytes(s), _bytes(pattern)
    budget.spend(len(data) * len(data) * (len(pat) + 1))
    longest = len(name) == 2
    cut: int | None = None
    # prefixes from the whole value down to one byte (never the empty one)
    for end in range(len(data), 0, -1):
        matched = glob_match(pat, data[:end])
        if matched is None:
            cut = None  # a bad pattern: the value as it is
            break
        if matched:
            cut = end
            if longest:
                break
    if cut is not None:
        data = data[cut:]
    out = _text(data)
    return out[::-1] if suffix else out


def _rune(data: bytes, i: int) -> tuple[int, int]:
    """utf8.DecodeRune at `i`: (code point, width); 0xFFFD and width 1 when invalid."""
    b = data[i]
    if b < 0x80:
        return b, 1
    for width in (2, 3, 4):
        try:
            return ord(data[i : i + width].decode()), width
        except UnicodeDecodeError:
            continue
    return 0xFFFD, 1


def glob_match(pattern: bytes, name: bytes) -> bool | None:
    """path.Match (fluxcd/pkg envsubst/path/match.go): `*`, `?`, `[...]` with `^` and ranges,
    `\\` escapes; None for a malformed pattern (ErrBadPattern), which the trims treat as no
    match of anything."""
    while pattern:
        star, chunk, pattern = _chunk(pattern)
        if star and not chunk:
            return True  # a trailing star matches the rest (names have no `/` here)
        rest, ok, bad = _match_chunk(chunk, name)
        if ok and (not rest or pattern):
            name = rest
            continue
        if bad:
            return None
        if star:
            found = False
            for i in range(len(name)):
                rest, ok, bad = _match_chunk(chunk, name[i + 1 :])
                if ok:
                    if not pattern and rest:
                        continue
                    name, found = rest, True
                    break
                if bad:
                    return None
            if found:
                continue
        return False
    return not name


def _chunk(pattern: bytes) -> tuple[bool, bytes, bytes]:
    """scanChunk: leading stars, then up to the next star outside brackets."""
    star = False
    while pattern[:1] == b"*":
        pattern, star = pattern[1:], True
    inrange, i = False, 0
    while i < len(pattern):
        c = pattern[i : i + 1]
        if c == b"\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == b"[":
            inrange = True
        elif c == b"]":
            inrange = False
        elif c == b"*" and not inrange:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _match_chunk(chunk: bytes, s: bytes) -> tuple[bytes, bool, bool]:
    """matchChunk: (rest of s, matched, bad pattern)."""
    while chunk:
        if not s:
            return s, False, False
        c = chunk[0:1]
        if c == b"[":
            r, n = _rune(s, 0)
            s, chunk = s[n:], chunk[1:]
            negated = chunk[:1] == b"^"
            if negated:
                chunk = chunk[1:]
            match, ranges = False, 0
            while True:
                if chunk[:1] == b"]" and ranges > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk, bad = _escaped_rune(chunk)
                if bad:
                    return s, False, True
                hi = lo
                if chunk[:1] == b"-":
                    hi, chunk, bad = _escaped_rune(chunk[1:])
                    if bad:
                        return s, False, True
                if lo <= r <= hi:
                    match = True
                ranges += 1
            if match == negated:
                return s, False, False
        elif c == b"?":
            _, n = _rune(s, 0)
            s, chunk = s[n:], chunk[1:]
        else:
            if c == b"\\":
                chunk = chunk[1:]
                if not chunk:
                    return s, False, True
            if chunk[0] != s[0]:
                return s, False, False
            s, chunk = s[1:], chunk[1:]
    return s, True, False


def _escaped_rune(chunk: bytes) -> tuple[int, bytes, bool]:
    """getEsc: one (possibly `\\`-escaped) rune of a bracket; bad when missing, `-`, `]`,
    invalid, or when nothing follows it."""
    if not chunk or chunk[:1] in (b"-", b"]"):
        return 0, chunk, True
    if chunk[:1] == b"\\":
        chunk = chunk[1:]
        if not chunk:
            return 0, chunk, True
    r, n = _rune(chunk, 0)
    bad = r == 0xFFFD and n == 1
    rest = chunk[n:]
    return r, rest, bad or not rest
