"""Which nodes a pod template can land on, as kube-scheduler's filters (and the DaemonSet
controller) would decide from manifests alone.

Speed: identical constraint sets are evaluated once, and within one constraint set nodes that
agree on every label key the constraints mention, on their taints and on their GPU count form
one class, evaluated once. A repo with thousands of nodes and workloads costs a few hundred
class evaluations, not millions of node checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpudrv_check.k8s.nodeaffinity import required_node_affinity
from gpudrv_check.k8s.taints import (
    daemonset_pod_tolerations,
    first_untolerated_taint,
    first_untolerated_taint_for_bound_pod,
    node_taints,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.workload import GPU_RESOURCE, Workload

# why a node was filtered, in the order of kube-scheduler's filter plugins (the first that
# fails is the one the scheduler reports for that node)
OK = "ok"
UNSCHEDULABLE = "unschedulable"  # NodeUnschedulable: cordoned, cordon taint not tolerated
NODE_NAME = "node_name"  # NodeName: spec.nodeName names another node
TAINT = "taint"  # TaintToleration: an untolerated NoSchedule/NoExecute taint
AFFINITY = "affinity"  # NodeAffinity: nodeSelector / required node affinity
INSUFFICIENT_GPU = "insufficient_gpu"  # NodeResourcesFit

#: the scheduler's wording per reason (FitError messages)
SCHEDULER_WORDING = {
    UNSCHEDULABLE: "node(s) were unschedulable",
    NODE_NAME: "node(s) didn't match the requested node name",
    TAINT: "node(s) had untolerated taint",
    AFFINITY: "node(s) didn't match Pod's node affinity/selector",
    INSUFFICIENT_GPU: "Insufficient nvidia.com/gpu",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: str
    taint: dict | None = None

    @property
    def ok(self) -> bool:
        return self.reason == OK


def node_gpu_count(node: Node) -> int | None:
    """`nvidia.com/gpu` the node offers (allocatable, else capacity); None when not given."""
    for source in (node.allocatable, node.capacity):
        value = source.get(GPU_RESOURCE)
        if value is not None:
            return int(value) if value.isdigit() else 0
    return None


def _signature(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mentioned_keys(pod_spec: Any) -> tuple[tuple[str, ...], bool]:
    """Label keys the spec's node constraints read, and whether matchFields reads the name."""
    keys: set[str] = set()
    uses_name = False
    if not isinstance(pod_spec, dict):
        return (), False
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, dict):
        keys.update(k for k in selector if isinstance(k, str))
    affinity = pod_spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node_affinity, dict)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else []:
        if not isinstance(term, dict):
            continue
        for req in term.get("matchExpressions") or []:
            if isinstance(req, dict) and isinstance(req.get("key"), str):
                keys.add(req["key"])
        if term.get("matchFields"):
            uses_name = True
    return tuple(sorted(keys)), uses_name


class Placement:
    """Placement of pod templates over one inventory of nodes, with memoisation."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        self._taints = {n.name: node_taints({"taints": n.taints}) for n in self.nodes}
        self._cordon = {
            n.name: node_taints({"unschedulable": True})[-1] for n in self.nodes if n.unschedulable
        }
        self._taint_sig = {n.name: _signature(self._taints[n.name]) for n in self.nodes}
        self._gpus = {n.name: node_gpu_count(n) for n in self.nodes}
        self._cache: dict[tuple, dict[str, Verdict]] = {}

    def constraint_key(self, workload: Workload, daemonset: bool | None = None) -> tuple:
        spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
        is_ds = workload.kind == "DaemonSet" if daemonset is None else daemonset
        return (
            _signature(spec.get("nodeSelector")),
            _signature(
                (spec.get("affinity") or {}).get("nodeAffinity")
                if isinstance(spec.get("affinity"), dict)
                else spec.get("affinity")
            ),
            _signature(spec.get("tolerations")),
            workload.node_name,
            is_ds,
            workload.host_network if is_ds else False,
            workload.gpus,
        )

    def verdicts(self, workload: Workload, daemonset: bool | None = None) -> dict[str, Verdict]:
        """Node name → verdict for every node of the inventory."""
        key = self.constraint_key(workload, daemonset)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._evaluate(workload, key[4])
            self._cache[key] = cached
        return cached

    def eligible(self, workload: Workload, daemonset: bool | None = None) -> list[Node]:
        verdicts = self.verdicts(workload, daemonset)
        return [n for n in self.nodes if verdicts[n.name].ok]

    def _evaluate(self, workload: Workload, daemonset: bool) -> dict[str, Verdict]:
        spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
        affinity = required_node_affinity(spec)
        tolerations = spec.get("tolerations")
        if daemonset:
            tolerations = daemonset_pod_tolerations(tolerations, workload.host_network)
        bound = workload.node_name
        gpus = workload.gpus
        keys, uses_name = _mentioned_keys(spec)
        classes: dict[tuple, Verdict] = {}
        out: dict[str, Verdict] = {}
        for node in self.nodes:
            klass = (
                tuple(node.labels.get(k) for k in keys),
                node.name if (uses_name or bound) else None,
                self._taint_sig[node.name],
                node.unschedulable,
                self._gpus[node.name],
            )
            verdict = classes.get(klass)
            if verdict is None:
                verdict = self._judge(node, affinity, tolerations, bound, gpus)
                classes[klass] = verdict
            out[node.name] = verdict
        return out

    def _judge(self, node: Node, affinity, tolerations, bound: str | None, gpus: int) -> Verdict:
        taints = self._taints[node.name]
        if bound is not None:
            # no scheduler: the kubelet admits on affinity, NoExecute taints and resources
            if bound != node.name:
                return Verdict(NODE_NAME)
            if not affinity.matches(node.name, node.labels):
                return Verdict(AFFINITY)
            taint = first_untolerated_taint_for_bound_pod(taints, tolerations)
            if taint is not None:
                return Verdict(TAINT, taint)
        else:
            cordon = self._cordon.get(node.name)
            if cordon is not None and first_untolerated_taint([cordon], tolerations):
                return Verdict(UNSCHEDULABLE, cordon)
            taint = first_untolerated_taint(taints, tolerations)
            if taint is not None:
                return Verdict(TAINT, taint)
            if not affinity.matches(node.name, node.labels):
                return Verdict(AFFINITY)
        if gpus:
            offered = self._gpus[node.name]
            if offered is not None and offered < gpus:
                return Verdict(INSUFFICIENT_GPU)
        return Verdict(OK)
