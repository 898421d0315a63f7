"""The fast path of the YAML reader: block-style manifests read line by line.

Almost every manifest in a GitOps repo is written in one plain subset of YAML: block mappings
and sequences, one `key: value` or `- item` per line, plain or simply quoted scalars, one-line
flow lists and mappings of scalars, literal and folded block scalars (`|`, `>-`: a ConfigMap's
script, a rule's description), comments, `---` between documents. For such a file, what
each distinct line holds is worked out once with one regular-expression match (most lines of a
repo are written many times over), and a stack of open collections follows the indentation:
the same located tree as the libyaml event builder (read/yaml_docs.py) gives, at a fraction of
its cost (the builder runs Python code for each of the two or three events of a line).

It is exact or it declines: `parse_block` returns the ParsedFile the event builder returns for
the same text and skim plan, or None, and the caller then runs the event builder. It declines
what is outside the subset — anchors, aliases, tags, block scalars with an indentation
indicator (`|2`) or with no text, plain and quoted scalars over several lines, escapes in
double quotes, nested flow collections, flow collections over several lines, directives,
`...`, tabs, CR line ends, characters YAML refuses — and any file the builder reports a
problem for (a duplicate key, a syntax error, nesting too deep), so it never
words a problem itself. tests/load/test_block_yaml.py holds it to the builder, tree for tree and
position for position, on every YAML file of the repository and a generated corpus; the fuzz
targets (tests/fuzz, `block`) on generated, mutated and dumped texts.
"""

from __future__ import annotations

import re
from sys import intern
from typing import Any

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import LMap, LSeq, Pos
from gpudrv_check.core.reads import NOTHING_SKIPPED, SkimPlan
from gpudrv_check.core.yaml_scalars import NULLS as _NULLS
from gpudrv_check.core.yaml_scalars import resolve_plain
from gpudrv_check.read.yaml_docs import (
    MAX_DEPTH,
    POSITIONS,
    Doc,
    ParsedFile,
    _share,
    _too_deep,
    append_item,
    kept_empty,
    shared_items,
    shared_layout,
    skims,
)

# Characters the subset leaves to libyaml: tabs, CR (and the other line breaks libyaml counts
# that editors do not: NEL, LS, PS), the BOM, and every character YAML does not allow.
# (compiled for a long text that is not ASCII only: the expression costs 3 ms to compile, a
# tenth of the start-up a run spends on regular expressions)
OUTSIDE_CHARS = (
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# the ASCII characters `OUTSIDE_CHARS` does not match
_INSIDE_ASCII = b"\n" + bytes(range(0x20, 0x7F))
# the code points it does not match, as ranges
_INSIDE = (
    (0x0A, 0x0A),
    (0x20, 0x7E),
    (0xA0, 0x2027),
    (0x202A, 0xD7FF),
    (0xE000, 0xFEFE),
    (0xFF00, 0xFFFD),
    (0x10000, 0x10FFFF),
)
# a text that is not ASCII and shorter than this is checked by its distinct characters
_BY_CHARACTER = 1 << 16
_outside_search: Any = None


def _outside(text: str) -> bool:
    """Whether `text` holds a character `OUTSIDE_CHARS` matches. An ASCII text (most
    manifests) is checked by deleting the bytes it may hold, several times faster than the
    expression's scan of every character; another short one by its distinct characters,
    each against `_INSIDE` (a small repo then never compiles the expression)."""
    global _outside_search
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _INSIDE_ASCII))
    if len(text) < _BY_CHARACTER:
        return not all(
            any(low <= code <= high for low, high in _INSIDE) for code in map(ord, set(text))
        )
    if _outside_search is None:
        _outside_search = re.compile(OUTSIDE_CHARS).search
    return _outside_search(text) is not None


# One line: indent, a sequence dash, a plain key and its colon, the rest. A plain key has no
# blank, `:` or `#` and does not start with an indicator (a key starting with `-`, or one with a
# blank or a colon inside, is not read as a key here: the line then declines).
_LINE = re.compile(r"( *)(- +)?(?:([^ :#'\"&*!|>%@`{}\[\],?\-][^ :#]*):(?: +|\Z))?(.*)\Z")
# A quoted key (`"a.b/c": x`, `'x': y`) and the rest after its colon
_DQ_KEY = re.compile(r'"([^"\\]*)":(?: +|\Z)(.*)\Z')
_SQ_KEY = lazy_compile(r"'((?:[^']|'')*)':(?: +|\Z)(.*)\Z")
# what may follow a quoted scalar or a flow collection on its line: blanks, and a comment
_TAIL = re.compile(r"(?: +(?:#.*)?)?\Z")
# One-line flow collections: a scalar (double-quoted without escapes, single-quoted, or plain
# with no `:`, `#`, `?` or flow indicator in it: this libyaml ends a flow plain scalar at `?`)
# and the separator after it; for a mapping, a key scalar, `: ` and a value scalar. A plain
# scalar takes blanks only before another of its characters, so it never ends in blanks and
# no run of blanks is tried twice (a lazy `.*?` before ` *,` is quadratic in a long run).
_FLOW_CHAR = r"[^ :#,\[\]{}?]"
_FLOW_SCALAR = (
    r"(?:\"([^\"\\]*)\"|'((?:[^']|'')*)'"
    r"|((?:[^ :#'\"&*!|>%@`{}\[\],?\-]|-" + _FLOW_CHAR + r")"
    r"(?:" + _FLOW_CHAR + r"| +(?=" + _FLOW_CHAR + r"))*))"
)
_FLOW_ITEM = lazy_compile(r" *" + _FLOW_SCALAR + r" *(,|\])")
_FLOW_PAIR = lazy_compile(r" *" + _FLOW_SCALAR + r" *: +" + _FLOW_SCALAR + r" *(,|\})")
_FLOW_EMPTY = lazy_compile(r"[\[{] *([\]}])")
# A block scalar's header after its key or dash: the style, a chomping indicator, blanks and a
# comment (an indentation indicator, or a comment with no blank before it, declines)
_BLOCK_HEADER = lazy_compile(r"([|>])([+-]?)(?: +(?:#.*)?)?\Z")
# characters that make a value more than a plain scalar on one line, at its start
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@` ")
#: a simple key is at most this long (libyaml: 1024 characters, then "could not find
#: expected ':'"); longer keys decline
_MAX_KEY = 1000
_positions_get = POSITIONS.get

# What a line holds, worked out once per distinct line text (most lines of a repo are written
# many times: `      containers:`, `        operator: Exists`): a tuple
# (indent, dash, column, what, key, value, raw), where `dash` says the line is a list item,
# `column` is the 0-based column of the key (or of the item), `key` the key or None (a plain
# item), and `what` one of:
_SCALAR = 0  # the value is the scalar `value` (`raw`: its written text when it is typed)
_OPEN = 1  # `key:` alone: the value is on the following lines
_FLOW = 2  # a one-line flow collection: `value` is (is a list, column, items), see _flow
_MARKER = 3  # `---`: a document starts
_BLOCK = 4  # a block scalar's header (`|`, `>-`...): `value` is (literal, chomping, parent's
#: indentation); its text is on the following lines (_block_scalar)
_BLANK = None  # a blank line, or a comment
#: lines by their text, up to _MAX_LINES lines of at most _MAX_LINE characters (a long line
#: is rarely written twice); emptied when a run's reading ends (`forget`). A line is kept from
#: its second sighting on: most distinct lines of a repo are written once (a name, an image,
#: a label value: 43k of the 45k distinct lines of the 10k benchmark corpus), and keeping them
#: cost 16 MB of the run's peak and the time to free them
_LINES: dict[str, tuple[Any, ...] | None] = {}
_MAX_LINES = 200_000
_MAX_LINE = 200
_lines_get = _LINES.get
#: the lines seen once, by a slot of their hash (a slot two lines share keeps the second one
#: early: harmless, the memo only saves work)
_SEEN_BITS = 20
_SEEN_MASK = (1 << _SEEN_BITS) - 1
_SEEN = bytearray(1 << _SEEN_BITS)


class _Decline(Exception):
    """The text is outside the subset: the event builder reads it."""


class _Frame:
    """An open block collection: its node, the column of its keys or dashes, the key whose
    value is open (a mapping's; kept until that value is complete, as the event builder keeps
    it, since the skim plan reads the keys above a collection), and whether it is inside a
    skimmed value (built to be checked, then dropped)."""

    __slots__ = ("node", "is_map", "indent", "key", "key_pos", "skim")

    def __init__(self, node: Any, is_map: bool, indent: int, skim: bool) -> None:
        self.node = node
        self.is_map = is_map
        self.indent = indent
        self.key: str | None = None
        self.key_pos: Pos | None = None
        self.skim = skim


def forget() -> None:
    """Drop the lines remembered (the end of a run's reading: their texts are not needed)."""
    _LINES.clear()
    _SEEN[:] = bytes(len(_SEEN))


def _pos(line: int, column: int) -> Pos:
    pos = (line, column)
    return _positions_get(pos) or _share(pos)


def _scalar(rest: str) -> tuple[Any, str | None]:
    """The scalar written on one line as `rest` (a comment and trailing blanks after it):
    (value, its written text when it is a plain scalar whose value is not a string), strings
    interned as the event builder interns them. Declines what is no plain or simply quoted
    scalar on one line."""
    first = rest[0]
    if first == '"' or first == "'":
        value, tail = _quoted(rest)
        if not _TAIL.match(tail):
            raise _Decline
        return value, None
    if first in _INDICATORS and not (first == "-" and len(rest) > 1 and rest[1] != " "):
        raise _Decline
    text = rest
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut]
    text = text.rstrip(" ")
    if ": " in text or text[-1] == ":":
        raise _Decline  # `a: b: c`: libyaml refuses a mapping value here
    value = resolve_plain(text)
    if value.__class__ is str:
        return intern(value), None
    return value, None if value is None else text


def _quoted(text: str) -> tuple[str, str]:
    """The quoted scalar at the start of `text` (on one line): its value and what follows."""
    if text[0] == '"':
        end = text.find('"', 1)
        if end < 0:
            raise _Decline
        body = text[1:end]
        if "\\" in body:
            raise _Decline
        return intern(body), text[end + 1 :]
    at = 1
    while True:
        end = text.find("'", at)
        if end < 0:
            raise _Decline
        if text[end + 1 : end + 2] == "'":
            at = end + 2
            continue
        return intern(text[1:end].replace("''", "'")), text[end + 1 :]


def _flow_scalar(match: re.Match[str], group: int) -> tuple[Any, str | None, int]:
    """The scalar of a `_FLOW_SCALAR` whose groups start at `group`: (value, raw, offset)."""
    dq, sq, plain = match.group(group, group + 1, group + 2)
    if dq is not None:
        return intern(dq), None, match.start(group) - 1
    if sq is not None:
        return intern(sq.replace("''", "'")), None, match.start(group + 1) - 1
    value, raw = _scalar(plain.rstrip(" "))
    return value, raw, match.start(group + 2)


def _flow_items(text: str, column: int) -> tuple[bool, int, tuple[Any, ...]]:
    """A one-line flow collection of scalars at 0-based `column` (`["--epochs", "10"]`,
    `{type: integer, minimum: 0}`, `[]`): (is a list, its column, items), an item being
    (value, raw, column) in a list and (key, column, value, raw) in a mapping."""
    is_list = text[0] == "["
    empty = _FLOW_EMPTY.match(text)
    if empty is not None:
        if (empty.group(1) == "]") != is_list or not _TAIL.match(text, empty.end()):
            raise _Decline
        return is_list, column, ()
    pattern = _FLOW_ITEM if is_list else _FLOW_PAIR
    close = "]" if is_list else "}"
    items: list[tuple[Any, ...]] = []
    keys: set[str] = set()
    at = 1
    while True:
        match = pattern.match(text, at)
        if match is None:
            raise _Decline
        if is_list:
            value, raw, start = _flow_scalar(match, 1)
            items.append((value, raw, column + start))
        else:
            key, key_raw, key_start = _flow_scalar(match, 1)
            # libyaml's limit on a simple key: from its first character to its `:`
            written = (
                match.end(3) if match.group(3) is not None else max(match.end(1), match.end(2)) + 1
            )
            if text.index(":", written) - key_start > _MAX_KEY:
                raise _Decline
            if key_raw is not None:
                key = intern(key_raw)  # a typed key is its written text, as the builder keeps it
            if key.__class__ is not str or key in keys or key == "<<":
                raise _Decline  # a null key, a duplicate, a merge: left to the builder
            keys.add(key)
            value, raw, start = _flow_scalar(match, 4)
            items.append((key, column + key_start, value, raw))
        at = match.end()
        if match.group(4 if is_list else 7) == close:
            break
    if not _TAIL.match(text, at):
        raise _Decline
    return is_list, column, tuple(items)


def _flow(spec: tuple[bool, int, tuple[Any, ...]], number: int, shared: bool) -> LMap | LSeq:
    """The collection a `_flow_items` spec describes, on line `number`; `shared`: its
    mapping layout is shared as the builder shares those it builds (not in a skimmed value)."""
    is_list, column, items = spec
    pos = _pos(number, column + 1)
    if not is_list:
        node = LMap(pos)
        for key, at, value, raw in items:
            node[key] = value
            node.kpos[key] = _pos(number, at + 1)
            if raw is not None:
                if node.raw is None:
                    node.raw = {}
                node.raw[key] = raw
        if shared:
            node.kpos = shared_layout(node.kpos)
        return node
    seq = LSeq(pos)
    for value, raw, at in items:
        append_item(seq, value, _pos(number, at + 1), raw)
    if shared:
        seq.ipos = shared_items(seq.ipos)
    return seq


def _quoted_key(text: str) -> tuple[str, str] | None:
    """`"key": rest` or `'key': rest`: (key, rest); None when the text is no quoted key.
    Declines a key written longer than libyaml takes (`_MAX_KEY`, counted as written:
    `''` is two characters there)."""
    match = (_DQ_KEY if text[0] == '"' else _SQ_KEY).match(text)
    if match is None:
        return None
    if match.end(1) > _MAX_KEY:
        raise _Decline
    key = match.group(1)
    return intern(key if text[0] == '"' else key.replace("''", "'")), match.group(2)


def _classify(line: str) -> tuple[Any, ...] | None:
    """What a line holds (see _SCALAR), or _BLANK; declines a line outside the subset."""
    indent_text, dash, key, rest = _LINE.match(line).groups()  # type: ignore[union-attr]
    if dash is None and key is None and (not rest or rest[0] == "#"):
        return _BLANK
    indent = len(indent_text)
    if indent == 0:
        if line.startswith("---") and (len(line) == 3 or line[3] == " "):
            rest = line[3:].lstrip(" ")
            if rest and rest[0] != "#":
                raise _Decline  # content after `---`
            return (0, False, 0, _MARKER, None, None, None)
        if line.startswith(("...", "%")):
            raise _Decline  # a document end marker, a directive
    column = indent
    if dash is not None:
        column = indent + len(dash)
        if key is None:
            if not rest or rest[0] == "#" or rest[0] == "-" and rest[1:2] in ("", " "):
                raise _Decline  # an empty item, or `- - x`
            quoted = _quoted_key(rest) if rest[0] in ("'", '"') else None
            if quoted is None:
                if rest[0] in ("[", "{"):
                    flow = _flow_items(rest, column)
                    return (indent, True, column, _FLOW, None, flow, None)
                if rest[0] in "|>":  # a block scalar item: its parent is the list, at the dash
                    return (indent, True, column, _BLOCK, None, _block_header(rest, indent), None)
                value, raw = _scalar(rest)
                return (indent, True, column, _SCALAR, None, value, raw)
            key, rest = quoted
    elif key is None:
        quoted = _quoted_key(rest) if rest[0] in ("'", '"') else None
        if quoted is None:
            raise _Decline  # no key where a mapping needs one
        key, rest = quoted
    if key in _NULLS or len(key) > _MAX_KEY or key == "<<":
        raise _Decline  # a null key, a key libyaml finds too long, a merge
    key = intern(key)
    if not rest or rest[0] == "#":
        return (indent, dash is not None, column, _OPEN, key, None, None)
    if rest[0] in ("[", "{"):
        flow = _flow_items(rest, len(line) - len(rest))
        return (indent, dash is not None, column, _FLOW, key, flow, None)
    if rest[0] in "|>":  # a block scalar: its parent is the mapping, at the key's column
        return (indent, dash is not None, column, _BLOCK, key, _block_header(rest, column), None)
    value, raw = _scalar(rest)
    return (indent, dash is not None, column, _SCALAR, key, value, raw)


def _block_header(rest: str, parent: int) -> tuple[bool, str, int]:
    """(literal, chomping indicator, the indentation of the collection it is in)."""
    match = _BLOCK_HEADER.match(rest)
    if match is None:
        raise _Decline  # an indentation indicator, or text after the header
    return (match.group(1) == "|", match.group(2), parent)


def _block_scalar(lines: list[str], at: int, header: tuple[bool, str, int]) -> tuple[str, int]:
    """The value of the block scalar whose text starts at `lines[at]` (the line after its
    header), and the index of the first line after it. As libyaml's scanner reads it
    (scanner.c `yaml_parser_scan_block_scalar` and `..._breaks`): the indentation is the
    first non-empty line's, and no less than one past the parent's; a line less indented ends
    the scalar; within it, empty lines (at most that many spaces) are line breaks; a folded
    scalar (`>`) joins two lines with a space when no empty line is between them and neither
    starts with a blank (is more indented); the chomping indicator keeps the final line break
    (none), drops it (`-`) or keeps it and the empty lines after it (`+`).

    The last element of `lines` is the text after the final line break, which no line break
    follows. Declines a scalar with no text (its first line belongs to the parent) and one
    whose leading empty lines are indented deeper than its first line."""
    literal, chomping, parent = header
    last = len(lines) - 1
    j = at
    deepest = 0  # the most spaces on a leading empty line
    breaks = 0  # line breaks waiting to be added (empty lines)
    while True:
        if j > last:
            raise _Decline
        line = lines[j]
        spaces = len(line) - len(line.lstrip(" "))
        if spaces < len(line):
            break
        if j == last:
            raise _Decline  # no text before the end
        deepest = max(deepest, spaces)
        breaks += 1
        j += 1
    indent = spaces
    if indent != max(deepest, spaces, parent + 1):
        raise _Decline
    out: list[str] = []
    leading_break = ""
    leading_blank = False
    while True:
        body = lines[j][indent:]
        trailing_blank = body[0] == " "
        if not literal and leading_break and not leading_blank and not trailing_blank:
            if not breaks:
                out.append(" ")
        else:
            out.append(leading_break)
        if breaks:
            out.append("\n" * breaks)
            breaks = 0
        leading_blank = trailing_blank
        out.append(body)
        j += 1
        if j > last:  # the text ends on this line, no line break after it
            leading_break = ""
            break
        leading_break = "\n"
        column = -1
        while True:  # empty lines, and the indentation of the next line with text
            line = lines[j]
            eaten = min(indent, len(line) - len(line.lstrip(" ")))
            if eaten < len(line):
                column = eaten
                break
            if j == last:
                break
            breaks += 1
            j += 1
        if column != indent:
            break
    if chomping != "-":
        out.append(leading_break)
        if chomping == "+" and breaks:
            out.append("\n" * breaks)
    return intern("".join(out)), j


def parse_block(text: str, plan: SkimPlan = NOTHING_SKIPPED) -> ParsedFile | None:
    """The located documents of `text` when it is in the subset this reader knows (exactly
    what read/yaml_docs.parse_text gives for it), else None."""
    if _outside(text) or _too_deep(text) is not None:
        return None  # (a text with brackets nested too deep: the builder refuses it whole)
    try:
        return _Reader(plan).read(text)
    except _Decline:
        return None


class _Reader:
    """One text, line by line: a stack of open block collections, opened and closed by
    indentation as libyaml's scanner opens and closes them."""

    def __init__(self, plan: SkimPlan) -> None:
        self.plan = plan
        # the keys whose collections the plan may skip below the top level, and whether it
        # skips whole kinds (a top-level value): only for these is `skims` asked
        self.skim_keys = plan.node_status | plan.container
        self.skim_top = bool(plan.kinds)
        self.result = ParsedFile()
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.doc_index = -1
        self.doc_pos: Pos | None = None
        self.in_doc = False

    def read(self, text: str) -> ParsedFile:
        stack = self.stack
        lines_get, positions_get, seen = _lines_get, _positions_get, _SEEN
        # the keys and depth where the plan may skip (`skims`), tested here first: most
        # collections open where it cannot
        skim_keys, skim_top = self.skim_keys, self.skim_top
        plan_skims = skims
        plan = self.plan
        new_map, new_seq = dict.__new__, list.__new__
        top: _Frame | None = None  # stack[-1]
        pending = False  # the top mapping's key waits for its value on a later line
        number = 0
        lines = text.split("\n")
        skip = 0  # the lines up to this number are a block scalar's text, read already
        for line in lines:
            number += 1
            if number <= skip:
                continue
            what: Any = lines_get(line, line)  # the line itself: not seen yet
            if what is line:
                what = _classify(line)
                if len(line) <= _MAX_LINE:
                    slot = hash(line) & _SEEN_MASK
                    if not seen[slot]:
                        seen[slot] = 1  # kept if it comes again
                    elif len(_LINES) < _MAX_LINES:
                        _LINES[line] = what
            if what is _BLANK:
                continue
            indent, dash, column, kind, key, value, raw = what
            if kind == _BLOCK:
                value, skip = _block_scalar(lines, number, value)
                kind = _SCALAR
            if kind == _MARKER:
                if pending:
                    _null(stack[-1])
                    pending = False
                self._end_doc()
                self._start_doc(_pos(number, 1))
                top = None
                continue
            if pending:
                pending = False
                assert top is not None
                if indent > top.indent or (dash and indent == top.indent):
                    # the pending key's value: a block collection opening on this line
                    if len(stack) >= MAX_DEPTH - 1:
                        raise _Decline  # the builder abandons the document: left to it
                    at = (number, indent + 1)
                    at = positions_get(at) or _share(at)
                    opened: Any
                    if dash:
                        opened = new_seq(LSeq)
                        opened.pos, opened.ipos, opened.raw = at, [], None
                    else:  # LMap(at) without its __init__ call (a mapping per three lines)
                        opened = new_map(LMap)
                        opened.pos, opened.kpos, opened.raw = at, {}, None
                    kept: Any = opened
                    skim = top.skim
                    held = top.key
                    if (
                        not skim
                        and (held in skim_keys or (skim_top and len(stack) == 1))
                        and plan_skims(stack, plan)
                    ):
                        kept = kept_empty(at, not dash)  # as the builder keeps it
                        skim = True
                    parent = top.node
                    parent[held] = kept
                    parent.kpos[held] = top.key_pos
                    top = _Frame(opened, not dash, indent, skim)
                    stack.append(top)
                else:
                    _null(top)
            # close the collections this line is outside of
            while top is not None and (
                top.indent > indent or (top.indent == indent and not dash and not top.is_map)
            ):
                stack.pop()
                if not top.skim:
                    if top.is_map:
                        top.node.kpos = shared_layout(top.node.kpos)
                    else:
                        top.node.ipos = shared_items(top.node.ipos)
                if stack:
                    top = stack[-1]
                    top.key = None  # its value is complete
                else:
                    top = None
            if top is None:
                top = self._root(indent, dash, number)
            elif top.indent != indent:
                raise _Decline  # a continuation line, or an indentation libyaml refuses
            if dash:
                if top.is_map:
                    raise _Decline
                seq = top.node
                pos = (number, column + 1)
                pos = positions_get(pos) or _share(pos)
                if key is None:  # a scalar or flow item
                    if kind == _FLOW:
                        value = _flow(value, number, not top.skim)
                        pos = value.pos
                    append_item(seq, value, pos, raw)
                    continue
                # a compact mapping, `- name: x`: its keys at the item's column (never
                # skimmed: the plan skips values of keys, and a list item has none)
                if len(stack) >= MAX_DEPTH - 1:
                    raise _Decline
                node = new_map(LMap)
                node.pos, node.kpos, node.raw = pos, {}, None
                seq.append(node)
                seq.ipos.append(pos)
                top = _Frame(node, True, column, top.skim)
                stack.append(top)
            elif not top.is_map:
                raise _Decline
            else:
                pos = (number, column + 1)
                pos = positions_get(pos) or _share(pos)
                node = top.node
            if key in node:
                raise _Decline  # a duplicate key: the builder reports it
            if kind == _SCALAR:
                node[key] = value
                node.kpos[key] = pos
                if raw is not None:
                    if node.raw is None:
                        node.raw = {}
                    node.raw[key] = raw
            elif kind == _OPEN:
                top.key = key
                top.key_pos = pos
                pending = True
            else:
                skimmed = False
                if not top.skim and (key in skim_keys or (skim_top and len(stack) == 1)):
                    top.key = key  # the plan reads the key above a collection
                    skimmed = plan_skims(stack, plan)
                    top.key = None
                if skimmed:  # kept empty, at its bracket, as the builder keeps it
                    at = _pos(number, value[1] + 1)
                    node[key] = kept_empty(at, not value[0])
                else:
                    node[key] = _flow(value, number, not top.skim)
                node.kpos[key] = pos
        if pending:
            assert top is not None
            _null(top)
        self._end_doc()
        return self.result

    def _start_doc(self, pos: Pos | None) -> None:
        self.doc_index += 1
        self.in_doc = True
        self.doc_pos = pos
        self.root = None

    def _end_doc(self) -> None:
        if not self.in_doc:
            return
        stack = self.stack
        while stack:
            frame = stack.pop()
            if not frame.skim:
                if frame.is_map:
                    frame.node.kpos = shared_layout(frame.node.kpos)
                else:
                    frame.node.ipos = shared_items(frame.node.ipos)
        pos = self.doc_pos if self.doc_pos is not None else self.root.pos
        self.result.docs.append(Doc(self.doc_index, self.root, pos))
        self.in_doc = False

    def _root(self, indent: int, dash: bool, number: int) -> _Frame:
        """The document's root collection opens at this line (a new implicit document when
        none is open)."""
        if not self.in_doc:
            self._start_doc(None)
        elif self.root is not None:
            raise _Decline  # content after the root: libyaml refuses it
        pos = _pos(number, indent + 1)
        node = LSeq(pos) if dash else LMap(pos)
        self.root = node
        frame = _Frame(node, not dash, indent, False)
        self.stack.append(frame)
        return frame


def _null(frame: _Frame) -> None:
    """The pending key of `frame` has no value (`key:` and nothing under it)."""
    key = frame.key
    frame.key = None
    frame.node[key] = None
    frame.node.kpos[key] = frame.key_pos
