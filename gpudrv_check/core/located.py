"""Located data: plain dicts and lists that remember where each key and item was written.

The loader builds these from the YAML parser's events. They behave exactly like `dict` and
`list` (so JSON Schema, pydantic and the pure `k8s/` functions take them as they are) and carry
1-based (line, column) positions on the side, so a finding can point at the exact key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

Pos = tuple[int, int]
PathItem = str | int
Path = tuple[PathItem, ...]

NO_POS: Pos = (1, 1)


class LMap(dict):
    """A mapping with the position of itself, of each key, and the raw text of typed scalars."""

    __slots__ = ("pos", "kpos", "raw")

    def __init__(self, pos: Pos = NO_POS) -> None:
        super().__init__()
        self.pos = pos
        self.kpos: dict[str, Pos] = {}
        # raw source text of plain scalars resolved to a non-string (`550`, `true`, `22.04`)
        self.raw: dict[str, str] | None = None

    def key_pos(self, key: str) -> Pos:
        return self.kpos.get(key, self.pos)

    def raw_text(self, key: str) -> str | None:
        return None if self.raw is None else self.raw.get(key)

    def __reduce__(self):  # pickling for the cache and worker processes keeps positions
        return (_rebuild_map, (dict(self), self.pos, self.kpos, self.raw))


class LSeq(list):
    """A sequence with the position of itself and of each item."""

    __slots__ = ("pos", "ipos", "raw")

    def __init__(self, pos: Pos = NO_POS) -> None:
        super().__init__()
        self.pos = pos
        self.ipos: list[Pos] = []
        self.raw: dict[int, str] | None = None

    def item_pos(self, index: int) -> Pos:
        if 0 <= index < len(self.ipos):
            return self.ipos[index]
        return self.pos

    def raw_text(self, index: int) -> str | None:
        return None if self.raw is None else self.raw.get(index)

    def __reduce__(self):
        return (_rebuild_seq, (list(self), self.pos, self.ipos, self.raw))


def containers(root: Any, limit: int) -> Iterator[LMap | LSeq]:
    """Each map and sequence in `root` (itself included), depth first, at most `limit` nodes
    visited; the caller may replace a yielded container's scalars before it resumes."""
    pending, visited = [root], 0
    while pending and visited < limit:
        node = pending.pop()
        visited += 1
        if isinstance(node, (LMap, LSeq)):
            yield node
            items = node.values() if isinstance(node, LMap) else node
            pending.extend(item for item in items if isinstance(item, (LMap, LSeq)))


#: the classes of a tree's scalars (the loader's): `encode_tree` gives each value of these
#: exact classes as it is (no dict or list among them, whose subclasses it converts)
_SCALARS = frozenset((str, int, float, bool, type(None)))


def encode_tree(value: Any) -> Any:
    """A located tree as builtin values, positions and raw texts kept (what read/codec.py
    writes, and what a node file's view digests, engine/cache/partition.py): a mapping is the
    tuple ``(items, pos, key positions, raw texts)``, a sequence the list ``[pos, item
    positions, raw texts, *items]``, a scalar itself."""
    cls = value.__class__
    if cls is LMap:
        # a scalar value is itself: taken here, not by a call per value (most values of a
        # tree are scalars: a node file's 48 values, 38 of them; node_view 44 -> 33 ms at 10k)
        return (
            {k: v if v.__class__ in _SCALARS else encode_tree(v) for k, v in value.items()},
            value.pos,
            value.kpos,
            value.raw,
        )
    if cls is LSeq:
        return [
            value.pos,
            value.ipos,
            value.raw,
            *[v if v.__class__ in _SCALARS else encode_tree(v) for v in value],
        ]
    if isinstance(value, dict):  # a plain dict put in a tree (not from the loader)
        out = LMap()
        out.update(value)
        return encode_tree(out)
    if isinstance(value, list):
        out_seq = LSeq()
        out_seq.extend(value)
        return encode_tree(out_seq)
    return value


def _rebuild_map(items: dict, pos: Pos, kpos: dict, raw: dict | None) -> LMap:
    m = LMap(pos)
    m.update(items)
    m.kpos = kpos
    m.raw = raw
    return m


def _rebuild_seq(items: list, pos: Pos, ipos: list, raw: dict | None) -> LSeq:
    s = LSeq(pos)
    s.extend(items)
    s.ipos = ipos
    s.raw = raw
    return s


def locate(node: Any, path: Iterable[PathItem]) -> Pos:
    """Position of the deepest key or item along `path` that exists in `node`.

    A path that leaves the data early (a key that is absent) resolves to the last key found,
    so a finding about a missing field points at its parent.
    """
    pos = getattr(node, "pos", NO_POS)
    for step in path:
        if isinstance(node, LMap) and isinstance(step, str) and step in node:
            pos = node.kpos.get(step, pos)
            node = node[step]
        elif isinstance(node, LSeq) and isinstance(step, int) and 0 <= step < len(node):
            pos = node.item_pos(step)
            node = node[step]
        else:
            break
    return pos


def key_at(node: Any, pos: Pos, limit: int = 100_000) -> Path | None:
    """The path of the key written at `pos` in `node` (a mapping's key position), or None;
    at most `limit` containers are visited."""
    pending: list[tuple[Any, Path]] = [(node, ())]
    while pending and limit > 0:
        limit -= 1
        current, path = pending.pop()
        if isinstance(current, LMap):
            for key, at in current.kpos.items():
                if at == pos and key in current:
                    return (*path, key)
            pending.extend(
                (v, (*path, k)) for k, v in current.items() if isinstance(v, (LMap, LSeq))
            )
        elif isinstance(current, LSeq):
            pending.extend(
                (v, (*path, i)) for i, v in enumerate(current) if isinstance(v, (LMap, LSeq))
            )
    return None


def scalar_text(container: Any, key: PathItem) -> str | None:
    """The value at `container[key]` as Kubernetes would store it in a string field.

    Strings are returned as they are; numbers and booleans written without quotes come back as
    the text that was written (`22.04`, not `22.4`); anything else gives None.
    """
    try:
        value = container[key]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        raw = None
        if isinstance(container, LMap) and isinstance(key, str):
            raw = container.raw_text(key)
        elif isinstance(container, LSeq) and isinstance(key, int):
            raw = container.raw_text(key)
        if raw is not None:
            return raw
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return None


def field_path_text(path: Path) -> str:
    """A key path as the API server prints it: ``spec.tolerations[0].operator``."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def type_name(value: Any) -> str:
    """The JSON name of a value's type, as a person reading YAML thinks of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def schema_error_path(error: Any) -> Path:
    """Where a jsonschema ValidationError points: its path, or the unexpected key itself for
    `additionalProperties` (rather than the mapping that holds it)."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            path = (*path, extra[0])
    return path
