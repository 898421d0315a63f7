"""Which node label values a run reads: what lets an edit of a label nothing reads keep the
partition cache (engine/cache/partition.py).

A node's labels are a `NodeLabels` (model/inventory.py builds them: every value a string,
the keys as written). Reading a value by its key (`get`, `[key]`) adds the key to `READS`;
anything that reads values without naming their keys (`items()`, `values()`, a copy, `==`,
`repr`, `|`, unpacking it into a dict, `pop`...) marks `READS.everything`. What only asks
which keys a node has (`in`, iterating the keys, `len`) is not recorded: which keys a node
has, and where each is written, is always in what the cache compares
(engine/cache/partition.py `node_view`).

`dict(labels)`, `{**labels}` and a `**labels` call take the keys from `keys()` and each value
by `[key]` because `__iter__` is overridden here (CPython copies a dict whose `__iter__` is
dict's own without asking it), so each value they copy is recorded by its key. An interpreter
that copied it without asking would record nothing: checked once at import (`_COPIES_ASK`),
and then every value counts (`snapshot` gives None). `==` and `!=` mark every value when the
labels are the left operand or the other is a plain dict; a dict of another subclass on the
left (a located mapping of a tree) compares without asking them: no code compares node labels
so (tests/core/test_label_reads.py holds these cases).

A run starts from an empty record (`reset`); the partition cache keeps what it read
(`snapshot`) with the entries it stores, and a later run takes those entries only while the
nodes' labels hold the same values at the keys recorded (and the same keys, positions and
everything else): evaluated on the same values, the rules read the same keys again."""

from __future__ import annotations

from typing import Any


class Reads:
    """The label keys whose values this run read, or `everything`."""

    __slots__ = ("keys", "everything")

    def __init__(self) -> None:
        self.keys: set[Any] = set()
        self.everything = False


READS = Reads()


def reset() -> None:
    """A run starts: nothing read yet (the set emptied in place: `_read` is its `add`)."""
    READS.keys.clear()
    READS.everything = False


def snapshot() -> tuple[str, ...] | None:
    """The keys read so far, sorted; None when every value counts (`everything`, a key that
    is not a string: a cache entry holds strings, or an interpreter whose dict copies do not
    ask the labels, `_COPIES_ASK`)."""
    if READS.everything or not _COPIES_ASK or any(k.__class__ is not str for k in READS.keys):
        return None
    return tuple(sorted(READS.keys))


def note_reads(keys: Any) -> None:
    """Record these keys as read: for a reader that reads the values of `keys` on many nodes
    through `dict.get` itself (model/placement.py partitions the nodes by them), as each
    `get` would have recorded them."""
    READS.keys.update(keys)


def entries(labels: dict) -> dict:
    """A plain copy of a node's labels, made without recording: only for a copy that is itself
    wrapped in a NodeLabels before anything reads it (the labels as the operator relabels
    them, model/operands.py), so that what is read of it is recorded by key there."""
    return dict(dict.items(labels))


def _everything() -> None:
    READS.everything = True


def _marking(method: Any) -> Any:
    """`method` of dict, marking every value as read first."""

    def marked(self: dict, *args: Any, **kwargs: Any) -> Any:
        _everything()
        return method(self, *args, **kwargs)

    marked.__name__ = method.__name__
    return marked


_get = dict.get
_getitem = dict.__getitem__
_read = READS.keys.add


class NodeLabels(dict):
    """A node's labels (string values), recording which values are read (see the module)."""

    __slots__ = ()

    def get(self, key: Any, default: Any = None) -> Any:
        _read(key)
        return _get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        _read(key)
        return _getitem(self, key)

    def __iter__(self):  # makes CPython's dict copies ask keys() and [key] (see the module)
        return dict.__iter__(self)

    # what reads (or changes) values without naming their keys: every value counts
    items = _marking(dict.items)
    values = _marking(dict.values)
    copy = _marking(dict.copy)
    __eq__ = _marking(dict.__eq__)
    __ne__ = _marking(dict.__ne__)
    __repr__ = _marking(dict.__repr__)
    __or__ = _marking(dict.__or__)
    __ror__ = _marking(dict.__ror__)
    __ior__ = _marking(dict.__ior__)
    pop = _marking(dict.pop)
    popitem = _marking(dict.popitem)
    setdefault = _marking(dict.setdefault)
    __setitem__ = _marking(dict.__setitem__)
    __delitem__ = _marking(dict.__delitem__)
    update = _marking(dict.update)
    clear = _marking(dict.clear)
    __hash__ = None

    def __reduce__(self) -> Any:
        _everything()
        return (NodeLabels, (dict(dict.items(self)),))


def _copies_ask() -> bool:
    """Whether copying labels (`dict(labels)`, `{**labels}`) reads them through `[key]`, and so
    is recorded (CPython's `dict_merge` does when `__iter__` is overridden). Run at import;
    leaves the record as it found it."""
    probe = NodeLabels({"\0probe": "x"})
    before = set(READS.keys)
    asked = []
    for copy in (dict, lambda labels: {**labels}):
        copy(probe)
        asked.append("\0probe" in READS.keys)
        READS.keys.clear()
        READS.keys.update(before)
    return all(asked)


_COPIES_ASK = _copies_ask()
