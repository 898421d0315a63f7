"""Why no node takes a workload: the Kubernetes message, the per-constraint details, the key."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.scheduler import SchedulerRelease
from gpudrv_check.model.pending import (
    CAUSE_AFFINITY,
    CAUSE_GPU,
    CAUSE_NODE_NAME,
    CAUSE_TAINT,
    explain_pending,
    node_names,
)
from gpudrv_check.model.placement import Placement
from tests.model.conftest import (
    GPU_TAINT,
    MAJOR,
    PRESENT,
    expr,
    make_node,
    make_workload,
    required,
    term,
)

REQ = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")


def lab() -> list:
    return [
        make_node("lab-node-0", {PRESENT: "true", MAJOR: "550", "os": "22.04"}),
        make_node("lab-node-1", {PRESENT: "true", MAJOR: "535", "os": "22.04"}),
        make_node("lab-node-2", {PRESENT: "true", MAJOR: "550", "os": "24.04"}),
    ]


def explain(spec: dict, nodes: list | None = None, kind: str = "Pod"):
    return explain_pending(make_workload(spec, kind), Placement(nodes or lab()))


def test_schedulable_workload_has_no_explanation() -> None:
    assert explain({}) is None
    assert explain_pending(make_workload({}), Placement([])) is None


def test_the_lab_cuda13_job() -> None:
    pending = explain(required(term(expr(MAJOR, "Gt", "560"))))
    assert pending.message == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert pending.details == (
        "the affinity term requires nvidia.com/cuda.driver.major Gt 560, which removes "
        "lab-node-0, lab-node-1, lab-node-2; highest in inventory is 550 on lab-node-0, "
        "lab-node-2",
    )
    assert pending.cause == CAUSE_AFFINITY
    assert pending.path == ("spec", *REQ, "nodeSelectorTerms", 0)


@pytest.mark.parametrize(
    ("requirement", "detail"),
    [
        (
            expr(MAJOR, "Lt", "500"),
            "requires nvidia.com/cuda.driver.major Lt 500, which removes lab-node-0, lab-node-1, "
            "lab-node-2; lowest in inventory is 535 on lab-node-1",
        ),
        (
            expr(MAJOR, "In", "560", "570"),
            "requires nvidia.com/cuda.driver.major In (560, 570), which removes lab-node-0, "
            "lab-node-1, lab-node-2; inventory has nvidia.com/cuda.driver.major = 535 on "
            "lab-node-1; 550 on lab-node-0, lab-node-2",
        ),
        (
            expr(MAJOR, "NotIn", "535", "550"),
            "requires nvidia.com/cuda.driver.major NotIn (535, 550), which removes lab-node-0, "
            "lab-node-1, lab-node-2; excluded values in inventory: 535 on lab-node-1; 550 on "
            "lab-node-0, lab-node-2",
        ),
        (
            expr("nvidia.com/cuda.driver-version.major", "Exists"),
            "requires nvidia.com/cuda.driver-version.major Exists, which removes lab-node-0, "
            "lab-node-1, lab-node-2; no node has label nvidia.com/cuda.driver-version.major; "
            "similar keys in inventory: nvidia.com/cuda.driver.major (on 3 nodes)",
        ),
        (
            expr(PRESENT, "DoesNotExist"),
            "requires nvidia.com/gpu.present DoesNotExist, which removes lab-node-0, lab-node-1, "
            "lab-node-2; nvidia.com/gpu.present is set on lab-node-0, lab-node-1, lab-node-2",
        ),
        (
            expr("os", "Gt", "22"),
            "requires os Gt 22, which removes lab-node-0, lab-node-1, lab-node-2; no node has an "
            "integer os (22.04 on lab-node-0, lab-node-1; 24.04 on lab-node-2)",
        ),
    ],
)
def test_nearest_values_per_operator(requirement: dict, detail: str) -> None:
    assert explain(required(term(requirement))).details == (f"the affinity term {detail}",)


def test_several_terms_and_expressions() -> None:
    pending = explain(
        required(
            term(expr(MAJOR, "In", "550"), expr("os", "In", "20.04")),
            term(expr(MAJOR, "Gt", "x")),
            term(),
        )
    )
    assert pending.details == (
        "term 0 requires nvidia.com/cuda.driver.major In 550, which removes lab-node-1; only "
        "lab-node-0, lab-node-2 have one of these values",
        "term 0 requires os In 20.04, which removes lab-node-0, lab-node-1, lab-node-2; "
        "inventory has os = 22.04 on lab-node-0, lab-node-1; 24.04 on lab-node-2",
        "term 1 can never match: 'x' is not an integer: Gt and Lt compare 64-bit integers; the "
        "API server accepts it but the scheduler matches no node with it",
        "term 2 has neither matchExpressions nor matchFields, so it matches no node",
    )
    assert pending.path == ("spec", *REQ, "nodeSelectorTerms")  # several terms: the list


def test_a_term_whose_expressions_each_match_but_not_together() -> None:
    nodes = [make_node("a", {"x": "1"}), make_node("b", {"y": "1"})]
    pending = explain(required(term(expr("x", "Exists"), expr("y", "Exists"))), nodes)
    assert pending.details == (
        "the affinity term requires x Exists, which removes b",
        "the affinity term requires y Exists, which removes a",
    )


def test_node_selector_entry_that_no_node_has_is_the_key_pointed_at() -> None:
    pending = explain({"nodeSelector": {PRESENT: "true", "os": "20.04"}})
    assert pending.details == (
        "nodeSelector os=20.04 removes lab-node-0, lab-node-1, lab-node-2; inventory has os = "
        "22.04 on lab-node-0, lab-node-1; 24.04 on lab-node-2",
    )
    assert pending.path == ("spec", "nodeSelector", "os")
    # each entry matches some node, only the pair matches none: the whole nodeSelector
    pending = explain({"nodeSelector": {MAJOR: "535", "os": "24.04"}})
    assert pending.path == ("spec", "nodeSelector")


def test_match_fields_name_that_does_not_exist() -> None:
    pending = explain(required(term(fields=[expr("metadata.name", "In", "lab-node-9")])))
    assert pending.message.startswith(
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert pending.details == (
        "every term pins node names with matchFields metadata.name In (lab-node-9), which "
        "leaves out lab-node-0, lab-node-1, lab-node-2; no node is named lab-node-9; similar "
        "names: lab-node-0, lab-node-1, lab-node-2",
    )
    assert pending.cause == CAUSE_AFFINITY


def test_conflicting_name_pins() -> None:
    fields = [expr("metadata.name", "In", "lab-node-0"), expr("metadata.name", "In", "lab-node-1")]
    pending = explain(required(term(fields=fields)))
    assert pending.message == "0/3 nodes are available: pod affinity terms conflict. " + (
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not "
        "helpful for scheduling."
    )


def test_taints_and_cordons_point_at_tolerations() -> None:
    nodes = [
        make_node("a", {PRESENT: "true"}, taints=[GPU_TAINT]),
        make_node("b", {PRESENT: "true"}, unschedulable=True),
        make_node("c"),
    ]
    pending = explain({"nodeSelector": {PRESENT: "true"}, "tolerations": []}, nodes)
    assert pending.message.startswith(
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) "
        "had untolerated taint(s), 1 node(s) were unschedulable."
    )
    assert pending.details == (
        "cordoned (spec.unschedulable): b",
        "untolerated taint nvidia.com/gpu=present:NoSchedule on a",
        "nodeSelector nvidia.com/gpu.present=true removes c; only a, b have one of these values",
    )
    assert (pending.cause, pending.path) == (CAUSE_TAINT, ("spec", "tolerations"))
    # without a tolerations list: the pod spec
    assert explain({"nodeSelector": {PRESENT: "true"}}, nodes).path == ("spec",)


def test_insufficient_gpu_points_at_the_request() -> None:
    nodes = [make_node("a", gpus=1), make_node("b", gpus=2), make_node("c", gpus=0)]
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}
    pending = explain(spec, nodes, kind="Deployment")
    assert pending.message == (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate, "
        "preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )
    assert pending.details == (
        "each pod requests 4 nvidia.com/gpu; the most any node offers is 2 (on b)",
    )
    path = ("spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu")
    assert (pending.cause, pending.path) == (CAUSE_GPU, path)


def test_preemption_policy_never() -> None:
    pending = explain({"preemptionPolicy": "Never", "nodeSelector": {"x": "y"}})
    assert pending.message.endswith(
        "selector. no new claims to deallocate, preemption: not eligible due to "
        "preemptionPolicy=Never."
    )


def test_daemonset_message_is_the_controllers_view() -> None:
    pending = explain({"nodeSelector": {"x": "y"}}, kind="DaemonSet")
    assert pending.message == (
        "0/3 nodes run a pod of this DaemonSet: 3 node(s) didn't match Pod's node "
        "affinity/selector."
    )
    assert pending.path == ("spec", "template", "spec", "nodeSelector", "x")


def test_a_daemonset_short_of_a_resource_points_at_that_request() -> None:
    """Its pods lack cpu, not GPUs: the finding sits at the cpu request and the fix names cpu
    (the other kinds' path through `_first_short`)."""
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "512"}}}]}
    node = make_node("a", gpus=1)
    node.allocatable["cpu"] = "4"
    pending = explain(spec, [node], kind="DaemonSet")
    assert pending.message == "0/1 nodes run a pod of this DaemonSet: 1 Insufficient cpu."
    assert (pending.resource, pending.path) == (
        "cpu",
        ("spec", "template", "spec", "containers", 0, "resources", "requests", "cpu"),
    )


def test_bound_pods_get_the_kubelets_words() -> None:
    missing = explain({"nodeName": "lab-node-9"})
    assert missing.message == (
        "spec.nodeName is lab-node-9, which is not a node of the inventory: the pod bypasses "
        "the scheduler and no kubelet ever admits it"
    )
    assert missing.details == ("similar names: lab-node-0, lab-node-1, lab-node-2",)
    assert (missing.cause, missing.path) == (CAUSE_NODE_NAME, ("spec", "nodeName"))

    affinity = explain({"nodeName": "lab-node-1", **required(term(expr(MAJOR, "In", "550")))})
    assert affinity.message == (
        "spec.nodeName binds the pod to lab-node-1, bypassing the scheduler; its kubelet "
        "refuses it: Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match "
        "Pod's node affinity/selector"
    )
    assert affinity.details == (
        "the affinity term requires nvidia.com/cuda.driver.major In 550, which removes "
        "lab-node-1; only lab-node-0, lab-node-2 have one of these values",
    )

    noexec = [make_node("a", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])]
    taint = explain({"nodeName": "a"}, noexec)
    assert taint.message.endswith(
        "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
    )
    assert taint.details == ("untolerated NoExecute taint k=v:NoExecute on a",)

    small = [make_node("a", gpus=1)]
    spec = {
        "nodeName": "a",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": 2}}}],
    }
    gpu = explain(spec, small)
    assert gpu.message.endswith(
        "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 0, capacity: 1"
    )
    assert gpu.path == ("spec", "containers", 0, "resources", "requests", "nvidia.com/gpu")

    # resources before affinity and taints: the kubelet's generalFilter runs
    # scheduler.AdmissionCheck (noderesources.Fits first, then node affinity), then its
    # NoExecute taints, and says the first reason (lifecycle/predicate.go Admit: reasons[0])
    tainted = [
        make_node("a", {"zone": "a"}, [{"key": "k", "value": "v", "effect": "NoExecute"}], gpus=1)
    ]
    both = explain({**spec, "nodeSelector": {"zone": "b"}}, tainted)
    assert both.message.endswith(
        "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 0, capacity: 1"
    )
    fits = {**spec, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    affinity_first = explain({**fits, "nodeSelector": {"zone": "b"}}, tainted)
    assert affinity_first.message.endswith(
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    )


def test_long_node_lists_are_cut() -> None:
    assert node_names([f"n{i}" for i in range(3)]) == "n0, n1, n2"
    assert node_names([f"n{i}" for i in range(8)]) == "n0, n1, n2, n3, n4 and 3 more"


def test_many_distinct_taints_give_five_clauses_and_a_count() -> None:
    """Seven nodes each tainted for its own team: five taints named, the other two counted
    (pending.py `_details`: a clause per distinct taint filled a finding's MAX_MESSAGE on a
    fleet tainted per team)."""
    nodes = [
        make_node(f"n{i}", taints=[{"key": "team", "value": f"t{i}", "effect": "NoSchedule"}])
        for i in range(7)
    ]
    pending = explain({"tolerations": []}, nodes)
    assert pending.details == (
        "untolerated taint team=t0:NoSchedule on n0",
        "untolerated taint team=t1:NoSchedule on n1",
        "untolerated taint team=t2:NoSchedule on n2",
        "untolerated taint team=t3:NoSchedule on n3",
        "untolerated taint team=t4:NoSchedule on n4",
        "2 more untolerated taints on 2 more nodes",
    )


def test_long_value_lists_and_pinned_names_are_cut() -> None:
    """A requirement's values and matchFields' pinned names: five shown as written, then a
    count; five names no node has are looked up, the rest counted (pending.py
    `_requirement_text`, `_details`)."""
    values = [f"host-{i}" for i in range(8)]
    pending = explain(required(term(expr("kubernetes.io/hostname", "In", *values))))
    (detail,) = pending.details
    assert detail.startswith(
        "the affinity term requires kubernetes.io/hostname In (host-0, host-1, host-2, host-3, "
        "host-4 and 3 more), which removes lab-node-0, lab-node-1, lab-node-2"
    )
    pending = explain(required(term(fields=[expr("metadata.name", "In", *values)])))
    (detail,) = pending.details
    assert detail.startswith(
        "every term pins node names with matchFields metadata.name In (host-0, host-1, host-2, "
        "host-3, host-4 and 3 more), which leaves out lab-node-0, lab-node-1, lab-node-2; no node "
        "is named host-0"
    )
    assert detail.count("no node is named") == 5
    assert detail.endswith("; 3 more pinned names match no node")


def test_one_more_taint_or_pinned_name_is_counted_in_the_singular() -> None:
    """Six of them: five named and "1 more ... taint", "1 more pinned name matches" (pending.py
    `_details` words the count with `plural`)."""
    nodes = [
        make_node(f"n{i}", taints=[{"key": "team", "value": f"t{i}", "effect": "NoSchedule"}])
        for i in range(6)
    ]
    assert explain({"tolerations": []}, nodes).details[-1] == (
        "1 more untolerated taint on 1 more node"
    )
    values = [f"host-{i}" for i in range(6)]
    (detail,) = explain(required(term(fields=[expr("metadata.name", "In", *values)]))).details
    assert detail.endswith("; 1 more pinned name matches no node")


@pytest.mark.parametrize("claims_first", [True, False])
def test_one_constraint_set_explains_each_workload_by_its_own_pod_spec(claims_first) -> None:
    """The explanation is memoised per constraint set (`explain_pending`): a workload's DRA
    claims and its written `tolerations:` are in the memo's key, so what one workload says and
    where it points never depend on which workload of that constraint set came first (in a
    cached run the first may be another namespace's, taken from the cache)."""
    from gpudrv_check.model.pending import DRA_NOT_EVALUATED

    selector = {"nodeSelector": {"pool": "nowhere"}}
    claims = {**selector, "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}
    placement = Placement(lab())
    order = [claims, selector] if claims_first else [selector, claims]
    said = {id(spec): explain_pending(make_workload(spec), placement) for spec in order}
    assert DRA_NOT_EVALUATED in said[id(claims)].details
    assert DRA_NOT_EVALUATED not in said[id(selector)].details


@pytest.mark.parametrize("written_first", [True, False])
def test_a_toleration_added_at_admission_is_not_a_written_one(written_first) -> None:
    """Two workloads with one toleration: one writes it, the other gets it at admission (a
    RuntimeClass's `scheduling`: its pod spec is a copy, its template has no `tolerations:`).
    Each points at what its own template holds."""
    nodes = [make_node("a", {PRESENT: "true"}, taints=[GPU_TAINT])]
    toleration = [{"key": "other", "operator": "Exists"}]
    written = make_workload({"tolerations": toleration}, "Deployment", "written")
    admitted = make_workload({}, "Deployment", "admitted")
    admitted.pod_spec = {**admitted.pod_spec, "tolerations": toleration}  # admission's copy
    placement = Placement(nodes)
    assert placement.constraint_key(written) == placement.constraint_key(admitted)
    order = [written, admitted] if written_first else [admitted, written]
    paths = {w.name: explain_pending(w, placement).path for w in order}
    assert paths == {
        "written": ("spec", "template", "spec", "tolerations"),
        "admitted": ("spec", "template", "spec"),
    }


def _node_with(name: str, allocatable: dict[str, str]):
    from gpudrv_check.core.manifest import Manifest
    from gpudrv_check.model.node import Node

    return Node(
        name=name,
        labels={"kubernetes.io/hostname": name, PRESENT: "true"},
        allocatable=allocatable,
        manifest=Manifest("nodes.yaml", 0, {}, "v1", "Node", name, None),
    )


def _gpu_container(name: str) -> dict:
    return {"name": name, "resources": {"limits": {"nvidia.com/gpu": 1}}}


@pytest.mark.parametrize("sidecar_first", [True, False])
def test_a_short_resource_nobody_writes_points_at_each_workloads_own_request(sidecar_first):
    """Nodes that take no more pods: `pods` is written by no workload, so the finding points at
    the workload's GPU request, which is its own, not that of the first workload explained for
    the same constraint set (found by a review: a sidecar at containers[0] was pointed at)."""
    placement = Placement([_node_with("n", {"pods": "0", "nvidia.com/gpu": "8"})])
    plain = make_workload({"containers": [_gpu_container("c")]}, "Deployment", "plain")
    sidecar = make_workload(
        {"containers": [{"name": "log"}, _gpu_container("c")]}, "Deployment", "sidecar"
    )
    assert placement.constraint_key(plain) == placement.constraint_key(sidecar)
    order = [sidecar, plain] if sidecar_first else [plain, sidecar]
    said = {w.name: explain_pending(w, placement) for w in order}
    gpu = ("resources", "limits", "nvidia.com/gpu")
    assert said["plain"].path == ("spec", "template", "spec", "containers", 0, *gpu)
    assert said["sidecar"].path == ("spec", "template", "spec", "containers", 1, *gpu)
    assert said["plain"].resource == said["sidecar"].resource == "pods"


@pytest.mark.parametrize("pod_level_first", [True, False])
def test_a_pod_level_request_is_the_key_pointed_at(pod_level_first):
    """A pod-level `resources.requests` replaces the containers' sum (k8s/resources.py
    `pod_requests`): the finding points there, for each workload whichever came first."""
    placement = Placement([_node_with("n", {"cpu": "1"})])
    in_pod = make_workload(
        {"resources": {"requests": {"cpu": "2"}}, "containers": [{"name": "c"}]},
        "Deployment",
        "in-pod",
    )
    in_container = make_workload(
        {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
        "Deployment",
        "in-container",
    )
    order = [in_pod, in_container] if pod_level_first else [in_container, in_pod]
    said = {w.name: explain_pending(w, placement) for w in order}
    base = ("spec", "template", "spec")
    assert said["in-pod"].path == (*base, "resources", "requests", "cpu")
    assert said["in-container"].path == (*base, "containers", 0, "resources", "requests", "cpu")
    assert said["in-pod"].resource == "cpu"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        # PodTopologySpread filters on DoNotSchedule only (ScheduleAnyway scores)
        ({"topologySpreadConstraints": [{"whenUnsatisfiable": "DoNotSchedule"}]}, True),
        ({"topologySpreadConstraints": [{"whenUnsatisfiable": "ScheduleAnyway"}]}, False),
        # InterPodAffinity filters on the required terms (preferred ones score)
        (
            {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}},
            True,
        ),
        (
            {
                "affinity": {
                    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}
                }
            },
            False,
        ),
        # NodePorts filters on host ports
        ({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, True),
        ({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}, False),
    ],
)
def test_filters_this_check_does_not_run_are_said(fields: dict, said: bool) -> None:
    """The scheduler's filters no verdict here reads are said with the verdict, as the DRA
    claims are (pending.py not_evaluated), never taken for a fit."""
    from gpudrv_check.model.pending import not_evaluated

    assert bool(not_evaluated(fields, SchedulerRelease().minor)) is said
    pending = explain({**fields, "nodeSelector": {"x": "y"}})
    assert (
        any("were not evaluated" in d or "was not evaluated" in d for d in pending.details) is said
    )
