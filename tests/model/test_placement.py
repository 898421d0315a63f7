"""Placement over an inventory: every placement rule of docs/kubernetes.md §1-2 is a row, run
through the memoised model; then the model against a per-node evaluation on generated
inventories."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from gpudrv_check.k8s.nodeaffinity import pod_matches_node_affinity, prefilter_node_names
from gpudrv_check.k8s.taints import (
    daemonset_pod_tolerations,
    first_untolerated_taint,
    first_untolerated_taint_for_bound_pod,
    node_taints,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import (
    AFFINITY,
    AFFINITY_CONFLICT,
    INSUFFICIENT_GPU,
    NODE_NAME,
    OK,
    PREFILTER,
    TAINT,
    UNSCHEDULABLE,
    Placement,
    Verdict,
    node_gpu_count,
    ok_flags,
)
from tests.model.conftest import (
    GPU_TAINT,
    MAJOR,
    PRESENT,
    ZONE,
    eligible,
    expr,
    make_node,
    make_workload,
    required,
    term,
    tolerate,
)


def inventory() -> list[Node]:
    return [
        make_node("n550", {PRESENT: "true", MAJOR: "550", ZONE: "a"}),
        make_node("n535", {PRESENT: "true", MAJOR: "535", ZONE: "b"}),
        make_node("n0206", {MAJOR: "0206"}),
        make_node("nabc", {MAJOR: "abc"}),
        make_node("cpu", {ZONE: "a"}),
        make_node("tainted", {PRESENT: "true", MAJOR: "550"}, taints=[GPU_TAINT]),
        make_node(
            "prefer",
            {MAJOR: "550"},
            taints=[{"key": "x", "value": "y", "effect": "PreferNoSchedule"}],
        ),
        make_node(
            "noexec",
            {MAJOR: "550"},
            taints=[{"key": "dedicated", "value": "ml", "effect": "NoExecute"}],
        ),
        make_node("cordoned", {PRESENT: "true", MAJOR: "550"}, unschedulable=True),
    ]


ALL = ["cordoned", "cpu", "n0206", "n535", "n550", "nabc", "noexec", "prefer", "tainted"]
# what a pod without tolerations can reach at all
OPEN = ["cpu", "n0206", "n535", "n550", "nabc", "prefer"]


ROWS = [
    # nodeSelector AND required node affinity
    ("no constraints: every node without blocking taint", {}, "Pod", OPEN),
    ("nodeSelector: every key equal", {"nodeSelector": {ZONE: "a"}}, "Pod", ["cpu", "n550"]),
    (
        "nodeSelector AND affinity both hold",
        {"nodeSelector": {ZONE: "a"}, **required(term(expr(MAJOR, "In", "550")))},
        "Pod",
        ["n550"],
    ),
    (
        "terms are ORed",
        required(term(expr(MAJOR, "In", "535")), term(expr(ZONE, "In", "a"))),
        "Pod",
        ["cpu", "n535", "n550"],
    ),
    (
        "expressions in a term are ANDed",
        required(term(expr(MAJOR, "In", "550"), expr(ZONE, "In", "a"))),
        "Pod",
        ["n550"],
    ),
    ("empty terms list matches nothing", required(), "Pod", []),
    (
        "null terms list matches nothing",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}},
        "Pod",
        [],
    ),
    ("an empty term matches nothing", required(term()), "Pod", []),
    (
        "an empty term next to a valid one: the valid one counts",
        required(term(), term(expr(ZONE, "In", "b"))),
        "Pod",
        ["n535"],
    ),
    (
        "In needs the key present",
        required(term(expr(PRESENT, "In", "true"))),
        "Pod",
        ["n535", "n550"],
    ),
    (
        "NotIn matches nodes lacking the key",
        required(term(expr(MAJOR, "NotIn", "550"))),
        "Pod",
        ["cpu", "n0206", "n535", "nabc"],
    ),
    (
        "DoesNotExist matches nodes lacking the key",
        required(term(expr(PRESENT, "DoesNotExist"))),
        "Pod",
        ["cpu", "n0206", "nabc", "prefer"],
    ),
    (
        "Exists takes no values: invalid term",
        required(term(expr(MAJOR, "Exists", "550"))),
        "Pod",
        [],
    ),
    ("Gt takes exactly one value", required(term(expr(MAJOR, "Gt", "500", "600"))), "Pod", []),
    ("Gt is strict", required(term(expr(MAJOR, "Gt", "550"))), "Pod", []),
    (
        "Gt compares integers, not strings; missing or non-integer values fail",
        required(term(expr(MAJOR, "Gt", "549"))),
        "Pod",
        ["n550", "prefer"],
    ),
    ("Lt is strict", required(term(expr(MAJOR, "Lt", "535"))), "Pod", ["n0206"]),
    (
        "leading zeros are fine: 0206 Gt 0204",
        required(term(expr(MAJOR, "Gt", "0204"))),
        "Pod",
        ["n0206", "n535", "n550", "prefer"],
    ),
    ("a non-integer Gt value: invalid term", required(term(expr(MAJOR, "Gt", "5.5"))), "Pod", []),
    (
        "a Gt value beyond int64: invalid term",
        required(term(expr(MAJOR, "Gt", "9223372036854775808"))),
        "Pod",
        [],
    ),
    ("a bad operator: invalid term", required(term(expr(MAJOR, "in", "550"))), "Pod", []),
    (
        "an invalid label value: invalid term",
        required(term(expr(MAJOR, "In", "-bad-"))),
        "Pod",
        [],
    ),
    (
        "an invalid term next to a valid one: the valid one still counts",
        required(term(expr(MAJOR, "Gt", "x")), term(expr(ZONE, "In", "a"))),
        "Pod",
        ["cpu", "n550"],
    ),
    (
        "matchFields metadata.name In",
        required(term(fields=[expr("metadata.name", "In", "n535")])),
        "Pod",
        ["n535"],
    ),
    (
        "matchFields metadata.name NotIn",
        required(term(fields=[expr("metadata.name", "NotIn", "n535")])),
        "Pod",
        ["cpu", "n0206", "n550", "nabc", "prefer"],
    ),
    (
        "matchFields supports only metadata.name",
        required(term(fields=[expr("metadata.uid", "In", "n535")])),
        "Pod",
        [],
    ),
    (
        "matchFields takes exactly one value",
        required(term(fields=[expr("metadata.name", "In", "n535", "n550")])),
        "Pod",
        [],
    ),
    # taints and tolerations
    (
        "NoSchedule and NoExecute block, PreferNoSchedule never does",
        required(term(expr(MAJOR, "In", "550"))),
        "Pod",
        ["n550", "prefer"],
    ),
    (
        "Exists with key and effect tolerates the taint",
        tolerate({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}),
        "Pod",
        sorted([*OPEN, "tainted"]),
    ),
    (
        "an empty effect matches every effect",
        tolerate({"key": "dedicated", "operator": "Exists"}),
        "Pod",
        sorted([*OPEN, "noexec"]),
    ),
    (
        "an empty key with Exists tolerates every taint, the cordon too",
        tolerate({"operator": "Exists"}),
        "Pod",
        ALL,
    ),
    (
        "Equal compares values",
        tolerate({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}),
        "Pod",
        OPEN,
    ),
    (
        "an empty operator means Equal",
        tolerate({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}),
        "Pod",
        sorted([*OPEN, "tainted"]),
    ),
    (
        "spec.unschedulable acts as node.kubernetes.io/unschedulable:NoSchedule",
        tolerate(
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ),
        "Pod",
        sorted([*OPEN, "cordoned"]),
    ),
    # DaemonSet pods
    (
        "DaemonSet pods land on cordoned nodes, not on untolerated taints",
        {},
        "DaemonSet",
        sorted([*OPEN, "cordoned"]),
    ),
    # spec.nodeName
    (
        "nodeName: only that node",
        {"nodeName": "n535"},
        "Pod",
        ["n535"],
    ),
    (
        "nodeName: a cordoned node still takes the pod",
        {"nodeName": "cordoned"},
        "Pod",
        ["cordoned"],
    ),
    ("nodeName: NoSchedule taints do not count", {"nodeName": "tainted"}, "Pod", ["tainted"]),
    ("nodeName: NoExecute taints do", {"nodeName": "noexec"}, "Pod", []),
    (
        "nodeName: node affinity still counts",
        {"nodeName": "n535", **required(term(expr(MAJOR, "In", "550")))},
        "Pod",
        [],
    ),
    ("nodeName: a node not in the inventory", {"nodeName": "gone"}, "Pod", []),
]


@pytest.mark.parametrize(("rule", "spec", "kind", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_section_6_rules_through_the_model(
    rule: str, spec: dict, kind: str, expected: list
) -> None:
    assert eligible(inventory(), make_workload(spec, kind)) == expected


@pytest.mark.parametrize(
    ("taint", "host_network", "lands"),
    [
        ({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}, False, True),
        ({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, False, True),
        ({"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}, False, True),
        ({"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}, False, True),
        ({"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"}, False, True),
        ({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, False, True),
        ({"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}, False, False),
        ({"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}, True, True),
        (GPU_TAINT, True, False),
    ],
)
def test_daemonset_default_tolerations_in_the_model(taint, host_network, lands) -> None:
    nodes = [make_node("n", taints=[taint])]
    spec = {"hostNetwork": True} if host_network else {}
    assert eligible(nodes, make_workload(spec, "DaemonSet")) == (["n"] if lands else [])
    # a Deployment's pods get none of these
    assert eligible(nodes, make_workload(spec, "Deployment")) == []


@pytest.mark.parametrize(
    ("requested", "allocatable", "fits"),
    [(1, 1, True), (2, 1, False), (1, 0, False), (1, None, True), (0, 0, True)],
)
def test_gpu_requests_against_allocatable(requested, allocatable, fits) -> None:
    nodes = [make_node("n", gpus=allocatable)]
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": requested}}}]}
    assert eligible(nodes, make_workload(spec)) == (["n"] if fits else [])


def test_node_gpu_count_reads_allocatable_then_capacity() -> None:
    node = make_node("n")
    assert node_gpu_count(node) is None
    node = replace(node, capacity={"cpu": "8"})
    assert node_gpu_count(node) == 0  # capacity given without GPUs: no device plugin
    node = replace(node, capacity={"nvidia.com/gpu": "8"}, allocatable={})
    assert node_gpu_count(node) == 8
    node = replace(node, allocatable={"nvidia.com/gpu": "7"})
    assert node_gpu_count(node) == 7


@pytest.mark.parametrize(
    ("written", "count"),
    [
        # the kubelet writes the count as resource.NewQuantity(n, DecimalSI)
        # (pkg/kubelet/cm/devicemanager GetCapacity): 2000 time-sliced replicas print as 2k
        ("2k", 2000),
        ("1M", 1_000_000),
        ("2e3", 2000),
        ("16", 16),
        (" 4 ", 4),  # Quantity.UnmarshalJSON trims the text
        (8, 8),
        # not a whole, non-negative count: none offered (the inventory reader reports them)
        ("8.5", 0),
        ("500m", 0),
        ("-1", 0),
        ("abc", 0),
    ],
)
def test_node_gpu_count_reads_the_quantity(written: object, count: int) -> None:
    node = replace(make_node("n"), allocatable={"nvidia.com/gpu": written})
    assert node_gpu_count(node) == count


def _reason(nodes: list[Node], spec: dict, kind: str = "Pod") -> dict[str, str]:
    verdicts = Placement(nodes).verdicts(make_workload(spec, kind))
    return {name: v.reason for name, v in verdicts.items()}


def test_verdicts_follow_the_scheduler_filter_order() -> None:
    """The first failing filter is the one reported: cordon, taint, affinity, resources."""
    nodes = [
        make_node("all-wrong", {MAJOR: "535"}, taints=[GPU_TAINT], unschedulable=True, gpus=0),
        make_node("tainted", {MAJOR: "535"}, taints=[GPU_TAINT], gpus=0),
        make_node("affinity", {MAJOR: "535"}, gpus=0),
        make_node("small", {MAJOR: "550"}, gpus=1),
        make_node("fits", {MAJOR: "550"}, gpus=2),
    ]
    spec = {
        **required(term(expr(MAJOR, "In", "550"))),
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}],
    }
    assert _reason(nodes, spec) == {
        "all-wrong": UNSCHEDULABLE,
        "tainted": TAINT,
        "affinity": AFFINITY,
        "small": INSUFFICIENT_GPU,
        "fits": OK,
    }


def test_bound_pods_are_judged_like_the_kubelet() -> None:
    nodes = [
        make_node("a", {MAJOR: "535"}, taints=[GPU_TAINT], unschedulable=True),
        make_node("b"),
    ]
    assert _reason(nodes, {"nodeName": "a"}) == {"a": OK, "b": NODE_NAME}
    spec = {"nodeName": "a", **required(term(expr(MAJOR, "In", "550")))}
    assert _reason(nodes, spec) == {"a": AFFINITY, "b": NODE_NAME}


def test_node_affinity_prefilter_narrows_to_named_nodes() -> None:
    nodes = [make_node("a", {ZONE: "x"}), make_node("b", {ZONE: "x"}), make_node("c")]
    pins = required(
        term(expr(ZONE, "In", "y"), fields=[expr("metadata.name", "In", "a")]),
        term(fields=[expr("metadata.name", "In", "b")]),
    )
    assert _reason(nodes, pins) == {"a": AFFINITY, "b": OK, "c": PREFILTER}
    conflict = required(
        term(
            fields=[expr("metadata.name", "In", "a"), expr("metadata.name", "In", "b")],
        )
    )
    assert _reason(nodes, conflict) == {
        "a": AFFINITY_CONFLICT,
        "b": AFFINITY_CONFLICT,
        "c": AFFINITY_CONFLICT,
    }
    # one term without a name pin: every node is filtered
    open_term = required(
        term(fields=[expr("metadata.name", "In", "a")]), term(expr(ZONE, "In", "x"))
    )
    assert _reason(nodes, open_term) == {"a": OK, "b": OK, "c": AFFINITY}
    # DaemonSets and bound pods skip the scheduler's PreFilter
    assert _reason(nodes, pins, "DaemonSet") == {"a": AFFINITY, "b": OK, "c": AFFINITY}


# --- memoisation gives the answers of a per-node evaluation -----------------------------------

KEYS = (PRESENT, MAJOR, ZONE, "pool")
VALUES = ("true", "false", "550", "535", "0206", "x", "a", "b", "")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bad")
TAINTS = (
    GPU_TAINT,
    {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
    {"key": "soft", "value": "", "effect": "PreferNoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
)


def _random_node(rng: random.Random, index: int) -> Node:
    labels = {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.7}
    taints = [t for t in TAINTS if rng.random() < 0.2]
    gpus = rng.choice((None, 0, 1, 2, 8))
    return make_node(f"n{index:03d}", labels, taints, rng.random() < 0.15, gpus)


def _random_expression(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(OPERATORS)
    count = {"Exists": 0, "DoesNotExist": 0, "Gt": 1, "Lt": 1}.get(op, rng.randint(1, 2))
    if rng.random() < 0.1:
        count += 1  # sometimes invalid
    return expr(rng.choice(KEYS), op, *(rng.choice(VALUES) for _ in range(count)))


def _random_spec(rng: random.Random, names: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if rng.random() < 0.4:
        spec["nodeSelector"] = {rng.choice(KEYS): rng.choice(VALUES)}
    if rng.random() < 0.7:
        terms = []
        for _ in range(rng.randint(0, 3)):
            fields = None
            if rng.random() < 0.2:
                fields = [expr("metadata.name", rng.choice(("In", "NotIn")), rng.choice(names))]
            terms.append(
                term(*(_random_expression(rng) for _ in range(rng.randint(0, 2))), fields=fields)
            )
        spec.update(required(*terms))
    if rng.random() < 0.5:
        spec["tolerations"] = [
            {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
            for t in TAINTS
            if rng.random() < 0.4
        ]
    if rng.random() < 0.1:
        spec["nodeName"] = rng.choice(names)
    if rng.random() < 0.4:
        spec["containers"] = [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": rng.randint(1, 3)}}}
        ]
    return spec


def _per_node(node: Node, spec: dict[str, Any], daemonset: bool, gpus: int) -> bool:
    """One node, from the pure functions alone: no classes, no cache."""
    tolerations = spec.get("tolerations")
    if daemonset:
        tolerations = daemonset_pod_tolerations(tolerations, False)
    taints = node_taints({"taints": node.taints})
    bound = spec.get("nodeName")
    if bound:
        if bound != node.name or not pod_matches_node_affinity(spec, node.name, node.labels):
            return False
        if first_untolerated_taint_for_bound_pod(taints, tolerations) is not None:
            return False
    else:
        names = None if daemonset else prefilter_node_names(spec)
        if names is not None and node.name not in names:
            return False
        cordon = node_taints({"unschedulable": node.unschedulable})
        if first_untolerated_taint(cordon, tolerations) is not None:
            return False
        if first_untolerated_taint(taints, tolerations) is not None:
            return False
        if not pod_matches_node_affinity(spec, node.name, node.labels):
            return False
    offered = node_gpu_count(node)
    return not (gpus and offered is not None and offered < gpus)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_class_memoisation_matches_per_node_evaluation(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [_random_node(rng, i) for i in range(60)]
    names = [n.name for n in nodes]
    specs = [_random_spec(rng, names) for _ in range(40)]
    placement = Placement(nodes)
    for i, spec in enumerate(specs * 2):  # the second round comes from the cache
        kind = "DaemonSet" if i % 5 == 0 else "Pod"
        workload = make_workload(spec, kind)
        got = {n.name for n in placement.eligible(workload)}
        want = {n.name for n in nodes if _per_node(n, spec, kind == "DaemonSet", workload.gpus)}
        assert got == want, (seed, i, spec)
    # the cache and the classes did their job: each constraint set once, nodes grouped
    assert placement.constraint_sets <= 40
    assert placement.class_evaluations < placement.constraint_sets * len(nodes)


def test_identical_nodes_are_one_class() -> None:
    nodes = [make_node(f"n{i}", {PRESENT: "true", MAJOR: "550"}) for i in range(500)]
    nodes += [
        make_node(f"t{i}", {PRESENT: "true", MAJOR: "535"}, taints=[GPU_TAINT]) for i in range(500)
    ]
    placement = Placement(nodes)
    for _ in range(100):
        assert (
            len(placement.eligible(make_workload(required(term(expr(MAJOR, "Gt", "540")))))) == 500
        )
    assert (placement.constraint_sets, placement.class_evaluations) == (1, 2)


def test_constraint_sets_keeping_the_same_nodes_share_one_list() -> None:
    """placement.py `eligible`: two constraint sets written differently (a Gt and an In on
    the driver branch) that keep the same nodes give one list, which what is worked out per
    node list (model/cuda.py `_column`, `_drivers_of`) reads once; one that keeps other nodes
    gets its own, and the lists hold the nodes in the inventory's order."""
    nodes = [make_node(f"n{i}", {PRESENT: "true", MAJOR: "550"}) for i in range(3)]
    nodes += [make_node(f"o{i}", {PRESENT: "true", MAJOR: "535"}) for i in range(2)]
    placement = Placement(nodes)
    greater = placement.eligible(make_workload(required(term(expr(MAJOR, "Gt", "540")))))
    listed = placement.eligible(make_workload(required(term(expr(MAJOR, "In", "550")))))
    older = placement.eligible(make_workload(required(term(expr(MAJOR, "In", "535")))))
    assert placement.constraint_sets == 3
    assert greater is listed and [n.name for n in greater] == ["n0", "n1", "n2"]
    assert older is not greater and [n.name for n in older] == ["o0", "o1"]


def test_nodes_of_equal_facts_share_what_placement_works_out_of_them():
    """Placement works out a node's allocatable, taints, GPU count and base class once per
    distinct facts (model/placement.py `_facts_key`): each node gets what working it out
    alone gives, and nodes whose taints differ only by a value's type (1, 1.0, true, "1")
    are told apart."""
    from gpudrv_check.model.placement import _amounts, _signature, node_allocatable

    nodes = [
        make_node("a", gpus=8, taints=[{"key": "k", "value": "x", "effect": "NoSchedule"}]),
        make_node("b", gpus=8, taints=[{"key": "k", "value": "x", "effect": "NoSchedule"}]),
        make_node("c", gpus=4),
        make_node("d", gpus=4, unschedulable=True),
        make_node("e", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": 1}]),
        make_node("f", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": 1.0}]),
        make_node("g", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": True}]),
        make_node("h", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": "1"}]),
        make_node("i", gpus=8, taints=[{"key": "k", "value": ["a"], "effect": "NoSchedule"}]),
        # equal, of one class, written otherwise (a second review's case)
        make_node("l", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": 0.0}]),
        make_node("m", gpus=8, taints=[{"key": "k", "effect": "NoSchedule", "timeAdded": -0.0}]),
        make_node("j"),
        make_node("k", gpus=2),
    ]
    nodes[-1] = replace(nodes[-1], capacity={"nvidia.com/gpu": "2"}, allocatable={})
    # amounts equal in Python, read otherwise (true is no quantity)
    nodes += [replace(nodes[2], name="n", allocatable={"pods": 1})]
    nodes += [replace(nodes[2], name="o", allocatable={"pods": True})]
    placement = Placement(nodes, derived={"k": {"nvidia.com/gpu": 7}})
    bases = {}
    for n in nodes:
        alloc = node_allocatable(n) if n.name != "k" else {"nvidia.com/gpu": 7}
        taints = node_taints({"taints": n.taints})
        assert placement._alloc[n.name] == alloc
        # by their text: 1 == 1.0 == True, so `==` would not tell those taints apart
        assert _signature(placement._taints[n.name]) == _signature(taints), n.name
        assert placement._gpus[n.name] == node_gpu_count(n)
        bases[n.name] = (_signature(taints), n.unschedulable, _amounts(alloc))
    for a in nodes:  # one class per distinct base, as working each node out alone gives
        for b in nodes:
            same = placement._base[a.name] == placement._base[b.name]
            assert same == (bases[a.name] == bases[b.name]), (a.name, b.name)
    assert placement._alloc["a"] is placement._alloc["b"]  # worked out once


def test_node_classes_are_the_per_node_ones_and_their_keys_are_recorded_as_read():
    """placement.py `_classes` partitions the nodes by their base class and the values of the
    keys a constraint set mentions, reading the values through `dict.get` a column at a time:
    each node's class number and each class's first node are those of a loop over the nodes,
    and the keys count as read (core/label_reads.py), as each `NodeLabels.get` would record
    them (the partition cache keys node files by the values read)."""
    from gpudrv_check.core import label_reads

    rng = random.Random(7)
    nodes = [_random_node(rng, i) for i in range(80)]
    nodes = [replace(n, labels=label_reads.NodeLabels(n.labels)) for n in nodes]
    placement = Placement(nodes)
    for keys in ((KEYS[0], KEYS[1], "absent"), (KEYS[2],), ()):
        label_reads.reset()
        of_node, representatives = placement._classes(keys)
        assert label_reads.snapshot() == tuple(sorted(keys))
        index: dict[tuple, int] = {}
        want, firsts = [], []
        for node in placement.nodes:
            klass = (placement._base[node.name], tuple(dict.get(node.labels, k) for k in keys))
            if klass not in index:
                index[klass] = len(index)
                firsts.append(node)
            want.append(index[klass])
        assert of_node == want and representatives == firsts, keys
        assert 1 < len(representatives) < len(nodes)
    label_reads.reset()


@pytest.mark.parametrize("seed", range(4))
def test_flags_and_static_reasons_by_class_are_those_of_every_nodes_verdict(seed: int) -> None:
    """placement.py `ok_bytes` and `static_reasons` (what model/occupancy.py `_nodes_of` makes
    a constraint set's Nodes of) work from the node classes when `_evaluate` judged by class:
    the flags are `ok_flags` of the verdicts, and the reasons, their counts and their order
    (first node first) those of a loop over every node's verdict; for results judged node by
    node (a bound pod, a name in the affinity) and for a mapping the placement did not make
    alike."""
    rng = random.Random(seed)
    nodes = [_random_node(rng, i) for i in range(70)]
    names = [n.name for n in nodes]
    placement = Placement(nodes)
    by_class = 0
    for i, spec in enumerate(_random_spec(rng, names) for _ in range(40)):
        workload = make_workload(spec, "DaemonSet" if i % 6 == 0 else "Pod")
        verdicts = placement.verdicts(workload)
        by_class += id(verdicts) in placement._by_class
        others = [verdicts, dict(reversed(list(verdicts.items())))]
        for mapping in others:
            want: dict[str, int] = {}
            for verdict in mapping.values():
                if not verdict.ok:
                    for reason in placement.node_reasons(verdict):
                        want[reason] = want.get(reason, 0) + 1
            got = placement.static_reasons(mapping)
            assert list(got.items()) == list(want.items()), (seed, i)
            assert placement.ok_bytes(mapping) == bytes(ok_flags(mapping))
        if id(verdicts) in placement._by_class:
            assert placement.ok_bytes(verdicts) is placement.ok_bytes(verdicts)  # made once
        # a mapping of the caller's is read as it is now, whatever it was before
        mine = dict(verdicts)
        placement.ok_bytes(mine)
        mine[names[0]] = Verdict(TAINT) if mine[names[0]].ok else Verdict(OK)
        assert placement.ok_bytes(mine) == bytes(ok_flags(mine))
    assert 0 < by_class < 40
