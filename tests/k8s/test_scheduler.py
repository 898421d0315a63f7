"""kube-scheduler's FitError message, the kubelet's rejection, the NodeAffinity PreFilter, and
which validation problems only the scheduler raises."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.nodeaffinity import (
    prefilter_node_names,
    validate_node_selector,
    validate_pod_node_placement,
)
from gpudrv_check.k8s.scheduler import (
    REASON_AFFINITY,
    REASON_TAINT,
    REASON_UNSCHEDULABLE,
    fit_error_message,
    insufficient,
    kubelet_rejection,
    preemption_message,
    reasons_histogram,
)

NOT_HELPFUL_3 = "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        ([REASON_AFFINITY] * 3, "3 node(s) didn't match Pod's node affinity/selector"),
        (
            [REASON_AFFINITY] * 3 + [REASON_TAINT],
            # sorted as strings: "1 node(s) had…" before "3 node(s) didn't…"
            "1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node "
            "affinity/selector",
        ),
        (
            [REASON_TAINT] * 10 + [REASON_UNSCHEDULABLE] * 2,
            # Go's sort.Strings: "10 …" sorts before "2 …"
            "10 node(s) had untolerated taint(s), 2 node(s) were unschedulable",
        ),
        (
            [insufficient("nvidia.com/gpu"), REASON_AFFINITY],
            "1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector",
        ),
        ([], ""),
    ],
)
def test_reasons_histogram(reasons: list[str], expected: str) -> None:
    assert reasons_histogram(reasons) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            (3, [REASON_AFFINITY] * 3, None, preemption_message(3)),
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
            + NOT_HELPFUL_3,
        ),
        (
            (4, [REASON_AFFINITY] * 3 + [REASON_TAINT], None, preemption_message(4)),
            "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match "
            "Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is "
            "not helpful for scheduling.",
        ),
        (
            # a failed PreFilter replaces the per-node reasons
            (3, [REASON_AFFINITY] * 3, "pod affinity terms conflict", preemption_message(3)),
            "0/3 nodes are available: pod affinity terms conflict. " + NOT_HELPFUL_3,
        ),
        (
            (2, [REASON_TAINT] * 2, None, preemption_message(2, "Never")),
            "0/2 nodes are available: 2 node(s) had untolerated taint(s). preemption: not "
            "eligible due to preemptionPolicy=Never.",
        ),
        (
            (1, [REASON_TAINT], None, None),
            "0/1 nodes are available: 1 node(s) had untolerated taint(s).",
        ),
    ],
)
def test_fit_error_message(args: tuple, expected: str) -> None:
    assert fit_error_message(*args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("affinity",),
            "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node "
            "affinity/selector",
        ),
        (
            ("taint",),
            "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod "
            "didn't tolerate",
        ),
        (
            ("resource", "nvidia.com/gpu", 4, 2),
            "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 4, "
            "used: 0, capacity: 2",
        ),
    ],
)
def test_kubelet_rejection(args: tuple, expected: str) -> None:
    assert kubelet_rejection(*args) == expected


def _spec(*terms: dict) -> dict:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def _name(op: str, *values: str) -> dict:
    return {"key": "metadata.name", "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, None),
        (None, None),
        ({"nodeSelector": {"a": "b"}}, None),
        (_spec(), None),  # no terms: PreFilter leaves every node (Filter then rejects them)
        (_spec({"matchFields": [_name("In", "a")]}), frozenset({"a"})),
        (
            _spec({"matchFields": [_name("In", "a")]}, {"matchFields": [_name("In", "b")]}),
            frozenset({"a", "b"}),
        ),
        # one term without a name pin: every node
        (_spec({"matchFields": [_name("In", "a")]}, {"matchExpressions": []}), None),
        (_spec({"matchFields": [_name("NotIn", "a")]}), None),
        # fields inside a term are ANDed: disjoint pins conflict
        (_spec({"matchFields": [_name("In", "a"), _name("In", "b")]}), frozenset()),
        (_spec({"matchFields": [_name("In", "a", "b"), _name("In", "b")]}), frozenset({"b"})),
        (_spec("not a term"), None),
    ],
)
def test_prefilter_node_names(spec: object, expected: frozenset | None) -> None:
    assert prefilter_node_names(spec) == expected


@pytest.mark.parametrize(
    ("selector", "scheduler_only"),
    [
        # the API server accepts these; the scheduler matches no node with the term
        ({"nodeSelectorTerms": [{}]}, [True]),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}
                ]
            },
            [True],
        ),
        # the API server refuses these
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1", "2"]}]}
                ]
            },
            [False],
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["1"]}]}
                ]
            },
            [False],
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "k", "operator": "In", "values": ["-x-"]}]}
                ]
            },
            [False],
        ),
        ({"nodeSelectorTerms": []}, [False]),
    ],
)
def test_problems_say_whether_only_the_scheduler_refuses(
    selector: dict, scheduler_only: list
) -> None:
    assert [p.scheduler_only for p in validate_node_selector(selector)] == scheduler_only
    # the flag survives the path prefixing of the pod-level validator
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}
    }
    assert [p.scheduler_only for p in validate_pod_node_placement(spec)] == scheduler_only
