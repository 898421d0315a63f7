"""Bytes → located documents, built from the libyaml C parser's event stream.

The pure-Python round-trip loader is ~38x slower than the C event stream, so the hot path
builds plain `LMap`/`LSeq` trees directly from events (which carry line and column). Round-trip
loading is kept for `--write` only.

Scalars resolve as Kubernetes' YAML decoder (sigs.k8s.io/yaml, YAML 1.1 rules) would read them,
so `replicas: "4"` stays a string and `present: yes` becomes a boolean. Nothing is ever
constructed from a tag: unknown tags are reported and read as plain data.
Hostile input is bounded: alias expansion is counted rather than copied, flow nesting is
checked before libyaml sees it (its scanner is quadratic in flow depth), and the builder
is iterative, so deep documents cannot raise RecursionError.

Positions are 1-based (line, column) in characters, with lines counted at `\n` as editors and
code hosts count them (libyaml also breaks lines at a lone CR, NEL, LS and PS).
"""

from __future__ import annotations

import _thread
from collections.abc import Callable, Iterable
from dataclasses import field
from itertools import islice
from sys import intern
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import LMap, LSeq, Pos
from gpudrv_check.core.reads import NOTHING_SKIPPED, SkimPlan
from gpudrv_check.core.records import record
from gpudrv_check.core.yaml_scalars import NULLS as _NULLS
from gpudrv_check.core.yaml_scalars import json_number, resolve_plain, written_float
from gpudrv_check.k8s.podspec import CONTAINER_LISTS, POD_SPEC_PATHS
from gpudrv_check.read.policy import builtin

# Nesting deeper than this is refused. Real manifests stay under ~60 levels (CRD schemas that
# embed a pod template); consumers that recurse per level (pickle for the cache and worker
# processes ~4 frames a level, copy.deepcopy ~5, repr) stay well inside Python's limit of 1000.
MAX_DEPTH = 128
# nodes that aliases may add to one file (an alias adds the whole subtree it names, and a scalar
# counts one node more per 64 characters, so bytes are budgeted too: about 12 MB of expanded
# text): above this the document is an alias bomb ("billion laughs") and is not read
MAX_EXPANDED_NODES = 200_000
_STD_TAG = "tag:yaml.org,2002:"
_STR_TAG = _STD_TAG + "str"
_KNOWN_TAGS = frozenset(
    _STD_TAG + t
    for t in ("str", "int", "float", "bool", "null", "map", "seq", "binary", "timestamp", "merge")
)
_FLOW_BRACKETS = lazy_compile(r"[\[\]{}]")
NON_SCALAR_KEY = "mapping key is not a scalar"
_NON_SCALAR = "<non-scalar key>"  # what such a key is stored as
# One tuple per distinct (line, column), shared by every file: most manifests have the same
# shape, so `(4, 3)` is the position of `name:` in thousands of files. A large repo holds
# millions of positions and only tens of thousands of distinct ones (-15 % peak memory on the
# benchmark corpus). Bounded, so a long-lived process does not grow it without limit.
POSITIONS: dict[Pos, Pos] = {}
MAX_SHARED_POSITIONS = 200_000
# Likewise one key-position dict (`LMap.kpos`) per distinct layout, i.e. keys with their
# positions: `metadata: {name, namespace}` at lines 4-5 is the same in thousands of files, and
# the kpos dicts are as large as the mappings themselves (-30 % of the trees' memory on the
# benchmark corpus). A shared kpos is never changed in place: code that moves a key gives the
# mapping a dict of its own (read/flow_colons.py).
LAYOUTS: dict[tuple[Any, ...], dict[str, Pos]] = {}
MAX_SHARED_LAYOUTS = 100_000
# And one item-position list (`LSeq.ipos`) per distinct list of positions: `tolerations:` with
# one item at line 35 is the same in thousands of files (10k benchmark corpus: 71,000 lists,
# 5.6 MB, became about 2,000). Never changed in place either: code that adds an item gives the
# sequence a list of its own (model/admission.py).
ITEM_LAYOUTS: dict[tuple[Pos, ...], list[Pos]] = {}
# top-level keys always built, whatever the kind (see `skim` in parse_text)
_KEPT_TOP_KEYS = frozenset(("metadata", "<<", "apiVersion", "kind"))


@record(slots=True)
class LoadProblem:
    """A problem found while reading a file; the engine turns it into a Finding."""

    rule: str
    line: int
    column: int
    message: str
    hint: str | None = None


@record(slots=True)
class Doc:
    """One YAML document of a file: its index, its data and where it starts."""

    index: int
    data: Any
    pos: Pos


@record(slots=True)
class ParsedFile:
    docs: list[Doc] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    failed: bool = False  # reading stopped early: a syntax error, a bad character, too deep
    # where libyaml refused a `:` inside a flow scalar (`{image: a/b:1.0}`), or -1 (flow_colons)
    flow_colon: int = -1


def _resolve_tagged(text: str, tag: str) -> Any:
    if tag == _STD_TAG + "int":
        value = resolve_plain(text)
        return value if isinstance(value, int) and not isinstance(value, bool) else text
    if tag == _STD_TAG + "float":
        value = resolve_plain(text)
        # go-yaml's float64, written by encoding/json: `!!float 2` reaches the API server as 2
        return json_number(float(value)) if isinstance(value, (int, float)) else text
    if tag == _STD_TAG + "bool":
        value = resolve_plain(text)
        return value if isinstance(value, bool) else text
    if tag == _STD_TAG + "null":
        return None
    return text


#: texts with more brackets than this are not listed whole (`_flow_depth_exceeds`)
_LISTED_BRACKETS = 100_000


def _flow_depth_exceeds(text: str, limit: int) -> int:
    """Line of the first point where bracket nesting passes `limit`, or 0.

    Approximate (brackets inside quoted strings count too), which only matters for files
    that are hostile anyway.
    """
    openers = text.count("[") + text.count("{")
    if openers <= limit:
        return 0
    # the brackets alone (a CRD's schema writes thousands), as a list unless there are very
    # many (a hostile file's millions: walked match by match); where depth passes the limit
    # is looked for only when it does
    brackets: Iterable[str]
    if openers + text.count("]") + text.count("}") <= _LISTED_BRACKETS:
        brackets = _FLOW_BRACKETS.findall(text)
    else:
        brackets = (match.group() for match in _FLOW_BRACKETS.finditer(text))
    at = _too_deep_at(brackets, limit)
    if at is None:
        return 0
    match = next(islice(_FLOW_BRACKETS.finditer(text), at, None))
    return text.count("\n", 0, match.start()) + 1


def _too_deep_at(brackets: Iterable[str], limit: int) -> int | None:
    """The index of the bracket at which nesting passes `limit` (every opener one level
    deeper, every closer one less but never below 0), or None."""
    depth = 0
    for index, bracket in enumerate(brackets):
        if bracket == "[" or bracket == "{":
            depth += 1
            if depth > limit:
                return index
        elif depth:
            depth -= 1
    return None


def _has_odd_breaks(text: str) -> bool:
    """Whether libyaml would count a line break that editors do not (lone CR, NEL, LS, PS)."""
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        return True
    return "\r" in text and text.count("\r") != text.count("\r\n")


class LineIndex:
    """Character index → (line, column), lines counted at `\n` only."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        find = text.find
        at = find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = find("\n", at + 1)

    def pos(self, index: int) -> Pos:
        from bisect import bisect_right

        index = max(0, min(index, len(self.text)))
        line = bisect_right(self.starts, index)
        return (line, index - self.starts[line - 1] + 1)

    def mark_pos(self, mark: Any) -> Pos:
        return self.pos(mark.index)

    def clamp(self, index: int) -> Pos:
        """A position inside the text: the end of the stream maps to after its last character."""
        end = len(self.text.rstrip("\n\r"))
        return self.pos(min(index, end))


def show_tag(tag: str) -> str:
    """A tag as written (`!!python/object`, `!Ref`), with anything unprintable escaped."""
    shown = tag.replace(_STD_TAG, "!!")
    if shown.isprintable() and " " not in shown:
        return shown
    return repr(shown)[1:-1]


class _Frame:
    __slots__ = ("node", "is_map", "key", "key_pos", "merges", "anchor", "size")

    def __init__(self, node: LMap | LSeq, anchor: str | None) -> None:
        # an LMap when is_map, else an LSeq: the hot loop tests the flag, which mypy cannot narrow
        self.node: Any = node
        self.is_map = isinstance(node, LMap)
        self.key: str | None = None  # pending mapping key
        self.key_pos: Pos | None = None
        self.merges: list[Any] | None = None
        self.anchor = anchor
        self.size = 1  # nodes in this subtree with aliases expanded


def append_item(node: LSeq, value: Any, pos: Pos, raw: str | None) -> None:
    """Append a located item; `raw` is the written text of a typed scalar (`550`, `true`)."""
    if raw is not None:
        if node.raw is None:
            node.raw = {}
        node.raw[len(node)] = raw
    node.append(value)
    node.ipos.append(pos)


def keep_written_floats(node: Any) -> None:
    """In a tree of one of the tool's own files (the config, custom policies), which no API
    server reads, a number written as a float is that float again: the readers give an integral
    float as the int the API server would read (core/yaml_scalars.py `json_number`), but the
    config refuses `1.0` where it wants a count, and a CUDA table a version written `12.0` (it
    would read `12.10` as 12.1). Found by the written text each typed scalar keeps (`raw`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        cls = current.__class__
        if cls is LMap or cls is LSeq:
            raw = current.raw
            if raw:
                for at, text in raw.items():
                    value = current[at]
                    if value.__class__ is int:
                        number = written_float(text)
                        if number is not None:
                            current[at] = number
            stack.extend(current.values() if cls is LMap else current)


def _in_container(stack: list[Any]) -> bool:
    """Whether the innermost open mapping is a container of the document's pod template."""
    if not stack[0].is_map:  # a top-level list (Ansible, JSON patches) has no pod template
        return False
    kind = stack[0].node.get("kind")
    path = POD_SPEC_PATHS.get(kind) if kind.__class__ is str else None
    if path is None or len(stack) != len(path) + 3:
        return False
    for frame, key in zip(stack, path, strict=False):  # the stack is deeper than the path
        if frame.key != key:
            return False
    return stack[len(path)].key in CONTAINER_LISTS and not stack[len(path) + 1].is_map


def skims(stack: list[Any], plan: SkimPlan) -> bool:
    """Whether the collection starting under the innermost open one is one the plan skips: a
    top-level value of a skimmed kind, a Node status key, a container field. `stack`: the
    open collections, each with `node`, `is_map` and `key` (the key whose value is open), as
    both readers keep them (this builder and read/block_yaml.py)."""
    top = stack[-1]
    key = top.key
    if len(stack) == 1 and top.is_map and key is not None and key not in _KEPT_TOP_KEYS:
        kind = top.node.get("kind")  # any value (`kind: [Pod]` is a list: no kind)
        if kind.__class__ is str and kind in plan.kinds:
            return True
    if key in plan.node_status and len(stack) >= 2 and stack[-2].key == "status":
        if stack[-2].node.get("kind") == "Node":
            return True
    return key in plan.container and _in_container(stack)


def duplicate_key(key: str, pos: Pos) -> LoadProblem:
    return LoadProblem(
        builtin("duplicate-key").id,
        pos[0],
        pos[1],
        f"duplicate key {quoted(key)}; the API server's strict decoding rejects this object",
        "Remove one of the two entries; only the last one would be used.",
    )


def set_key(
    node: LMap, key: str, key_pos: Pos, value: Any, raw: str | None, problems: list[LoadProblem]
) -> None:
    """Store `key: value` with its position; a repeated key is GPU008 at the second one."""
    if key in node:
        problems.append(duplicate_key(key, key_pos))
    if raw is not None:
        if node.raw is None:
            node.raw = {}
        node.raw[key] = raw
    elif node.raw is not None:
        node.raw.pop(key, None)
    node[key] = value
    node.kpos[key] = key_pos


# Light events: one slotted class per event, whose generated __init__ takes the positional
# arguments the C extension passes (see _LIGHT below).
_light = record(slots=True, eq=False, repr=False)


@_light
class _Scalar:
    anchor: Any
    tag: Any
    implicit: Any
    value: Any
    start_mark: Any
    end_mark: Any
    style: Any


@_light
class _CollectionStart:
    anchor: Any
    tag: Any
    implicit: Any
    start_mark: Any
    end_mark: Any
    flow_style: Any


class _MappingStart(_CollectionStart):
    __slots__ = ()


class _SequenceStart(_CollectionStart):
    __slots__ = ()


@_light
class _End:
    start_mark: Any
    end_mark: Any


class _MappingEnd(_End):
    __slots__ = ()


class _SequenceEnd(_End):
    __slots__ = ()


class _StreamEnd(_End):
    __slots__ = ()


@_light
class _Alias:
    anchor: Any
    start_mark: Any
    end_mark: Any


@_light
class _DocumentStart:
    start_mark: Any
    end_mark: Any
    explicit: Any
    version: Any
    tags: Any


@_light
class _DocumentEnd:
    start_mark: Any
    end_mark: Any
    explicit: Any


@_light
class _StreamStart:
    start_mark: Any
    end_mark: Any
    encoding: Any


# The C parser builds every event by calling a class it looks up in its own module's globals.
# ruamel.yaml's event classes run three Python `__init__` levels per event, which costs more
# than libyaml's parsing itself; these slotted classes take the same positional arguments in
# one call (about 25 % off reading a large repo). They are swapped in only while this module
# parses, and only after a probe document proved that this build of the extension calls them
# as expected; otherwise the stock classes are used.
_LIGHT = {
    "ScalarEvent": _Scalar,
    "MappingStartEvent": _MappingStart,
    "SequenceStartEvent": _SequenceStart,
    "MappingEndEvent": _MappingEnd,
    "SequenceEndEvent": _SequenceEnd,
    "AliasEvent": _Alias,
    "DocumentStartEvent": _DocumentStart,
    "DocumentEndEvent": _DocumentEnd,
    "StreamStartEvent": _StreamStart,
    "StreamEndEvent": _StreamEnd,
}
_PROBE = "%YAML 1.1\n---\na: &x [1, {b: 'c'}]\nd: *x\ne: !!str f\n...\n"
_PROBE_KINDS = (
    "StreamStart DocumentStart MappingStart Scalar SequenceStart Scalar MappingStart Scalar "
    "Scalar MappingEnd SequenceEnd Scalar Alias Scalar Scalar MappingEnd DocumentEnd StreamEnd"
).split()
_PROBE_SCALARS = [
    ("a", None, (True, False), ""),
    ("1", None, (True, False), ""),
    ("b", None, (True, False), ""),
    ("c", None, (False, True), "'"),
    ("d", None, (True, False), ""),
    ("e", None, (True, False), ""),
    ("f", _STD_TAG + "str", (False, False), ""),
]
_light_ok: bool | None = None
#: held while a parse runs with the light classes swapped into the C module: the swap is
#: process-wide, so a second thread parsing at once would restore the stock classes under the
#: first one (reentrant: flow_colons re-parses inside a parse)
_SWAP = _thread.RLock()  # threading.RLock, without importing threading


class _EventClasses:
    """The event classes a parse compares against, and the swap into the C module."""

    def __init__(self, module: Any, names: dict[str, Any]) -> None:
        self.module = module
        self.names = names
        self.saved: dict[str, Any] = {}

    def __enter__(self) -> _EventClasses:
        if self.module is not None:
            for name, cls in self.names.items():
                self.saved[name] = getattr(self.module, name)
                setattr(self.module, name, cls)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, cls in self.saved.items():
            setattr(self.module, name, cls)
        self.saved = {}


def _event_classes() -> _EventClasses:
    """Light events when the C extension takes them (checked once), else ruamel's own."""
    global _light_ok
    try:
        import _ruamel_yaml as module
    except ImportError:
        module = None
    if _light_ok is None:
        _light_ok = module is not None and _probe_light(module)
    if _light_ok and module is not None:
        return _EventClasses(module, _LIGHT)
    import ruamel.yaml.events as stock

    return _EventClasses(None, {name: getattr(stock, name) for name in _LIGHT})


def _probe_light(module: Any) -> bool:
    from ruamel.yaml.cyaml import CParser

    if not all(hasattr(module, name) for name in _LIGHT):
        return False
    seen = []
    try:
        with _EventClasses(module, _LIGHT):
            parser = CParser(_PROBE)
            while True:
                event = parser.get_event()
                seen.append(event)
                if event.__class__ is _StreamEnd:
                    break
                if len(seen) > 64:
                    return False
    except Exception:  # noqa: BLE001 - any surprise: keep the stock classes
        return False
    kinds = [e.__class__.__name__.strip("_") for e in seen]
    scalars = [(e.value, e.tag, e.implicit, e.style) for e in seen if e.__class__ is _Scalar]
    return (
        kinds == _PROBE_KINDS
        and scalars == _PROBE_SCALARS
        and (seen[1].explicit, seen[1].version, seen[12].anchor) == (True, (1, 1), "x")
        and (seen[3].start_mark.line, seen[3].start_mark.column) == (2, 0)
    )


def _event_source(text: str | bytes) -> Callable[[], Any]:
    """The next-event function of the libyaml C parser (ruamel.yaml.clib); without that
    extension (a platform it has no wheel for), of ruamel.yaml's pure-Python parser: the same
    event classes, marks and errors, several times slower."""
    try:
        from ruamel.yaml.cyaml import CParser
    except ImportError:
        from ruamel.yaml import YAML

        return iter(YAML(typ="safe", pure=True).parse(text)).__next__
    return CParser(text).get_event


def parse_text(text: str | bytes, skim: SkimPlan = NOTHING_SKIPPED) -> ParsedFile:
    """Parse every document of a YAML (or JSON) stream into located data.

    `skim` (core/reads.py; the engine passes it, the parser knows no kind or field by name):
    in a document whose top-level `kind:` is one of `skim.kinds` and comes before the content
    (as it always does in practice), every top-level value but `metadata` is read for syntax,
    nesting, duplicate keys and tags, and kept only as an empty mapping or list at its
    position: a 2 MB CRD costs the parser, not the tree builder. When `kind:` comes later the
    document is built whole. The same holds for the keys of a Node's `status` in
    `skim.node_status`, in a Node of its own or in a List's items, and for the container fields
    in `skim.container` (env, args, probes...) in a workload's pod template.

    A text in the plain block subset most manifests are written in is read line by line
    (read/block_yaml.py), giving exactly what the event builder gives; any other goes to the
    builder (`parse_events`).
    """
    if isinstance(text, str):
        # imported here: the line reader builds on this module (no import cycle at load time)
        from gpudrv_check.read.block_yaml import parse_block

        fast = parse_block(text, skim)
        if fast is not None:
            return fast
    return parse_events(text, skim)


#: bytes of text this process has had the event builder read (the line reader declined them):
#: what tells the reader whether worker processes would pay (read/manifests.py `_parse_all`)
_EVENT_BUILT = [0]


def event_built_bytes() -> int:
    """Bytes of text the event builder has read in this process so far."""
    return _EVENT_BUILT[0]


def parse_events(text: str | bytes, skim: SkimPlan = NOTHING_SKIPPED) -> ParsedFile:
    """`parse_text` by the libyaml event builder alone, whatever the text."""
    _EVENT_BUILT[0] += len(text)
    with _SWAP, _event_classes() as events:

        def parse(source: str | bytes) -> ParsedFile:
            try:
                return _Builder(source, events.names, skim).build()
            except _AliasIntoSkimmed:  # an alias names data the skim did not build: build it all
                return _Builder(source, events.names, NOTHING_SKIPPED).build()

        result = parse(text)
        if result.flow_colon >= 0 and isinstance(text, str):
            from gpudrv_check.read.flow_colons import reparse

            return reparse(text, result, parse)
        return result


#: an anchor inside a skimmed section: the value was never built
_SKIMMED = object()


class _AliasIntoSkimmed(Exception):
    """An alias refers to an anchor inside a section the skim drained."""


class UnknownEvent(RuntimeError):
    """The C parser made an event of a class the builder does not know: the classes were
    swapped under it (the _SWAP lock rules that out). Raised, never looped on."""


def _share(pos: Pos) -> Pos:
    """A position not shared yet: kept as the one tuple every file shares (see POSITIONS)."""
    if len(POSITIONS) < MAX_SHARED_POSITIONS:
        POSITIONS[pos] = pos
    return pos


def _shared_pos(mark: Any) -> Pos:
    """A mark's position, as the one tuple every file shares for it."""
    pos = (mark.line + 1, mark.column + 1)
    return _positions_get(pos) or _share(pos)


_positions_get = POSITIONS.get


def shared_layout(kpos: dict[str, Pos]) -> dict[str, Pos]:
    """The one kpos dict every mapping of this layout shares (see LAYOUTS); `kpos` itself
    when it is the first of its layout. Its positions must be shared already (POSITIONS)."""
    layout = (*kpos, *kpos.values())
    found = _layouts_get(layout)
    if found is not None:
        return found
    if len(LAYOUTS) < MAX_SHARED_LAYOUTS:
        LAYOUTS[layout] = kpos
    return kpos


_layouts_get = LAYOUTS.get


def shared_items(ipos: list[Pos]) -> list[Pos]:
    """The one ipos list every sequence of these item positions shares (see ITEM_LAYOUTS);
    `ipos` itself when it is the first. Its positions must be shared already (POSITIONS)."""
    layout = tuple(ipos)
    found = _items_get(layout)
    if found is not None:
        return found
    if len(ITEM_LAYOUTS) < MAX_SHARED_LAYOUTS:
        ITEM_LAYOUTS[layout] = ipos
    return ipos


_items_get = ITEM_LAYOUTS.get


def kept_empty(pos: Pos, mapping: bool) -> LMap | LSeq:
    """A skimmed collection as it is kept: empty, at `pos`, with the empty key or item
    positions every such collection shares (a corpus skims an `env:` and an `args:` per
    container: 20,000 empty lists at 10k workloads)."""
    if mapping:
        node: Any = LMap(pos)
        node.kpos = shared_layout(node.kpos)
    else:
        node = LSeq(pos)
        node.ipos = shared_items(node.ipos)
    return node


def check_tag(tag: str | None, pos: Pos, problems: list[LoadProblem]) -> bool:
    """True when the tag is one we read; unknown tags are reported, never constructed."""
    if tag is None or tag in ("!", "?") or tag in _KNOWN_TAGS:
        return True
    problems.append(
        LoadProblem(
            builtin("not-checkable").id,
            pos[0],
            pos[1],
            f"unknown YAML tag {show_tag(tag)} is not constructed; its value is read as plain data",
            "Kubernetes manifests use no custom tags; render the file first "
            "(for example with the tool that owns the tag).",
        )
    )
    return False


def _tagged_value(event: Any, pos: Pos, problems: list[LoadProblem]) -> tuple[Any, None]:
    """The value of a quoted, tagged or non-implicit scalar (the plain ones: `scalar`)."""
    scalar = event.value
    tag = event.tag
    if tag is None or tag == "!" or tag == _STR_TAG or not check_tag(tag, pos, problems):
        return scalar, None
    return _resolve_tagged(scalar, tag), None


def _non_scalar_key(pos: Pos) -> LoadProblem:
    return LoadProblem(
        builtin("unreadable-file").id,
        pos[0],
        pos[1],
        f"{NON_SCALAR_KEY}; Kubernetes objects only have string keys",
    )


def _finish_merges(frame: _Frame) -> None:
    """Fill in the keys the frame's `<<:` merges bring that it does not set itself."""
    node = frame.node
    sources: list[Any] = []
    for merge in frame.merges or ():
        if isinstance(merge, LSeq):
            sources.extend(merge)
        else:
            sources.append(merge)
    for source in sources:
        if not isinstance(source, LMap):
            continue
        for key, value in source.items():
            if key not in node:
                node[key] = value
                node.kpos[key] = source.kpos.get(key, source.pos)
                raw = source.raw_text(key)
                if raw is not None:
                    if node.raw is None:
                        node.raw = {}
                    node.raw[key] = raw


def _too_deep(text: str | bytes) -> LoadProblem | None:
    """The problem of a text whose flow nesting passes MAX_DEPTH (checked before libyaml sees
    it: its scanner is quadratic in flow depth), or None."""
    line = _flow_depth_exceeds(text, MAX_DEPTH) if isinstance(text, str) else 0
    if not line:
        return None
    return LoadProblem(
        builtin("unreadable-file").id,
        line,
        1,
        f"nesting deeper than {MAX_DEPTH} levels; file not read",
        "Kubernetes objects are never this deep: this file is generated or hostile.",
    )


class _Builder:
    """The located documents of one YAML stream, built from the C parser's events, one method
    per event class. Iterative (a stack of open collections), so depth cannot recurse."""

    def __init__(self, text: str | bytes, events: dict[str, Any], plan: SkimPlan) -> None:
        self.text = text
        self.events = events
        self.result = ParsedFile()
        self.problems = self.result.problems
        # libyaml's own marks are right unless the text has line breaks editors do not count
        index = LineIndex(text) if isinstance(text, str) and _has_odd_breaks(text) else None
        self.odd = index.mark_pos if index is not None else None
        self.pos_of: Any = self.odd or _shared_pos
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.doc_index = -1
        self.doc_pos: Pos = (1, 1)
        self.root: Any = None
        self.skipping = False  # the current document was abandoned (bomb, depth): drain it
        self.expanded = 0  # nodes aliases added to this file so far
        self.plan = plan
        self.skimming = bool(plan.kinds or plan.node_status or plan.container)
        self.mapping_start = events["MappingStartEvent"]
        self.get_event: Any = None

    def build(self) -> ParsedFile:
        from ruamel.yaml.error import MarkedYAMLError, YAMLError
        from ruamel.yaml.reader import ReaderError

        result, text = self.result, self.text
        too_deep = _too_deep(text)
        if too_deep is not None:
            self.problems.append(too_deep)
            result.failed = True
            return result
        self.get_event = _event_source(text)
        try:
            self._run()
        except MarkedYAMLError as err:
            self.problems.append(_syntax_problem(err, text))
            result.failed = True
            if err.problem == "found unexpected ':'" and err.problem_mark is not None:
                result.flow_colon = err.problem_mark.index
        except ReaderError as err:  # a character YAML does not allow; position: a UTF-8 offset
            self.problems.append(_reader_problem(err, text))
            result.failed = True
        except YAMLError as err:
            message = f"cannot read YAML: {_one_line(str(err))}"
            self.problems.append(LoadProblem(builtin("unreadable-file").id, 1, 1, message))
            result.failed = True
        return result

    def _run(self) -> None:
        """Hand every event to its method, up to the end of the stream (the frequent ones
        first, tested by identity: this loop runs once per event of every file)."""
        events = self.events
        scalar_event, alias_event = events["ScalarEvent"], events["AliasEvent"]
        starts = (self.mapping_start, events["SequenceStartEvent"])
        ends = (events["MappingEndEvent"], events["SequenceEndEvent"])
        others = {
            events["DocumentStartEvent"]: self.document_start,
            events["DocumentEndEvent"]: self.document_end,
            events["StreamStartEvent"]: _ignore,
        }
        stream_end = events["StreamEndEvent"]
        get_event, scalar, start, end = self.get_event, self.scalar, self.start, self.end
        while True:
            event = get_event()
            cls = event.__class__
            if cls is scalar_event:
                scalar(event)
            elif cls is starts[0] or cls is starts[1]:
                start(event)
            elif cls is ends[0] or cls is ends[1]:
                end(event)
            elif cls is alias_event:
                self.alias(event)
            elif cls in others:
                others[cls](event)
            elif cls is stream_end:
                return
            else:
                raise UnknownEvent(f"unknown parser event {cls!r}")

    def scalar(self, event: Any) -> None:
        """A scalar: a key, a key's value or an item. The hot path of the whole tool, so the
        common cases are written out here rather than in calls."""
        if self.skipping:
            return
        if self.odd is None:
            mark = event.start_mark
            pos = (mark.line + 1, mark.column + 1)
            pos = _positions_get(pos) or _share(pos)
        else:
            pos = self.odd(event.start_mark)
        text = event.value
        if event.tag is None and not event.style and event.implicit[0]:
            value = resolve_plain(text) if text else None
            raw = text if value is not None and value.__class__ is not str else None
        else:
            value, raw = _tagged_value(event, pos, self.problems)
        if value.__class__ is str:
            # one object per distinct text, shared by every file (and kept so by marshal, see
            # read/codec.py): `nvidia.com/gpu`, `NoSchedule`, `apps/v1` are written thousands
            # of times in a large repo (-11 % of the trees' memory on the benchmark corpus)
            value = intern(value)
        # what an alias to this costs: one node, and one more per 64 characters
        cost = 1 + (len(text) >> 6)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, cost)
        # the common cases inline (a string key, a new key's value, a list item); everything
        # else (merges, duplicates, odd keys, raw texts) through attach
        stack = self.stack
        if stack:
            frame = stack[-1]
            if frame.is_map:
                key = frame.key
                if key is None:
                    if value.__class__ is str:
                        frame.size += cost
                        frame.key = value
                        frame.key_pos = pos
                        return
                elif raw is None and key != "<<":
                    node = frame.node
                    if key not in node and node.raw is None:
                        frame.size += cost
                        frame.key = None
                        node[key] = value
                        node.kpos[key] = frame.key_pos
                        return
            elif raw is None:
                frame.size += cost
                node = frame.node
                node.append(value)
                node.ipos.append(pos)
                return
        self.attach(value, pos, cost, raw)

    def start(self, event: Any) -> None:
        """A mapping or a sequence opens (or is drained, when the plan skips it)."""
        if self.skipping:
            return
        if self.odd is None:
            mark = event.start_mark
            pos = (mark.line + 1, mark.column + 1)
            pos = _positions_get(pos) or _share(pos)
        else:
            pos = self.odd(event.start_mark)
        if event.tag is not None and not event.implicit:
            check_tag(event.tag, pos, self.problems)
        stack = self.stack
        if len(stack) >= MAX_DEPTH:
            self.abandon(pos, f"nesting deeper than {MAX_DEPTH} levels; document not read")
            return
        mapping = event.__class__ is self.mapping_start
        if self.skimming and event.anchor is None and stack and skims(stack, self.plan):
            if self.drain(mapping):
                self.attach(kept_empty(pos, mapping), pos, 1)
            return
        node = LMap(pos) if mapping else LSeq(pos)
        if event.anchor is not None:
            self.anchors[event.anchor] = (node, -1)  # usable once complete
        stack.append(_Frame(node, event.anchor))

    def end(self, event: Any) -> None:
        """The innermost open collection is complete: it goes where it belongs."""
        if self.skipping:
            return
        stack = self.stack
        frame = stack.pop()
        if frame.merges:
            _finish_merges(frame)
        if frame.is_map:
            frame.node.kpos = shared_layout(frame.node.kpos)
        else:
            frame.node.ipos = shared_items(frame.node.ipos)
        if frame.anchor is not None:
            self.anchors[frame.anchor] = (frame.node, frame.size)
        value, size = frame.node, frame.size
        if stack:
            # the common case inline: a collection as a new key's value, or an item
            parent = stack[-1]
            if parent.is_map:
                key = parent.key
                if key is not None and key != "<<":
                    node = parent.node
                    if key not in node and node.raw is None:
                        parent.size += size
                        parent.key = None
                        node[key] = value
                        node.kpos[key] = parent.key_pos
                        return
            else:
                parent.size += size
                node = parent.node
                node.append(value)
                node.ipos.append(value.pos)
                return
        self.attach(value, value.pos, size)

    def alias(self, event: Any) -> None:
        """An alias: the anchored value again, counted against the expansion budget."""
        if self.skipping:
            return
        pos = self.pos_of(event.start_mark)
        target = self.anchors.get(event.anchor)
        if target is None or target[1] < 0:
            self.abandon(pos, f"alias *{event.anchor} refers to no complete anchor")
            return
        value, size = target
        if value is _SKIMMED:
            raise _AliasIntoSkimmed  # read the file again, whole
        if self.expanded + size > MAX_EXPANDED_NODES:
            self.abandon(
                pos,
                f"aliases expand to more than {MAX_EXPANDED_NODES} nodes "
                "(an alias bomb); document not read",
                "Write the repeated data out, or split the file.",
            )
            return
        self.expanded += size
        self.attach(value, pos, size)

    def document_start(self, event: Any) -> None:
        """A new document: anchors do not carry over from the previous one."""
        self.doc_index += 1
        self.doc_pos = self.pos_of(event.start_mark)
        self.root = None
        self.skipping = False
        self.anchors = {}

    def document_end(self, event: Any) -> None:
        """The document is complete (unless abandoned): one Doc more."""
        if not self.skipping:
            self.result.docs.append(Doc(self.doc_index, self.root, self.doc_pos))
        self.root = None

    def attach(self, value: Any, pos: Pos, size: int, raw: str | None = None) -> None:
        """Put a finished value where it belongs: the document's root, a list item, a key, or
        the value of the pending key (a merge, a duplicate, a typed scalar's raw text)."""
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        frame.size += size
        node = frame.node
        if not frame.is_map:
            append_item(node, value, pos, raw)
        elif frame.key is None:
            self._take_key(frame, value, pos, raw)
        else:
            key, key_pos = frame.key, frame.key_pos or pos
            frame.key = None
            if key == "<<" and isinstance(value, (LMap, LSeq)):
                if frame.merges is None:
                    frame.merges = []
                frame.merges.append(value)
                return
            set_key(node, key, key_pos, value, raw, self.problems)

    def _take_key(self, frame: _Frame, value: Any, pos: Pos, raw: str | None) -> None:
        """`value` is a mapping key: a string, the written text of a typed scalar, `null`."""
        if isinstance(value, str):
            key = value
        elif raw is not None:
            key = raw
        elif value is None:
            key = "null"
        else:
            self.problems.append(_non_scalar_key(pos))
            key = _NON_SCALAR
        frame.key = intern(key)
        frame.key_pos = pos

    def abandon(self, pos: Pos, message: str, hint: str | None = None) -> None:
        """Give up on the current document: report why and drain its remaining events."""
        self.problems.append(
            LoadProblem(builtin("unreadable-file").id, pos[0], pos[1], message, hint)
        )
        self.skipping = True
        self.stack.clear()
        self.root = None

    def drain(self, is_map: bool) -> bool:
        """Drain the collection that just started without building it, reporting what the
        builder would (tags, nesting, duplicate keys, non-scalar keys). False when the
        document was abandoned (too deep). Positions are worked out only for a problem."""
        events = self.events
        scalar, alias = events["ScalarEvent"], events["AliasEvent"]
        starts = (self.mapping_start, events["SequenceStartEvent"])
        ends = (events["MappingEndEvent"], events["SequenceEndEvent"])
        # per open collection: [is a mapping, next scalar is a key, keys seen]
        open_: list[list[Any]] = [[is_map, True, set() if is_map else None]]
        get_event = self.get_event
        while open_:
            event = get_event()
            cls = event.__class__
            if cls is scalar or cls is alias:
                top = open_[-1]
                if cls is scalar and (event.tag is not None or event.anchor is not None):
                    self._drain_tag_and_anchor(event)
                if top[0]:
                    if top[1] and cls is scalar:  # a key: a duplicate is reported
                        key = event.value
                        if (not key or key in _NULLS) and event.tag is None and not event.style:
                            key = "null"
                        seen = top[2]
                        if key in seen and key != "<<":
                            self.problems.append(duplicate_key(key, self.pos_of(event.start_mark)))
                        seen.add(key)
                    top[1] = not top[1]
            elif cls in starts:
                if not self._drain_start(event, open_):
                    return False
            elif cls in ends:
                open_.pop()
            else:
                raise UnknownEvent(f"unknown parser event {cls!r}")
        return True

    def _drain_tag_and_anchor(self, event: Any) -> None:
        """A drained scalar's tag is checked; an alias to its anchor reads the file whole."""
        tag = event.tag
        if tag is not None and tag != "!" and tag != _STR_TAG:
            check_tag(tag, self.pos_of(event.start_mark), self.problems)
        if event.anchor is not None:
            self.anchors[event.anchor] = (_SKIMMED, 1)

    def _drain_start(self, event: Any, open_: list[list[Any]]) -> bool:
        """A collection opening inside a drained one; False when it is one level too deep."""
        if event.tag is not None and not event.implicit:
            check_tag(event.tag, self.pos_of(event.start_mark), self.problems)
        if len(self.stack) + len(open_) >= MAX_DEPTH:
            pos = self.pos_of(event.start_mark)
            self.abandon(pos, f"nesting deeper than {MAX_DEPTH} levels; document not read")
            return False
        top = open_[-1]
        if top[0]:
            if top[1]:
                pos = self.pos_of(event.start_mark)
                self.problems.append(_non_scalar_key(pos))
                if _NON_SCALAR in top[2]:
                    self.problems.append(duplicate_key(_NON_SCALAR, pos))
                top[2].add(_NON_SCALAR)
            top[1] = not top[1]
        if event.anchor is not None:
            self.anchors[event.anchor] = (_SKIMMED, 1)
        mapping = event.__class__ is self.mapping_start
        open_.append([mapping, True, set() if mapping else None])
        return True


def _ignore(event: Any) -> None:
    """StreamStart: nothing to build."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _syntax_problem(err: Any, text: str | bytes) -> LoadProblem:
    mark = err.problem_mark or err.context_mark
    what = _one_line(err.problem or err.context or "cannot parse")
    context = ""
    if err.context and err.problem:
        context = f" ({_one_line(err.context)}"
        start = err.context_mark
        if (
            start is not None
            and mark is not None
            and start.index != mark.index
            and isinstance(text, str)
        ):
            line, col = LineIndex(text).clamp(start.index)
            context += f" that starts at line {line}, column {col}"
        context += ")"
    if mark is None:
        line, col = 1, 1
    elif isinstance(text, str):
        # the end of the stream is reported past the last line; point at where the text ends
        line, col = LineIndex(text).clamp(mark.index)
    else:
        line, col = mark.line + 1, mark.column + 1
    return LoadProblem(
        builtin("unreadable-file").id,
        line,
        col,
        f"YAML syntax error: {what}{context}",
        "Fix the syntax at this position; nothing in this file was checked.",
    )


def _reader_problem(err: Any, text: str | bytes) -> LoadProblem:
    line, col = 1, 1
    if isinstance(text, str) and isinstance(err.position, int):
        index = len(text.encode("utf-8", "surrogatepass")[: err.position].decode("utf-8", "ignore"))
        line, col = LineIndex(text).pos(index)
    char = err.character
    code = char if isinstance(char, int) else ord(char) if isinstance(char, str) and char else 0
    return LoadProblem(
        builtin("unreadable-file").id,
        line,
        col,
        f"character U+{code:04X} is not allowed in YAML ({_one_line(str(err.reason))}); "
        "file not read",
        "Remove the character, or write it as an escape inside double quotes (\\u0007).",
    )
