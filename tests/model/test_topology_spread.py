"""PodTopologySpread's filter for a workload's own pods (k8s/topologyspread.py, model/spread.py
`spread_plan`, model/occupancy.py `_place_spread`).

Expected values are ours, worked out from upstream kubernetes/kubernetes
pkg/scheduler/framework/plugins/podtopologyspread (plugin.go reasons, common.go
``filterTopologySpreadConstraints`` / ``matchNodeInclusionPolicies`` /
``nodeLabelsMatchSpreadConstraints``, filtering.go ``calPreFilterState`` / ``minMatchNum`` /
``Filter``), pkg/apis/core/validation ``validateTopologySpreadConstraints`` and
pkg/features/kube_features.go; each row names the function it follows.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.k8s.podaffinity import controller_labels
from gpudrv_check.k8s.scheduler import SchedulerRelease
from gpudrv_check.k8s.topologyspread import (
    NONE,
    REASON_SPREAD,
    REASON_SPREAD_LABEL,
    SELF_ONLY,
    SIBLINGS,
    Skew,
    SpreadConstraint,
    modelled,
    own_selection,
    spread_constraints,
)
from gpudrv_check.model.occupancy import Occupancy, decode_inputs
from gpudrv_check.model.pending import (
    TOPOLOGY_SPREAD_NOT_EVALUATED,
    TOPOLOGY_SPREAD_OWN_PODS,
    not_evaluated,
)
from gpudrv_check.read.config import Config, RuleSettings
from tests.conftest import MATRIX, write

#: the kube-scheduler release the verdicts follow by default (GPU010's scheduler_version)
NEWEST = SchedulerRelease().minor

ZONE_DNS = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
SELECT_W = {"matchLabels": {"app": "w"}}

# --- the constraints as the scheduler reads them ----------------------------------------------


def test_defaults():
    # common.go filterTopologySpreadConstraints: minDomains nil -> 1, nodeAffinityPolicy nil ->
    # Honor, nodeTaintsPolicy nil -> Ignore
    (c,) = spread_constraints({"topologySpreadConstraints": [ZONE_DNS]}) or ()
    assert (c.min_domains, c.honor_affinity, c.honor_taints) == (1, True, False)
    assert (c.max_skew, c.topology_key, c.label_selector) == (1, "zone", None)


def test_schedule_anyway_only_scores():
    # common.go filterTopologySpreadConstraints(..., DoNotSchedule): ScheduleAnyway is dropped
    soft = {**ZONE_DNS, "whenUnsatisfiable": "ScheduleAnyway"}
    assert spread_constraints({"topologySpreadConstraints": [soft]}) == ()


@pytest.mark.parametrize(
    "entry",
    [
        # validation.go ValidateMaxSkew: must be greater than zero
        {**ZONE_DNS, "maxSkew": 0},
        {**ZONE_DNS, "maxSkew": -1},
        {**ZONE_DNS, "maxSkew": "1"},
        {**ZONE_DNS, "maxSkew": True},
        # ValidateTopologyKey: required
        {**ZONE_DNS, "topologyKey": ""},
        {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"},
        # ValidateWhenUnsatisfiable: one of the two
        {**ZONE_DNS, "whenUnsatisfiable": "Never"},
        # validateMinDomains: positive, and only with DoNotSchedule
        {**ZONE_DNS, "minDomains": 0},
        {**ZONE_DNS, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2},
        # validateNodeInclusionPolicy: Honor or Ignore
        {**ZONE_DNS, "nodeTaintsPolicy": "Always"},
        # ValidateLabelSelector
        {**ZONE_DNS, "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}},
        # not an object
        "zone",
    ],
)
def test_rejected_lists_give_nothing(entry):
    spec = {"topologySpreadConstraints": [entry]}
    assert spread_constraints(spec) is None
    # nothing is evaluated and nothing raises: the note says so
    assert not_evaluated(spec, NEWEST) == (
        [TOPOLOGY_SPREAD_NOT_EVALUATED] if "DoNot" in str(entry) else []
    )


def test_repeated_pair_is_rejected():
    # ValidateSpreadConstraintNotRepeat: {topologyKey, whenUnsatisfiable} once
    assert spread_constraints({"topologySpreadConstraints": [ZONE_DNS, ZONE_DNS]}) is None
    assert spread_constraints({"topologySpreadConstraints": "zone"}) is None


@pytest.mark.parametrize(
    ("minor", "min_domains", "honor_taints", "label_keys"),
    [
        # kube_features.go: MinDomainsInPodTopologySpread beta 1.25 but on by default only
        # from 1.27, NodeInclusionPolicyInPodTopologySpread beta (on) 1.26,
        # MatchLabelKeysInPodTopologySpread beta (on) 1.27; off, the field is not read
        (24, 1, False, ()),
        (25, 1, False, ()),
        (26, 1, True, ()),
        (27, 3, True, ("pod-template-hash",)),
    ],
)
def test_fields_by_release(minor, min_domains, honor_taints, label_keys):
    entry = {
        **ZONE_DNS,
        "minDomains": 3,
        "nodeTaintsPolicy": "Honor",
        "labelSelector": SELECT_W,
        "matchLabelKeys": ["pod-template-hash"],
    }
    (c,) = spread_constraints({"topologySpreadConstraints": [entry]}, minor) or ()
    assert (c.min_domains, c.honor_taints, c.match_label_keys) == (
        min_domains,
        honor_taints,
        label_keys,
    )


@pytest.mark.parametrize(
    ("kind", "selector", "keys", "expected"),
    [
        # common.go: matchLabelKeys adds key In (own value); a Deployment's pods share their
        # pod-template-hash (deployment/sync.go getNewReplicaSet)
        ("Deployment", SELECT_W, ("pod-template-hash",), SIBLINGS),
        ("Deployment", SELECT_W, (), SIBLINGS),
        # each StatefulSet pod has a pod-name of its own (stateful_set_utils.go updateIdentity)
        ("StatefulSet", SELECT_W, ("statefulset.kubernetes.io/pod-name",), SELF_ONLY),
        # LabelSelectorAsSelector: the selector does not select the template's labels
        ("Deployment", {"matchLabels": {"app": "other"}}, (), NONE),
        # a null selector selects nothing
        ("Deployment", None, (), NONE),
    ],
)
def test_own_selection(kind, selector, keys, expected):
    constraint = SpreadConstraint(0, 1, "zone", selector, keys)
    siblings = controller_labels(kind, "w", {})
    assert own_selection(constraint, {"app": "w"}, siblings) == expected


def test_two_counting_constraints_are_not_modelled():
    # where one replica goes decides what the other constraint allows: kept as a note
    host = {**ZONE_DNS, "topologyKey": "kubernetes.io/hostname", "labelSelector": SELECT_W}
    spec = {"topologySpreadConstraints": [{**ZONE_DNS, "labelSelector": SELECT_W}, host]}
    assert not modelled(spread_constraints(spec))
    assert not_evaluated(spec, NEWEST) == [TOPOLOGY_SPREAD_NOT_EVALUATED]


def test_notes():
    counting = {"topologySpreadConstraints": [{**ZONE_DNS, "labelSelector": SELECT_W}]}
    assert not_evaluated(counting, NEWEST) == [TOPOLOGY_SPREAD_OWN_PODS]
    # a null selector counts no pod at all: only the missing-label filter, evaluated whole
    assert not_evaluated({"topologySpreadConstraints": [ZONE_DNS]}, NEWEST) == []
    # spec.nodeName: no scheduler runs, the kubelet reads no spread constraint
    assert not_evaluated({**counting, "nodeName": "n1"}, NEWEST) == []


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        # 1.27 on (MatchLabelKeysInPodTopologySpread beta, on by default): matchLabelKeys with
        # a null selector is a form not modelled (k8s/topologyspread.py `unsupported`)
        (NEWEST, [TOPOLOGY_SPREAD_NOT_EVALUATED]),
        (27, [TOPOLOGY_SPREAD_NOT_EVALUATED]),
        # before 1.27 the scheduler reads no matchLabelKeys (pkg/scheduler/framework/plugins/
        # podtopologyspread/common.go filterTopologySpreadConstraints, behind the gate): a null
        # selector then counts no pod, and the missing-label filter is evaluated whole, as the
        # verdicts under that release evaluate it (model/placement.py, by release)
        (26, []),
    ],
)
def test_the_note_follows_the_configured_release(minor, expected):
    spec = {"topologySpreadConstraints": [{**ZONE_DNS, "matchLabelKeys": ["pod-template-hash"]}]}
    assert not_evaluated(spec, minor) == expected


@pytest.mark.parametrize(
    ("counts", "min_domains", "minimum", "allowed"),
    [
        # filtering.go minMatchNum: the smallest count over every domain, empty ones too
        ({"a": 2, "b": 1}, 1, 1, {"a": False, "b": True}),
        # fewer domains than minDomains: the global minimum is 0
        ({"a": 1, "b": 1}, 3, 0, {"a": False, "b": False}),
        ({"a": 0, "b": 0}, 3, 0, {"a": True, "b": True}),
    ],
)
def test_skew(counts, min_domains, minimum, allowed):
    # Filter: matchNum + selfMatch(1) - minMatchNum > maxSkew(1) fails
    skew = Skew(1, min_domains, dict(counts))
    assert skew.minimum() == minimum
    assert {v: skew.allows(v, minimum) for v in counts} == allowed


# --- the replicas over a repo's nodes ---------------------------------------------------------


def node(name: str, zone: str | None, gpus: int, extra: str = "") -> str:
    labels = "{nvidia.com/gpu.present: 'true'" + (f", zone: {zone}}}" if zone else "}")
    return (
        f"- apiVersion: v1\n  kind: Node\n  metadata: {{name: {name}, labels: {labels}}}\n"
        f"{extra}  status: {{allocatable: {{nvidia.com/gpu: '{gpus}', pods: '110'}}}}\n"
    )


TAINTED = "  spec: {taints: [{key: x, effect: NoSchedule}]}\n"


def deployment(replicas: int, spread: str, kind: str = "Deployment", extra: str = "") -> str:
    """A workload `w` in `ml`; `extra`: one more line of its pod spec, after the spread."""
    text = textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: {kind}
        metadata: {{name: w, namespace: ml}}
        spec:
          replicas: {replicas}
          selector: {{matchLabels: {{app: w}}}}
          template:
            metadata: {{labels: {{app: w}}}}
            spec:
              topologySpreadConstraints: {spread}
              containers:
              - {{name: c, image: busybox, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
        """)
    return text + (f"      {extra}\n" if extra else "")


def zone_spread(**fields: object) -> str:
    extra = "".join(f", {k}: {v}" for k, v in fields.items())
    return (
        "[{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, "
        f"labelSelector: {{matchLabels: {{app: w}}}}{extra}}}]"
    )


def simulate(tmp_path: Path, nodes: list[str], text: str, release: str | None = None):
    write(tmp_path, "support-matrix.csv", MATRIX)
    (tmp_path / "nodes.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes))
    (tmp_path / "w.yaml").write_text(text)
    rules = {"GPU010": RuleSettings(params={"scheduler_version": release})} if release else {}
    run = check(tmp_path, Config(matrix=None, rules=rules))
    (workload,) = run.repo.workloads
    return run, workload


def placed(tmp_path: Path, nodes: list[str], text: str, release: str | None = None):
    run, workload = simulate(tmp_path, nodes, text, release)
    record = run.repo.occupancy.replicas(workload)
    assert record is not None
    return record.nodes, record.message


def histogram(message: str) -> str:
    """The filter reasons of a FitError message (before the PostFilter's)."""
    return message.split(": ", 1)[1].split(". ", 1)[0]


UNEVEN = [node("a1", "a", 4), node("a2", "a", 4), node("b1", "b", 1)]

# (id, nodes, workload, release, pods that run, the FitError's filter reasons)
ROWS = [
    # calPreFilterState + Filter: zone b holds 1 pod at most, so zone a holds 2 (maxSkew 1)
    (
        "zone with little room caps the others",
        UNEVEN,
        deployment(5, zone_spread()),
        None,
        3,
        f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 {REASON_SPREAD}",
    ),
    # common.go: matchLabelKeys pod-template-hash, shared by the Deployment's pods: the same
    (
        "matchLabelKeys pod-template-hash",
        UNEVEN,
        deployment(5, zone_spread(matchLabelKeys="[pod-template-hash]")),
        None,
        3,
        f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 {REASON_SPREAD}",
    ),
    # nodeTaintsPolicy Ignore (default): the tainted node's zone c counts with 0 pods, so
    # the global minimum stays 0 and every zone holds 1 (matchNodeInclusionPolicies)
    (
        "a tainted zone counts by default",
        [node("a1", "a", 4), node("b1", "b", 4), node("c1", "c", 4, TAINTED)],
        deployment(4, zone_spread()),
        None,
        2,
        f"0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 {REASON_SPREAD}",
    ),
    # nodeTaintsPolicy Honor: zone c is no domain, nothing caps the replicas
    (
        "nodeTaintsPolicy Honor",
        [node("a1", "a", 4), node("b1", "b", 4), node("c1", "c", 4, TAINTED)],
        deployment(4, zone_spread(nodeTaintsPolicy="Honor")),
        None,
        4,
        "",
    ),
    # before 1.26 the policy is not read (NodeInclusionPolicyInPodTopologySpread): Ignore
    (
        "nodeTaintsPolicy before 1.26",
        [node("a1", "a", 4), node("b1", "b", 4), node("c1", "c", 4, TAINTED)],
        deployment(4, zone_spread(nodeTaintsPolicy="Honor")),
        "1.25",
        2,
        # (before 1.34 the taint reason names the taint: k8s/scheduler.py)
        f"0/3 nodes are available: 1 node(s) had untolerated taint {{x: }}, 2 {REASON_SPREAD}",
    ),
    # nodeAffinityPolicy Honor (default): zone c, which the nodeSelector refuses, is no domain
    (
        "nodeAffinityPolicy Honor",
        [node("a1", "a", 4), node("b1", "b", 4), node("c1", "c", 4)],
        deployment(4, zone_spread(), extra="nodeSelector: {zone: a}"),
        None,
        4,
        "",
    ),
    # nodeAffinityPolicy Ignore: zones b and c count with 0 pods, zone a holds 1
    (
        "nodeAffinityPolicy Ignore",
        [node("a1", "a", 4), node("b1", "b", 4), node("c1", "c", 4)],
        deployment(4, zone_spread(nodeAffinityPolicy="Ignore"), extra="nodeSelector: {zone: a}"),
        None,
        1,
        f"0/3 nodes are available: 1 {REASON_SPREAD}, "
        "2 node(s) didn't match Pod's node affinity/selector",
    ),
    # minMatchNum: 2 domains, minDomains 3: the global minimum is 0, each zone holds maxSkew
    (
        "minDomains above the domains",
        [node("a1", "a", 4), node("b1", "b", 4)],
        deployment(4, zone_spread(minDomains=3)),
        None,
        2,
        f"0/2 nodes are available: 2 {REASON_SPREAD}",
    ),
    # Filter: a node without the key fails, unresolvably (preemption does not look there)
    (
        "a node without the topology key",
        [node("a1", "a", 1), node("nz", None, 4)],
        deployment(3, zone_spread()),
        None,
        1,
        f"0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {REASON_SPREAD_LABEL}",
    ),
    # a selector that does not select its own pods never counts them: no cap
    (
        "selector selects none of its pods",
        [node("a1", "a", 4), node("b1", "b", 1)],
        deployment(4, zone_spread().replace("app: w", "app: other")),
        None,
        4,
        "",
    ),
    # each StatefulSet pod its own pod-name: the merged selector selects the pod alone
    (
        "StatefulSet matchLabelKeys pod-name",
        [node("a1", "a", 4), node("b1", "b", 1)],
        deployment(
            4,
            zone_spread(matchLabelKeys="[statefulset.kubernetes.io/pod-name]"),
            kind="StatefulSet",
        ),
        None,
        4,
        "",
    ),
    # before 1.27 matchLabelKeys is not read (MatchLabelKeysInPodTopologySpread): the
    # selector counts every pod of the StatefulSet, zone b holds 1, zone a 2
    (
        "per-pod matchLabelKeys before 1.27",
        UNEVEN,
        deployment(
            5,
            zone_spread(matchLabelKeys="[statefulset.kubernetes.io/pod-name]"),
            kind="StatefulSet",
        ),
        "1.26",
        3,
        f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 {REASON_SPREAD}",
    ),
    # zone a holds 2 (zone b's 1 + maxSkew) on two nodes of 2 GPUs: the scheduler's default
    # least-allocated score (noderesources/least_allocated.go) puts them on a1 and a2, both
    # with room left, so both read the skew reason, b1 the GPU it lacks
    (
        "two alike nodes in a capped zone",
        [node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 1)],
        deployment(4, zone_spread()),
        None,
        3,
        f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 {REASON_SPREAD}",
    ),
    # kubernetes.io/hostname: every kubelet sets it (an inventory without it: the node name);
    # h1 holds 1, so h2 holds 2
    (
        "hostname key",
        [node("h1", None, 1), node("h2", None, 4)],
        deployment(
            5,
            zone_spread().replace("topologyKey: zone", "topologyKey: kubernetes.io/hostname"),
        ),
        None,
        3,
        f"0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {REASON_SPREAD}",
    ),
    # the API server rejects maxSkew 0: nothing evaluated (the note says so), nothing raises
    (
        "maxSkew 0",
        [node("a1", "a", 4), node("b1", "b", 1)],
        deployment(4, zone_spread().replace("maxSkew: 1", "maxSkew: 0")),
        None,
        4,
        "",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "text", "release", "running", "reasons"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_replicas(tmp_path: Path, nodes, text, release, running, reasons):
    pods, message = placed(tmp_path, nodes, text, release)
    assert sum(p is not None for p in pods) == running
    assert pods[running:] == [None] * (len(pods) - running)  # the last replicas wait
    assert (histogram(message) if message else "") == reasons.split(": ", 1)[-1]


def test_pending_message_words(tmp_path: Path):
    # FitError.Error: reasons sorted as strings; DefaultPreemption: the skew (Unschedulable)
    # and a taken GPU find no victims, the missing label is not helpful
    _, message = placed(
        tmp_path,
        [node("a1", "a", 1), node("nz", None, 4)],
        deployment(3, zone_spread()),
    )
    assert message == (
        f"0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {REASON_SPREAD_LABEL}. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_no_node_with_the_key(tmp_path: Path):
    run, _ = simulate(
        tmp_path, [node("n1", None, 4), node("n2", None, 4)], deployment(2, zone_spread())
    )
    (finding,) = [f for f in run.findings if f.rule == "GPU010"]
    assert finding.message.startswith(
        f"Deployment ml/w: its pods stay Pending: 0/2 nodes are available: 2 {REASON_SPREAD_LABEL}."
    )
    # it points at the topologyKey the nodes lack
    assert finding.location.line == 10


def test_daemonset_skips_nodes_without_the_key(tmp_path: Path):
    text = deployment(1, zone_spread(), kind="DaemonSet").replace("  replicas: 1\n", "")
    run, workload = simulate(tmp_path, [node("a1", "a", 1), node("nz", None, 1)], text)
    assert [n.name for n in run.repo.placement.eligible(workload)] == ["a1"]


def test_stored_inputs_give_the_same_plan(tmp_path: Path):
    run, workload = simulate(tmp_path, UNEVEN, deployment(5, zone_spread()))
    occupancy = run.repo.occupancy
    (demand,) = occupancy.demands
    tables, records = occupancy.encoded()
    fresh = Occupancy.__new__(Occupancy)
    fresh._alloc = occupancy._alloc
    fresh._request_ids, fresh._requests = {}, []
    (decoded,) = decode_inputs((tables.stored(), records), fresh)
    assert demand.spread is not None and decoded.spread is not None
    assert decoded.spread.skew == demand.spread.skew == (1, 1, ("a", "b"))
    assert decoded.spread.values == demand.spread.values
    assert decoded.spread.label_nodes == demand.spread.label_nodes == ()
