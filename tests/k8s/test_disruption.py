"""PodDisruptionBudget semantics: docs/kubernetes.md §5 rows, and rows restated from
disruption_test.go."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.disruption import (
    EVICTION_BUDGET_VIOLATION_MESSAGE,
    EVICTION_BUDGET_VIOLATION_STATUS,
    EVICTION_MULTIPLE_PDBS_MESSAGE,
    EVICTION_MULTIPLE_PDBS_STATUS,
    Budget,
    PodGroup,
    disruption_budget,
    pdb_covers,
    validate_pdb_spec,
)

SELECTOR = {"matchLabels": {"app": "trainer"}}


def pdb(**spec: object) -> dict[str, object]:
    """A policy/v1 PodDisruptionBudget object with ``spec`` (selector added unless given)."""
    spec.setdefault("selector", SELECTOR)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": spec,
    }


def deploy(replicas: int, pods: int | None = None, ready: int | None = None) -> PodGroup:
    """Pods of Deployment ``trainer`` (pods default to replicas: full health)."""
    return PodGroup("Deployment", "trainer", replicas, replicas if pods is None else pods, ready)


def rs(replicas: int, pods: int) -> PodGroup:
    return PodGroup("ReplicaSet", "foobar", replicas, pods)


def rc(replicas: int, pods: int | None = None) -> PodGroup:
    return PodGroup("ReplicationController", "foobar", replicas, replicas if pods is None else pods)


#: two pods of Job train (jobs.batch: no scale subresource)
JOB_PODS = PodGroup("Job", "train", None, 2)


def bare(pods: int) -> PodGroup:
    return PodGroup("", "", None, pods)


# (id, pdb, groups, (expected, desired_healthy, current_healthy, disruptions_allowed), outcome)
BUDGET_ROWS = [
    # docs/kubernetes.md §5, lab step 6 (examples/lab): Deployment trainer, 4 replicas,
    # minAvailable 4 -> drain refused
    ("lab: minAvailable 4 of 4", pdb(minAvailable=4), [deploy(4)], (4, 4, 4, 0), "computed"),
    # minAvailable int: desired = N, expected = selected pods (no controller needed)
    ("minAvailable 3 of 4 pods", pdb(minAvailable=3), [deploy(4)], (4, 3, 4, 1), "computed"),
    (
        "minAvailable 3, one pod not ready",
        pdb(minAvailable=3),
        [deploy(4, ready=3)],
        (4, 3, 3, 0),
        "computed",
    ),
    (
        "minAvailable int counts selected pods, not replicas",
        pdb(minAvailable=2),
        [deploy(10, pods=4)],
        (4, 2, 4, 2),
        "computed",
    ),
    (
        "minAvailable int over bare pods works",
        pdb(minAvailable=1),
        [bare(2)],
        (2, 1, 2, 1),
        "computed",
    ),
    (
        "minAvailable int over Job pods works",
        pdb(minAvailable=1),
        [PodGroup("Job", "nightly", None, 3)],
        (3, 1, 3, 2),
        "computed",
    ),
    ("minAvailable 0 allows every pod", pdb(minAvailable=0), [deploy(3)], (3, 0, 3, 3), "computed"),
    (
        "minAvailable above the pod count",
        pdb(minAvailable=6),
        [deploy(4)],
        (4, 6, 4, 0),
        "computed",
    ),
    # minAvailable percentage: ceil(pct x owners' replicas)
    ("minAvailable 50% of 4", pdb(minAvailable="50%"), [deploy(4)], (4, 2, 4, 2), "computed"),
    (
        "minAvailable 34% of an RC of 3 rounds up to 2",
        pdb(minAvailable="34%"),
        [rc(3)],
        (3, 2, 3, 1),
        "computed",
    ),
    (
        "minAvailable 34% of a StatefulSet of 3",
        pdb(minAvailable="34%"),
        [PodGroup("StatefulSet", "db", 3, 3)],
        (3, 2, 3, 1),
        "computed",
    ),
    (
        "minAvailable 20% of a ReplicaSet of 10, one pod",
        pdb(minAvailable="20%"),
        [rs(10, 1)],
        (10, 2, 1, 0),
        "computed",
    ),
    (
        "minAvailable 28% of RC 11 + Deployment 11",
        pdb(minAvailable="28%"),
        [rc(11), deploy(11)],
        (22, 7, 22, 15),
        "computed",
    ),
    (
        "minAvailable 1% of RC 1 with two pods",
        pdb(minAvailable="1%"),
        [rc(1, pods=2)],
        (1, 1, 2, 1),
        "computed",
    ),
    (
        "minAvailable 100% blocks every eviction",
        pdb(minAvailable="100%"),
        [deploy(4)],
        (4, 4, 4, 0),
        "computed",
    ),
    (
        "minAvailable 0% allows every pod",
        pdb(minAvailable="0%"),
        [deploy(4)],
        (4, 0, 4, 4),
        "computed",
    ),
    # maxUnavailable: desired = replicas - value (percentage rounded up), floored at 0
    ("maxUnavailable 1 of 4", pdb(maxUnavailable=1), [deploy(4)], (4, 3, 4, 1), "computed"),
    (
        "maxUnavailable 2 of a ReplicaSet of 7, one pod",
        pdb(maxUnavailable=2),
        [rs(7, 1)],
        (7, 5, 1, 0),
        "computed",
    ),
    (
        "maxUnavailable 2 of a ReplicaSet of 5, one pod",
        pdb(maxUnavailable=2),
        [rs(5, 1)],
        (5, 3, 1, 0),
        "computed",
    ),
    (
        "maxUnavailable 30% of 7 rounds up to 3",
        pdb(maxUnavailable="30%"),
        [rs(7, 1)],
        (7, 4, 1, 0),
        "computed",
    ),
    (
        "maxUnavailable 30% of 3 rounds up to 1",
        pdb(maxUnavailable="30%"),
        [rs(3, 1)],
        (3, 2, 1, 0),
        "computed",
    ),
    ("maxUnavailable 25% of 4", pdb(maxUnavailable="25%"), [deploy(4)], (4, 3, 4, 1), "computed"),
    (
        "maxUnavailable 25% of 5 rounds up to 2",
        pdb(maxUnavailable="25%"),
        [deploy(5)],
        (5, 3, 5, 2),
        "computed",
    ),
    (
        "maxUnavailable 0 blocks every eviction",
        pdb(maxUnavailable=0),
        [deploy(4)],
        (4, 4, 4, 0),
        "computed",
    ),
    (
        "maxUnavailable 0% blocks every eviction",
        pdb(maxUnavailable="0%"),
        [deploy(4)],
        (4, 4, 4, 0),
        "computed",
    ),
    (
        "maxUnavailable above replicas floors desired at 0",
        pdb(maxUnavailable=10),
        [deploy(4)],
        (4, 0, 4, 4),
        "computed",
    ),
    (
        "maxUnavailable 5 of a custom scale of 10, 4 pods",
        pdb(maxUnavailable=5),
        [PodGroup("RayCluster", "ray", 10, 4)],
        (10, 5, 4, 0),
        "computed",
    ),
    (
        "StatefulSet counted whole when the PDB selects 2 of 3 pods",
        pdb(maxUnavailable=1),
        [PodGroup("StatefulSet", "db", 3, 2)],
        (3, 2, 2, 0),
        "computed",
    ),
    (
        "a Deployment mid-rollout (two ReplicaSets) is counted once",
        pdb(maxUnavailable=1),
        [deploy(4, pods=2), deploy(4, pods=2)],
        (4, 3, 4, 1),
        "computed",
    ),
    # bare pods: skipped in expected, counted in healthy
    (
        "percentage over bare pods only",
        pdb(minAvailable="28%"),
        [bare(1)],
        (0, 0, 1, 0),
        "no-expected-pods",
    ),
    (
        "maxUnavailable over bare pods only",
        pdb(maxUnavailable=1),
        [bare(3)],
        (0, 0, 3, 0),
        "no-expected-pods",
    ),
    (
        "a rogue bare pod counts healthy but not expected",
        pdb(minAvailable="34%"),
        [rc(3), bare(1)],
        (3, 2, 4, 2),
        "computed",
    ),
    # owners without a scale subresource: the sync fails, failSafe writes 0
    (
        "percentage over Job pods",
        pdb(minAvailable="50%"),
        [PodGroup("Job", "nightly", None, 3)],
        (0, 0, 3, 0),
        "fail-safe",
    ),
    (
        "maxUnavailable over DaemonSet pods",
        pdb(maxUnavailable=1),
        [PodGroup("DaemonSet", "dcgm-exporter", None, 5)],
        (0, 0, 5, 0),
        "fail-safe",
    ),
    (
        "maxUnavailable over static pods (owner Node)",
        pdb(maxUnavailable=1),
        [PodGroup("Node", "gpu-1", None, 1)],
        (0, 0, 1, 0),
        "fail-safe",
    ),
    (
        "percentage over a custom kind without scale",
        pdb(minAvailable="28%"),
        [PodGroup("TestWorkload", "fake", None, 1)],
        (0, 0, 1, 0),
        "fail-safe",
    ),
    (
        "one owner without scale fails the whole sync",
        pdb(maxUnavailable=1),
        [deploy(4), PodGroup("Job", "nightly", None, 1)],
        (0, 0, 5, 0),
        "fail-safe",
    ),
    (
        # IsNotMoreThan100Percent reads it as the largest int64 (strconv.Atoi clamps): the API
        # server refuses the budget, which never exists
        "percentage past int64 is refused",
        pdb(minAvailable="99999999999999999999%"),
        [deploy(4)],
        (0, 0, 4, 0),
        "invalid-spec",
    ),
    # expected <= 0 always means 0 allowed
    ("minAvailable 1 selecting no pods", pdb(minAvailable=1), [], (0, 1, 0, 0), "no-expected-pods"),
    (
        "maxUnavailable 1 selecting no pods",
        pdb(maxUnavailable=1),
        [],
        (0, 0, 0, 0),
        "no-expected-pods",
    ),
    (
        "owners scaled to 0 while pods remain",
        pdb(maxUnavailable=1),
        [deploy(0, pods=2)],
        (0, 0, 2, 0),
        "no-expected-pods",
    ),
    (
        "neither field set: nothing is expected, nothing allowed",
        pdb(),
        [deploy(4)],
        (0, 0, 4, 0),
        "no-expected-pods",
    ),
    (
        "both fields null is the same as neither",
        pdb(minAvailable=None, maxUnavailable=None),
        [deploy(4)],
        (0, 0, 4, 0),
        "no-expected-pods",
    ),
    # the API server would reject these: no budget is in force
    (
        "both fields set",
        pdb(minAvailable=1, maxUnavailable=1),
        [deploy(4)],
        (0, 0, 4, 0),
        "invalid-spec",
    ),
    ("minAvailable [1]", pdb(minAvailable=[1]), [deploy(4)], (0, 0, 4, 0), "invalid-spec"),
    ("negative minAvailable", pdb(minAvailable=-1), [deploy(4)], (0, 0, 4, 0), "invalid-spec"),
    ("maxUnavailable 150%", pdb(maxUnavailable="150%"), [deploy(4)], (0, 0, 4, 0), "invalid-spec"),
    (
        "invalid selector",
        pdb(minAvailable=1, selector={"matchExpressions": [{"key": "a", "operator": "In"}]}),
        [deploy(4)],
        (0, 0, 4, 0),
        "invalid-spec",
    ),
    # a review of the budget arithmetic against disruption.go (tests/model/test_pdb_review.py
    # holds the whole-repo cases)
    # getExpectedPodCount + GetScaledValueFromIntOrPercent(roundUp=true): ceil(1.5) = 2 of 3
    ("minAvailable 50% of 3", pdb(minAvailable="50%"), [deploy(3)], (3, 2, 3, 1), "computed"),
    # maxUnavailable rounds up too: ceil(1.5) = 2 may be down, 1 must stay
    (
        "maxUnavailable 50% of 3",
        pdb(maxUnavailable="50%"),
        [deploy(3)],
        (3, 1, 3, 2),
        "computed",
    ),
    # ceil(0.3) = 1: 10% of 3 still lets one go
    (
        "maxUnavailable 10% of 3",
        pdb(maxUnavailable="10%"),
        [deploy(3)],
        (3, 2, 3, 1),
        "computed",
    ),
    # an integer minAvailable counts the selected pods; countHealthyPods: 2 Ready of 3
    (
        "minAvailable 2, 2 Ready of 3",
        pdb(minAvailable=2),
        [deploy(3, ready=2)],
        (3, 2, 2, 0),
        "computed",
    ),
    # getScaleController: jobs.batch has no scale subresource -> sync error -> failSafe
    (
        "maxUnavailable over a Job",
        pdb(maxUnavailable=1),
        [JOB_PODS],
        (0, 0, 2, 0),
        "fail-safe",
    ),
    # a percentage needs the scale as well, even 0%
    (
        "minAvailable 0% over a Job",
        pdb(minAvailable="0%"),
        [JOB_PODS],
        (0, 0, 2, 0),
        "fail-safe",
    ),
    # an integer minAvailable reads no scale: 2 pods, 1 must stay
    (
        "minAvailable 1 over a Job",
        pdb(minAvailable=1),
        [JOB_PODS],
        (2, 1, 2, 1),
        "computed",
    ),
    # getExpectedScale skips the unmanaged pod; countHealthyPods still counts it
    (
        "maxUnavailable 0, a bare pod beside",
        pdb(maxUnavailable=0),
        [deploy(2), PodGroup("", "p", None, 1)],
        (2, 2, 3, 1),
        "computed",
    ),
    # only unmanaged pods: expectedCount 0 -> updatePdbStatus writes 0
    (
        "maxUnavailable over a bare pod",
        pdb(maxUnavailable=1),
        [PodGroup("", "p", None, 1)],
        (0, 0, 1, 0),
        "no-expected-pods",
    ),
    # neither field: getExpectedPodCount leaves both 0 -> 0
    ("neither field", pdb(), [deploy(2)], (0, 0, 2, 0), "no-expected-pods"),
    # CreateMirrorPod: the Node controls the mirror; a Node has no scale -> failSafe
    (
        "maxUnavailable over a mirror pod",
        pdb(maxUnavailable=1),
        [deploy(2), PodGroup("Node", "gpu-0", None, 1)],
        (0, 0, 3, 0),
        "fail-safe",
    ),
    # an integer minAvailable counts the mirror as one of the selected pods
    (
        "minAvailable 2 with a mirror pod",
        pdb(minAvailable=2),
        [deploy(2), PodGroup("Node", "gpu-0", None, 1)],
        (3, 2, 3, 1),
        "computed",
    ),
    ("no spec", {"kind": "PodDisruptionBudget"}, [deploy(4)], (0, 0, 4, 0), "invalid-spec"),
    ("spec is a list", {"spec": [1]}, [deploy(4)], (0, 0, 4, 0), "invalid-spec"),
]


@pytest.mark.parametrize(
    ("pdb_obj", "groups", "numbers", "outcome"),
    [row[1:] for row in BUDGET_ROWS],
    ids=[row[0] for row in BUDGET_ROWS],
)
def test_disruption_budget(
    pdb_obj: object, groups: list[PodGroup], numbers: tuple[int, int, int, int], outcome: str
) -> None:
    budget = disruption_budget(pdb_obj, groups)
    got = (
        budget.expected,
        budget.desired_healthy,
        budget.current_healthy,
        budget.disruptions_allowed,
    )
    assert got == numbers
    assert budget.outcome == outcome
    assert (budget.reason != "") is (outcome != "computed")


DESCRIBE_ROWS = [
    (
        "lab step 6",
        pdb(minAvailable=4),
        [deploy(4)],
        "minAvailable 4 of 4 pods → 0 disruptions allowed",
    ),
    (
        "one pod, singular",
        pdb(minAvailable=1),
        [deploy(1)],
        "minAvailable 1 of 1 pod → 0 disruptions allowed",
    ),
    (
        "one replica, singular",
        pdb(minAvailable="100%"),
        [deploy(1)],
        "minAvailable 100% of 1 replica = 1 must stay healthy → 0 disruptions allowed",
    ),
    (
        "not all ready",
        pdb(minAvailable=3),
        [deploy(4, ready=3)],
        "minAvailable 3 of 4 pods, 3 healthy → 0 disruptions allowed",
    ),
    (
        "minAvailable percentage",
        pdb(minAvailable="50%"),
        [deploy(4)],
        "minAvailable 50% of 4 replicas = 2 must stay healthy → 2 disruptions allowed",
    ),
    (
        "maxUnavailable int, singular",
        pdb(maxUnavailable=1),
        [deploy(4)],
        "maxUnavailable 1 of 4 replicas = 3 must stay healthy → 1 disruption allowed",
    ),
    (
        "maxUnavailable percentage",
        pdb(maxUnavailable="25%"),
        [deploy(8)],
        "maxUnavailable 25% of 8 replicas = 6 must stay healthy → 2 disruptions allowed",
    ),
    (
        "bare pod noted",
        pdb(minAvailable="34%"),
        [rc(3), bare(1)],
        "minAvailable 34% of 3 replicas = 2 must stay healthy, 4 healthy → 2 disruptions allowed"
        " (1 bare pod counted healthy but not expected)",
    ),
    (
        "fail-safe",
        pdb(maxUnavailable="25%"),
        [PodGroup("Job", "nightly", None, 3)],
        "maxUnavailable 25% → 0 disruptions allowed: Job nightly has no scale subresource, so the"
        " disruption controller fails its sync and writes 0 (fail-safe)",
    ),
    (
        "bare pods only",
        pdb(minAvailable="50%"),
        [bare(3)],
        "minAvailable 50% → 0 disruptions allowed: only bare pods are selected and a percentage"
        " or maxUnavailable counts only pods whose controller has a scale",
    ),
    (
        "neither field",
        pdb(),
        [deploy(4)],
        "no minAvailable or maxUnavailable → 0 disruptions allowed: neither minAvailable nor"
        " maxUnavailable is set, so the disruption controller expects 0 pods and refuses every"
        " eviction of a covered pod",
    ),
    (
        "no pods",
        pdb(minAvailable=1),
        [],
        "minAvailable 1 → 0 disruptions allowed: the PDB selects no pods",
    ),
    (
        "invalid",
        pdb(minAvailable=1, maxUnavailable=1),
        [deploy(4)],
        "invalid PodDisruptionBudget (minAvailable and maxUnavailable cannot be both set):"
        " the API server rejects it",
    ),
    (
        "invalid field path",
        pdb(minAvailable="5"),
        [deploy(4)],
        "invalid PodDisruptionBudget (minAvailable: must be an integer or percentage (e.g '5%')):"
        " the API server rejects it",
    ),
]


@pytest.mark.parametrize(
    ("pdb_obj", "groups", "line"),
    [row[1:] for row in DESCRIBE_ROWS],
    ids=[row[0] for row in DESCRIBE_ROWS],
)
def test_describe(pdb_obj: object, groups: list[PodGroup], line: str) -> None:
    assert disruption_budget(pdb_obj, groups).describe() == line


def test_unhealthy_pod_eviction_policy_does_not_change_full_health_budget() -> None:
    plain = disruption_budget(pdb(minAvailable=4), [deploy(4)])
    always = disruption_budget(
        pdb(minAvailable=4, unhealthyPodEvictionPolicy="AlwaysAllow"), [deploy(4)]
    )
    assert plain == always


VALIDATE_ROWS = [
    ("valid minAvailable", {"minAvailable": 1, "selector": SELECTOR}, []),
    ("valid maxUnavailable percent", {"maxUnavailable": "25%", "selector": {}}, []),
    ("neither field is valid", {"selector": SELECTOR}, []),
    ("absent selector is valid", {"minAvailable": 1}, []),
    ("empty spec is valid", {}, []),
    ("null spec is valid", None, []),
    ("both set", {"minAvailable": 1, "maxUnavailable": 1}, [((), "cannot be both set")]),
    ("one of both null is fine", {"minAvailable": 1, "maxUnavailable": None}, []),
    (
        "negative minAvailable",
        {"minAvailable": -1},
        [(("minAvailable",), "greater than or equal to 0")],
    ),
    (
        "negative maxUnavailable",
        {"maxUnavailable": -2},
        [(("maxUnavailable",), "greater than or equal to 0")],
    ),
    (
        "percent above 100",
        {"maxUnavailable": "150%"},
        [(("maxUnavailable",), "not be greater than 100%")],
    ),
    ("number string", {"minAvailable": "50"}, [(("minAvailable",), "integer or percentage")]),
    ("malformed percent", {"minAvailable": "5.5%"}, [(("minAvailable",), "integer or percentage")]),
    ("list value", {"minAvailable": [1]}, [(("minAvailable",), "integer or percentage")]),
    ("boolean value", {"maxUnavailable": True}, [(("maxUnavailable",), "integer or percentage")]),
    ("float value", {"minAvailable": 1.5}, [(("minAvailable",), "integer or percentage")]),
    ("int beyond int32", {"minAvailable": 2**31}, [(("minAvailable",), "32-bit")]),
    (
        "both set and both bad",
        {"minAvailable": -1, "maxUnavailable": "x"},
        [
            ((), "cannot be both set"),
            (("minAvailable",), "greater than or equal to 0"),
            (("maxUnavailable",), "integer or percentage"),
        ],
    ),
    (
        "selector In without values",
        {"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        [(("selector", "matchExpressions", 0, "values"), "must be specified")],
    ),
    (
        "selector bad key",
        {"selector": {"matchLabels": {"a/b/c": "x"}}},
        [(("selector", "matchLabels", "a/b/c"), "optional DNS subdomain prefix")],
    ),
    ("selector of a wrong type", {"selector": "app=web"}, [(("selector",), "must be an object")]),
    ("unhealthyPodEvictionPolicy AlwaysAllow", {"unhealthyPodEvictionPolicy": "AlwaysAllow"}, []),
    (
        "unhealthyPodEvictionPolicy IfHealthyBudget",
        {"unhealthyPodEvictionPolicy": "IfHealthyBudget"},
        [],
    ),
    (
        "unhealthyPodEvictionPolicy unknown",
        {"unhealthyPodEvictionPolicy": "Never"},
        [(("unhealthyPodEvictionPolicy",), "unsupported value")],
    ),
    (
        "unhealthyPodEvictionPolicy wrong type",
        {"unhealthyPodEvictionPolicy": ["AlwaysAllow"]},
        [(("unhealthyPodEvictionPolicy",), "unsupported value")],
    ),
    ("spec is a list", [{"minAvailable": 1}], [((), "must be an object")]),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [row[1:] for row in VALIDATE_ROWS], ids=[row[0] for row in VALIDATE_ROWS]
)
def test_validate_pdb_spec(spec: object, expected: list[tuple[tuple[str | int, ...], str]]) -> None:
    problems = validate_pdb_spec(spec)
    assert [p.path for p in problems] == [path for path, _ in expected]
    for problem, (_, fragment) in zip(problems, expected, strict=True):
        assert fragment in problem.message


def with_selector(selector: object, namespace: str | None = "ml") -> dict[str, object]:
    """A PDB whose selector key is set to ``selector`` (None: key present, null)."""
    metadata: dict[str, object] = {"name": "p"}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"metadata": metadata, "spec": {"minAvailable": 1, "selector": selector}}


NO_SELECTOR = {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"minAvailable": 1}}

COVERS_ROWS = [
    ("same namespace, selector matches", with_selector(SELECTOR), "ml", {"app": "trainer"}, True),
    ("selector does not match", with_selector(SELECTOR), "ml", {"app": "web"}, False),
    ("other namespace", with_selector(SELECTOR), "web", {"app": "trainer"}, False),
    ("{} covers every pod of the namespace", with_selector({}), "ml", {"app": "x"}, True),
    ("{} covers an unlabelled pod", with_selector({}), "ml", {}, True),
    ("{} stays inside its namespace", with_selector({}), "kube-system", {}, False),
    ("absent selector covers nothing", NO_SELECTOR, "ml", {"app": "trainer"}, False),
    ("null selector covers nothing", with_selector(None), "ml", {"app": "trainer"}, False),
    (
        "invalid selector covers nothing",
        with_selector({"matchExpressions": [{"key": "app", "operator": "In"}]}),
        "ml",
        {"app": "trainer"},
        False,
    ),
    ("no metadata.namespace means default", with_selector({}, namespace=None), "default", {}, True),
    (
        "no metadata.namespace is not another namespace",
        with_selector({}, namespace=None),
        "ml",
        {},
        False,
    ),
    ("pdb not an object", ["pdb"], "ml", {}, False),
    ("spec not an object", {"metadata": {"namespace": "ml"}, "spec": "x"}, "ml", {}, False),
    ("pod labels of a wrong type", with_selector({}), "ml", ["app"], True),
]


@pytest.mark.parametrize(
    ("pdb_obj", "namespace", "labels", "expected"),
    [row[1:] for row in COVERS_ROWS],
    ids=[row[0] for row in COVERS_ROWS],
)
def test_pdb_covers(pdb_obj: object, namespace: str, labels: object, expected: bool) -> None:
    assert pdb_covers(pdb_obj, namespace, labels) is expected


def test_pdb_covers_default_namespace_is_configurable() -> None:
    assert pdb_covers(with_selector({}, namespace=None), "ml", {}, default_namespace="ml")


def test_pod_covered_by_two_pdbs_cannot_be_evicted() -> None:
    pdbs = [with_selector({}), with_selector(SELECTOR)]
    covering = [p for p in pdbs if pdb_covers(p, "ml", {"app": "trainer"})]
    assert len(covering) == 2  # the eviction API answers 500 with the message below
    assert EVICTION_MULTIPLE_PDBS_STATUS == 500
    assert EVICTION_MULTIPLE_PDBS_MESSAGE == (
        "This pod has more than one PodDisruptionBudget, "
        "which the eviction subresource does not support."
    )


def test_budget_violation_message() -> None:
    assert EVICTION_BUDGET_VIOLATION_STATUS == 429
    assert EVICTION_BUDGET_VIOLATION_MESSAGE == (
        "Cannot evict pod as it would violate the pod's disruption budget."
    )


WEIRD_PDBS: list[object] = [
    None,
    1,
    "pdb",
    [],
    {},
    {"spec": None},
    {"spec": {"minAvailable": {"a": 1}}},
    {"spec": {"maxUnavailable": None, "minAvailable": "%"}},
    {"metadata": [], "spec": {}},
    {"metadata": {"namespace": 5}, "spec": {"selector": [1]}},
    {"spec": {"minAvailable": 1, "selector": {"matchLabels": {1: None}}}},
    {"spec": {"minAvailable": 1, "unhealthyPodEvictionPolicy": {}}},
]
WEIRD_GROUPS: list[object] = [
    None,
    "abc",
    5,
    {"a": 1},
    [None, 1, "x"],
    [PodGroup("Deployment", "d", "3", "4")],  # type: ignore[arg-type]
    [PodGroup("Deployment", "d", True, -1, "x")],  # type: ignore[arg-type]
    [PodGroup(None, None, None, None)],  # type: ignore[arg-type]
    PodGroup("Deployment", "d", 2, 2),
]


@pytest.mark.parametrize("pdb_obj", WEIRD_PDBS, ids=[repr(p)[:40] for p in WEIRD_PDBS])
@pytest.mark.parametrize("groups", WEIRD_GROUPS, ids=[repr(g)[:40] for g in WEIRD_GROUPS])
def test_wrong_types_never_raise(pdb_obj: object, groups: object) -> None:
    budget = disruption_budget(pdb_obj, groups)  # type: ignore[arg-type]
    assert isinstance(budget, Budget)
    assert budget.disruptions_allowed >= 0
    assert isinstance(budget.describe(), str)
    assert isinstance(pdb_covers(pdb_obj, "default", {"a": "b"}), bool)
    spec = pdb_obj.get("spec") if isinstance(pdb_obj, dict) else pdb_obj
    assert isinstance(validate_pdb_spec(spec), list)
