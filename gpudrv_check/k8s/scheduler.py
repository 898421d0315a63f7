"""What Kubernetes writes when a pod can land on no node: kube-scheduler's FitError message, and
what the kubelet says when it refuses a pod bound with ``spec.nodeName``.

Upstream, read and reproduced (not copied):

- ``pkg/scheduler/framework/types.go`` ``FitError.Error``: ``"0/N nodes are available:"``, then
  the PreFilter message, or the histogram of per-node filter reasons (``"<count> <reason>"``,
  sorted as strings, joined by ``", "``), each followed by ``"."``; then the PostFilter message;
- filter reasons, in the default plugin order (the first failing filter is the one reported for a
  node): NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeResourcesFit;
- NodeAffinity PreFilter: when every required term pins ``metadata.name`` with ``In``, only
  those nodes are filtered; the others read ``node(s) didn't satisfy plugin(s) [NodeAffinity]``;
  terms that pin disjoint names fail PreFilter with ``pod affinity terms conflict``;
- DefaultPreemption PostFilter: ``"preemption: "`` + a FitError over the same nodes, where every
  node that failed with UnschedulableAndUnresolvable reads ``Preemption is not helpful for
  scheduling``; a pod with ``preemptionPolicy: Never`` reads ``not eligible due to
  preemptionPolicy=Never.``.

Version notes. Since PR 134740 (1.35, backported to 1.34) the taint reason no longer names the
taint (it used to read ``node(s) had untolerated taint {key: value}``). Since PR 131345 (1.34) a
request larger than a node's allocatable is unresolvable, so preemption is "not helpful" for
it too. Clusters with dynamic resource allocation enabled add ``no new claims to deallocate, ``
before ``preemption:``. We reproduce current upstream without the DRA clause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = [
    "REASON_UNSCHEDULABLE",
    "REASON_NODE_NAME",
    "REASON_TAINT",
    "REASON_AFFINITY",
    "REASON_PREFILTER_AFFINITY",
    "REASON_AFFINITY_CONFLICT",
    "PREEMPTION_NOT_HELPFUL",
    "PREEMPTION_NEVER",
    "insufficient",
    "reasons_histogram",
    "fit_error_message",
    "preemption_message",
    "kubelet_rejection",
]

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PREFILTER_AFFINITY = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
REASON_AFFINITY_CONFLICT = "pod affinity terms conflict"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPTION_NEVER = "not eligible due to preemptionPolicy=Never."

_KUBELET_TAINT = "node(s) had taints that the pod didn't tolerate"


def insufficient(resource: str) -> str:
    """NodeResourcesFit's reason for one resource (``Insufficient nvidia.com/gpu``)."""
    return f"Insufficient {resource}"


def reasons_histogram(reasons: Iterable[str]) -> str:
    """``"<count> <reason>"`` per distinct reason, sorted as strings (Go ``sort.Strings``: so
    ``"10 …"`` sorts before ``"2 …"``), joined by ``", "``."""
    counts = Counter(reasons)
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def fit_error_message(
    num_nodes: int,
    node_reasons: Iterable[str] = (),
    prefilter_message: str | None = None,
    postfilter_message: str | None = None,
) -> str:
    """The scheduler's message for a pod that fits no node, as ``FitError.Error`` builds it.

    ``node_reasons`` holds one reason per node (the first filter that failed there); it is
    ignored when PreFilter failed, as upstream does.
    """
    message = f"0/{num_nodes} nodes are available:"
    if prefilter_message:
        message += f" {prefilter_message}."
    else:
        histogram = reasons_histogram(node_reasons)
        if histogram:
            message += f" {histogram}."
    if postfilter_message:
        message += f" {postfilter_message}"
    return message


def preemption_message(num_nodes: int, preemption_policy: object = None) -> str:
    """The DefaultPreemption PostFilter message when every node failed unresolvably.

    Every reason this checker reproduces is UnschedulableAndUnresolvable (a GPU request larger
    than the node's allocatable included), so evicting pods never helps.
    """
    if preemption_policy == "Never":
        return f"preemption: {PREEMPTION_NEVER}"
    inner = fit_error_message(num_nodes, [PREEMPTION_NOT_HELPFUL] * num_nodes)
    return f"preemption: {inner}"


def kubelet_rejection(
    reason: str, resource: str | None = None, requested: int = 0, capacity: int = 0
) -> str:
    """What the kubelet writes into a bound pod's status when it refuses to admit it.

    ``reason`` is ``"affinity"``, ``"taint"`` or ``"resource"`` (then ``resource``,
    ``requested`` and ``capacity`` say what was short; nothing else runs there, so used is 0).
    """
    if reason == "affinity":
        detail = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    elif reason == "taint":
        detail = f"Predicate TaintToleration failed: {_KUBELET_TAINT}"
    else:
        detail = (
            f"Node didn't have enough resource: {resource}, requested: {requested}, used: 0, "
            f"capacity: {capacity}"
        )
    return f"Pod was rejected: {detail}"
