"""Taints and tolerations (docs/kubernetes.md §2-3; upstream toleration_test.go,
daemonset_util.go)."""

from __future__ import annotations

import itertools

import pytest

from gpudrv_check.k8s import taints as tt
from gpudrv_check.k8s.taints import (
    BLOCKING_EFFECTS,
    TAINT_NODE_UNSCHEDULABLE,
    daemonset_default_tolerations,
    daemonset_pod_tolerations,
    first_untolerated_taint,
    first_untolerated_taint_for_bound_pod,
    node_taints,
    tolerates,
    tolerations_tolerate,
    validate_taints,
    validate_tolerations,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
CORDON = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}


def tol(key: object = None, operator: object = None, value: object = None, effect: object = None):  # type: ignore[no-untyped-def]
    """A toleration with only the given fields set."""
    fields = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in fields.items() if v is not None}


def taint(key: object, value: object = None, effect: object = "NoSchedule") -> dict[str, object]:
    out = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    return out


TOLERATES_ROWS = [
    # upstream TestTolerationToleratesTaint, rewritten
    (
        "Exists, same key and effect, no value",
        tol("foo", "Exists", effect="NoSchedule"),
        taint("foo"),
        True,
    ),
    (
        "Exists, same key and effect, some value",
        tol("foo", "Exists", effect="NoSchedule"),
        taint("foo", "bar"),
        True,
    ),
    (
        "empty key with Exists matches every key",
        tol("", "Exists", effect="NoSchedule"),
        taint("foo", "bar"),
        True,
    ),
    ("Equal, same value", tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar"), True),
    (
        "Equal, different value",
        tol("foo", "Equal", "value1", "NoSchedule"),
        taint("foo", "value2"),
        False,
    ),
    (
        "Equal, different effect",
        tol("foo", "Equal", "bar", "NoSchedule"),
        taint("foo", "bar", "NoExecute"),
        False,
    ),
    # docs/kubernetes.md §2
    (
        "empty effect matches NoSchedule",
        tol("foo", "Exists"),
        taint("foo", effect="NoSchedule"),
        True,
    ),
    (
        "empty effect matches NoExecute",
        tol("foo", "Exists"),
        taint("foo", effect="NoExecute"),
        True,
    ),
    (
        "empty effect matches PreferNoSchedule",
        tol("foo", "Exists"),
        taint("foo", effect="PreferNoSchedule"),
        True,
    ),
    (
        "empty key, Exists, empty effect: tolerates everything",
        tol(operator="Exists"),
        taint("any", "v", "NoExecute"),
        True,
    ),
    ("empty operator means Equal", tol("foo", value="bar"), taint("foo", "bar"), True),
    ("empty operator, different value", tol("foo", value="bar"), taint("foo", "baz"), False),
    (
        "Equal with empty value matches a value-less taint",
        tol("nvidia.com/gpu", "Equal"),
        GPU_TAINT,
        True,
    ),
    ("Equal with empty value vs valued taint", tol("foo", "Equal"), taint("foo", "bar"), False),
    ("different key", tol("foo", "Exists"), taint("bar"), False),
    ("key is case sensitive", tol("Foo", "Exists"), taint("foo"), False),
    (
        "GPU operand default toleration",
        tol("nvidia.com/gpu", "Exists", effect="NoSchedule"),
        GPU_TAINT,
        True,
    ),
    (
        "tolerationSeconds plays no part",
        {**tol("foo", "Exists", effect="NoExecute"), "tolerationSeconds": 0},
        taint("foo", effect="NoExecute"),
        True,
    ),
    # Go's zero-value quirk: an all-empty toleration (rejected by the API server) matches
    # every value-less taint, because empty operator means Equal on "" == "".
    ("all-empty toleration vs value-less taint", {}, taint("foo"), True),
    ("all-empty toleration vs valued taint", {}, taint("foo", "bar"), False),
    # Gt/Lt: alpha gate TaintTolerationComparisonOperators is off by default
    ("Gt tolerates nothing with the gate off", tol("sla", "Gt", "900"), taint("sla", "950"), False),
    ("Lt tolerates nothing with the gate off", tol("sla", "Lt", "999"), taint("sla", "950"), False),
    ("unknown operator", tol("foo", "exists"), taint("foo"), False),
    # wrong JSON types
    ("toleration is a list", ["foo", "Exists"], taint("foo"), False),
    ("toleration is null", None, taint("foo"), False),
    ("toleration value is an integer", tol("foo", "Equal", 1), taint("foo", "1"), False),
    ("toleration key is an integer", tol(1, "Exists"), taint("1"), False),
    ("taint is a string", tol(operator="Exists"), "foo:NoSchedule", False),
    ("taint value is an integer", tol(operator="Exists"), taint("foo", 1), False),
    ("taint is null", tol(operator="Exists"), None, False),
]


@pytest.mark.parametrize(
    ("toleration", "taint_", "expected"),
    [row[1:] for row in TOLERATES_ROWS],
    ids=[row[0] for row in TOLERATES_ROWS],
)
def test_tolerates(toleration: object, taint_: object, expected: bool) -> None:
    assert tolerates(toleration, taint_) is expected
    assert tolerations_tolerate([toleration], taint_) is expected


def test_tolerations_tolerate_any() -> None:
    tolerations = [tol("a", "Exists"), tol("nvidia.com/gpu", "Exists", effect="NoSchedule")]
    assert tolerations_tolerate(tolerations, GPU_TAINT)
    assert not tolerations_tolerate(tolerations[:1], GPU_TAINT)
    assert not tolerations_tolerate({}, GPU_TAINT)  # tolerations: {} tolerates nothing
    assert not tolerations_tolerate(None, GPU_TAINT)


# --- node taints and the cordon

NODE_TAINT_ROWS = [
    ("no taints", {}, []),
    ("taints listed", {"taints": [GPU_TAINT]}, [GPU_TAINT]),
    ("cordon adds the unschedulable taint", {"unschedulable": True}, [CORDON]),
    ("cordon plus taints", {"taints": [GPU_TAINT], "unschedulable": True}, [GPU_TAINT, CORDON]),
    (
        "cordon taint already present is not doubled",
        {"taints": [CORDON], "unschedulable": True},
        [CORDON],
    ),
    (
        "a valued unschedulable taint does not replace the cordon check",
        {"taints": [taint(TAINT_NODE_UNSCHEDULABLE, "x")], "unschedulable": True},
        [taint(TAINT_NODE_UNSCHEDULABLE, "x"), CORDON],
    ),
    ("unschedulable false", {"taints": [GPU_TAINT], "unschedulable": False}, [GPU_TAINT]),
    ("unschedulable as a string is not true", {"unschedulable": "true"}, []),
    ("malformed taints dropped", {"taints": [None, "x", taint(1), GPU_TAINT]}, [GPU_TAINT]),
    ("taints is an object", {"taints": {"key": "a"}}, []),
    ("spec is null", None, []),
    ("spec is a list", [GPU_TAINT], []),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [row[1:] for row in NODE_TAINT_ROWS],
    ids=[row[0] for row in NODE_TAINT_ROWS],
)
def test_node_taints(spec: object, expected: list[dict[str, object]]) -> None:
    assert node_taints(spec) == expected


# --- which taint blocks a pod

NO_EXEC = taint("maintenance", "true", "NoExecute")
PREFER = taint("spot", effect="PreferNoSchedule")

UNTOLERATED_ROWS = [
    ("no taints", [], [], None),
    ("NoSchedule blocks", [GPU_TAINT], [], GPU_TAINT),
    ("NoExecute blocks", [NO_EXEC], [], NO_EXEC),
    ("PreferNoSchedule never blocks", [PREFER], [], None),
    ("first untolerated in node order", [PREFER, GPU_TAINT, NO_EXEC], [], GPU_TAINT),
    ("tolerated taint skipped", [GPU_TAINT, NO_EXEC], [tol("nvidia.com/gpu", "Exists")], NO_EXEC),
    ("all tolerated", [GPU_TAINT, NO_EXEC], [tol(operator="Exists")], None),
    (
        "toleration for the wrong effect",
        [GPU_TAINT],
        [tol("nvidia.com/gpu", "Exists", effect="NoExecute")],
        GPU_TAINT,
    ),
    ("cordon blocks an ordinary pod", node_taints({"unschedulable": True}), [], CORDON),
    (
        "cordon tolerated",
        node_taints({"unschedulable": True}),
        [tol(TAINT_NODE_UNSCHEDULABLE, "Exists", effect="NoSchedule")],
        None,
    ),
    (
        "cordon tolerated by Equal on empty value",
        node_taints({"unschedulable": True}),
        [tol(TAINT_NODE_UNSCHEDULABLE, "Equal")],
        None,
    ),
    ("invalid effect never blocks", [taint("x", effect="Sometimes")], [], None),
    ("malformed taints skipped", [None, "k:NoSchedule", taint("x", 5)], [], None),
    ("taints is an object", {"key": "x", "effect": "NoSchedule"}, [], None),
    (
        "tolerations is an object",
        [GPU_TAINT],
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        GPU_TAINT,
    ),
    ("malformed toleration ignored", [GPU_TAINT], [None, 3, tol("nvidia.com/gpu", "Exists")], None),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [row[1:] for row in UNTOLERATED_ROWS],
    ids=[row[0] for row in UNTOLERATED_ROWS],
)
def test_first_untolerated_taint(taints: object, tolerations: object, expected: object) -> None:
    assert first_untolerated_taint(taints, tolerations) == expected


@pytest.mark.parametrize(
    ("taints", "expected"),
    [
        ([GPU_TAINT], None),  # the kubelet ignores NoSchedule for a bound pod
        (node_taints({"unschedulable": True}), None),  # and the cordon
        ([PREFER], None),
        ([GPU_TAINT, NO_EXEC], NO_EXEC),
    ],
)
def test_bound_pod_only_minds_no_execute(taints: list[object], expected: object) -> None:
    assert first_untolerated_taint_for_bound_pod(taints, []) == expected


def test_effects_argument() -> None:
    assert first_untolerated_taint([PREFER], [], effects=("PreferNoSchedule",)) == PREFER
    assert BLOCKING_EFFECTS == ("NoSchedule", "NoExecute")


# --- DaemonSet pods

DS_DEFAULTS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
NETWORK = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def test_daemonset_default_tolerations() -> None:
    assert daemonset_default_tolerations(False) == DS_DEFAULTS
    assert daemonset_default_tolerations(True) == [*DS_DEFAULTS, NETWORK]
    # a fresh list every call: callers may mutate it
    daemonset_default_tolerations(False).clear()
    assert len(daemonset_default_tolerations(False)) == 6


@pytest.mark.parametrize(
    ("taint_", "host_network", "blocked"),
    [
        (CORDON, False, False),  # docs/kubernetes.md §3: DaemonSet pods land on cordoned nodes
        (taint("node.kubernetes.io/not-ready", effect="NoExecute"), False, False),
        (taint("node.kubernetes.io/unreachable", effect="NoExecute"), False, False),
        (taint("node.kubernetes.io/disk-pressure"), False, False),
        (taint("node.kubernetes.io/memory-pressure"), False, False),
        (taint("node.kubernetes.io/pid-pressure"), False, False),
        (taint("node.kubernetes.io/network-unavailable"), False, True),
        (taint("node.kubernetes.io/network-unavailable"), True, False),
        (taint("node.kubernetes.io/not-ready", effect="NoSchedule"), False, True),
        (GPU_TAINT, False, True),  # the operand's own toleration must come from the template
    ],
)
def test_daemonset_pods_on_tainted_nodes(taint_: object, host_network: bool, blocked: bool) -> None:
    tolerations = daemonset_pod_tolerations([], host_network)
    assert (first_untolerated_taint([taint_], tolerations) is not None) is blocked


def test_daemonset_pod_tolerations_merge() -> None:
    template = [
        tol("nvidia.com/gpu", "Exists", effect="NoSchedule"),
        {**DS_DEFAULTS[0], "tolerationSeconds": 300},  # replaced by the infinite default
        "junk",
    ]
    merged = daemonset_pod_tolerations(template, host_network=True)
    assert merged == [template[0], DS_DEFAULTS[0], "junk", *DS_DEFAULTS[1:], NETWORK]
    assert template[1]["tolerationSeconds"] == 300  # the input is not mutated
    assert daemonset_pod_tolerations({"not": "a list"}, False) == DS_DEFAULTS


# --- validation

TOLERATION_VALIDATION_ROWS = [
    (
        "valid list",
        [
            tol("nvidia.com/gpu", "Exists", effect="NoSchedule"),
            tol("a", "Equal", "b"),
            tol(operator="Exists"),
        ],
        [],
    ),
    ("null", None, []),
    ("an object instead of a list", {}, [()]),
    ("a string instead of a list", "nvidia.com/gpu", [()]),
    ("entry is a string", ["nvidia.com/gpu"], [(0,)]),
    ("empty key needs Exists", [tol(operator="Equal")], [(0, "operator")]),
    ("empty key, no operator", [tol(effect="NoSchedule")], [(0, "operator")]),
    ("Exists with a value", [tol("k", "Exists", "v")], [(0, "value")]),
    ("invalid key", [tol("bad key", "Exists")], [(0, "key")]),
    ("invalid value", [tol("k", "Equal", "bad value")], [(0, "value")]),
    ("unsupported operator", [tol("k", "In", "v")], [(0, "operator")]),
    ("Gt needs an alpha gate", [tol("k", "Gt", "5")], [(0, "operator")]),
    ("unsupported effect", [tol("k", "Exists", effect="NoScheduleNoAdmit")], [(0, "effect")]),
    (
        "tolerationSeconds needs NoExecute",
        [{**tol("k", "Exists", effect="NoSchedule"), "tolerationSeconds": 60}],
        [(0, "effect")],
    ),
    (
        "tolerationSeconds with NoExecute",
        [{**tol("k", "Exists", effect="NoExecute"), "tolerationSeconds": 60}],
        [],
    ),
    (
        "tolerationSeconds is a string",
        [{**tol("k", "Exists", effect="NoExecute"), "tolerationSeconds": "60"}],
        [(0, "tolerationSeconds")],
    ),
    ("value is an integer", [tol("k", "Equal", 550)], [(0, "value")]),
    ("key is a boolean", [tol(True, "Exists")], [(0, "key")]),
    ("second entry", [tol(operator="Exists"), tol("k", "Exists", "v")], [(1, "value")]),
]


@pytest.mark.parametrize(
    ("tolerations", "paths"),
    [row[1:] for row in TOLERATION_VALIDATION_ROWS],
    ids=[row[0] for row in TOLERATION_VALIDATION_ROWS],
)
def test_validate_tolerations(tolerations: object, paths: list[tuple[object, ...]]) -> None:
    assert [p.path for p in validate_tolerations(tolerations)] == paths


def test_validate_tolerations_messages() -> None:
    messages = [
        p.message
        for p in validate_tolerations(
            [tol("k", "Gt", "5"), tol("k", "Exists", effect="noschedule")]
        )
    ]
    assert "TaintTolerationComparisonOperators" in messages[0]
    assert "did you mean 'NoSchedule'?" in messages[1]


TAINT_VALIDATION_ROWS = [
    (
        "valid",
        [
            GPU_TAINT,
            taint("nvidia.com/gpu", effect="NoExecute"),
            taint("a", "b", "PreferNoSchedule"),
        ],
        [],
    ),
    ("null", None, []),
    ("an object instead of a list", {"key": "a"}, [()]),
    ("entry is a string", ["a:NoSchedule"], [(0,)]),
    ("key required", [taint("")], [(0, "key")]),
    ("key missing", [{"effect": "NoSchedule"}], [(0, "key")]),
    ("invalid key", [taint("bad key")], [(0, "key")]),
    ("invalid value", [taint("a", "bad value")], [(0, "value")]),
    ("effect required", [{"key": "a"}], [(0, "effect")]),
    ("unsupported effect", [taint("a", effect="NoAdmit")], [(0, "effect")]),
    ("duplicate key and effect", [GPU_TAINT, taint("nvidia.com/gpu", "x")], [(1,)]),
    ("value is an integer", [taint("a", 1)], [(0, "value")]),
]


@pytest.mark.parametrize(
    ("taints", "paths"),
    [row[1:] for row in TAINT_VALIDATION_ROWS],
    ids=[row[0] for row in TAINT_VALIDATION_ROWS],
)
def test_validate_taints(taints: object, paths: list[tuple[object, ...]]) -> None:
    assert [p.path for p in validate_taints(taints)] == paths


# --- nothing raises on any JSON-like input -------------------------------------------------------

JUNK: list[object] = [
    None,
    True,
    0,
    1.5,
    "",
    "NoSchedule",
    [],
    [None, 1, "x", {}],
    {},
    {"key": [], "operator": {}, "value": 1, "effect": None, "tolerationSeconds": "x"},
    {"taints": [{"key": 1}], "unschedulable": True},
    [{"key": "a", "operator": "Exists"}, {"key": "a", "effect": "NoExecute"}],
    {"key": "a", "effect": "NoExecute"},
]

PUBLIC = [
    (tt.tolerates, 2),
    (tt.tolerations_tolerate, 2),
    (tt.node_taints, 1),
    (tt.first_untolerated_taint, 2),
    (tt.first_untolerated_taint_for_bound_pod, 2),
    (tt.daemonset_default_tolerations, 1),
    (tt.daemonset_pod_tolerations, 2),
    (tt.validate_tolerations, 1),
    (tt.validate_taints, 1),
]


@pytest.mark.parametrize(("function", "arity"), PUBLIC, ids=[f.__name__ for f, _ in PUBLIC])
def test_public_functions_never_raise(function, arity: int) -> None:  # type: ignore[no-untyped-def]
    for args in itertools.product(JUNK, repeat=arity):
        function(*args)
