"""core/label_reads.py: a node's labels record which values a run reads, by key, and mark
every value read when something reads them without naming keys (what lets the partition cache
key the partitions by the label values read, engine/cache/partition.py `node_view`)."""

from __future__ import annotations

import collections
import copy
import json
import pickle

import pytest

from gpudrv_check.core import label_reads
from gpudrv_check.core.label_reads import READS, NodeLabels, reset, snapshot
from gpudrv_check.core.located import LMap

LABELS = {"a": "1", "b": "2"}

# (what is done with the labels, keys recorded, every value marked as read)
ROWS = [
    ("get", lambda n: n.get("a"), {"a"}, False),
    ("get absent", lambda n: n.get("zzz", "d"), {"zzz"}, False),
    ("[key]", lambda n: n["a"], {"a"}, False),
    ("format_map", lambda n: "{a}".format_map(n), {"a"}, False),
    # which keys a node has is in the node file's view whatever is recorded
    ("in", lambda n: "a" in n, set(), False),
    ("iterate", lambda n: list(n), set(), False),
    ("sorted", lambda n: sorted(n), set(), False),
    ("keys", lambda n: list(n.keys()), set(), False),
    ("len", lambda n: len(n), set(), False),
    ("truth", lambda n: bool(n), set(), False),
    ("fromkeys", lambda n: dict.fromkeys(n), set(), False),
    # CPython copies a dict whose __iter__ is dict's own without asking it (Objects/
    # dictobject.c `dict_merge`): NodeLabels overrides __iter__, so a copy asks keys() and
    # [key], and each value copied is recorded by its key
    ("dict()", lambda n: dict(n), {"a", "b"}, False),
    ("{**}", lambda n: {**n}, {"a", "b"}, False),
    ("f(**)", lambda n: (lambda **kw: kw)(**n), {"a", "b"}, False),
    ("update into", lambda n: {}.update(n), {"a", "b"}, False),
    ("ChainMap", lambda n: dict(collections.ChainMap({}, n)), {"a", "b"}, False),
    # values read without naming their keys: every value counts
    ("items", lambda n: list(n.items()), set(), True),
    ("values", lambda n: list(n.values()), set(), True),
    ("copy", lambda n: n.copy(), {"a", "b"}, True),  # and the copy asks each key
    ("==", lambda n: n == {"a": "1"}, set(), True),
    ("!=", lambda n: n != {"a": "1"}, set(), True),
    ("== reflected", lambda n: {"a": "1"} == n, set(), True),
    ("repr", lambda n: repr(n), set(), True),
    ("str", lambda n: str(n), set(), True),
    ("|", lambda n: n | {}, {"a", "b"}, True),
    ("| reflected", lambda n: {} | n, {"a", "b"}, True),
    ("json", lambda n: json.dumps(n), set(), True),
    ("copy.copy", lambda n: copy.copy(n), set(), True),
    ("deepcopy", lambda n: copy.deepcopy(n), set(), True),
    ("pickle", lambda n: pickle.dumps(n), set(), True),
    ("pop", lambda n: n.pop("a"), set(), True),
    ("setdefault", lambda n: n.setdefault("c", "3"), set(), True),
    ("assign", lambda n: n.__setitem__("c", "3"), set(), True),
    ("delete", lambda n: n.__delitem__("a"), set(), True),
    ("update", lambda n: n.update(c="3"), set(), True),
    ("clear", lambda n: n.clear(), set(), True),
    # known gap, said in the module: a dict of another subclass on the left compares without
    # asking the labels (CPython asks the right operand first only when its class derives from
    # the left one's); no code compares node labels with a located mapping
    ("LMap == labels", lambda n: LMap() == n, set(), False),
    ("OrderedDict == labels", lambda n: collections.OrderedDict() == n, set(), False),
]


@pytest.mark.parametrize(("what", "use", "keys", "everything"), ROWS, ids=[r[0] for r in ROWS])
def test_what_reading_the_labels_records(what, use, keys, everything):
    reset()
    labels = NodeLabels(LABELS)
    use(labels)
    assert (READS.keys, READS.everything) == (keys, everything), what


def test_a_copy_reads_the_same_values_as_a_plain_dict():
    labels = NodeLabels(LABELS)
    assert dict(labels) == {**labels} == LABELS
    assert pickle.loads(pickle.dumps(labels)) == LABELS
    assert type(pickle.loads(pickle.dumps(labels))) is NodeLabels


def test_the_snapshot_is_the_sorted_keys_or_none_for_every_value():
    reset()
    labels = NodeLabels(LABELS)
    labels.get("b")
    labels.get("a")
    assert snapshot() == ("a", "b")
    labels.get(7)  # a key no cache entry holds: every value counts
    assert snapshot() is None
    reset()
    assert snapshot() == ()
    list(labels.items())
    assert snapshot() is None
    reset()
    assert label_reads.READS.keys == set() and not label_reads.READS.everything


def test_an_interpreter_whose_copies_do_not_ask_the_labels_counts_every_value(monkeypatch):
    # CPython's dict_merge asks a dict whose __iter__ is overridden for keys() and [key]
    # (Objects/dictobject.c): checked once at import
    assert label_reads._COPIES_ASK is True
    reset()
    NodeLabels(LABELS).get("a")
    assert snapshot() == ("a",)
    monkeypatch.setattr(label_reads, "_COPIES_ASK", False)
    assert snapshot() is None
    assert label_reads._copies_ask() is True and READS.keys == {"a"}  # the probe leaves none
