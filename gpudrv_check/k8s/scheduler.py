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
it too. With dynamic resource allocation (on by default since 1.34) the DynamicResources
PostFilter adds ``no new claims to deallocate, `` before ``preemption:``. ``SchedulerRelease``
chooses the wording (the ``scheduler_version`` parameter of GPU010; default: current upstream).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction

from gpudrv_check.core.records import record
from gpudrv_check.k8s.quantity import milli_value, value

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
    "Insufficient",
    "fits_request",
    "REASON_TOO_MANY_PODS",
    "REASON_NO_VICTIMS",
    "DRA_POSTFILTER",
    "reasons_histogram",
    "fit_error_message",
    "preemption_message",
    "SchedulerRelease",
    "scheduler_release",
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
REASON_TOO_MANY_PODS = "Too many pods"
#: SelectVictimsOnNode when no pod on the node has a lower priority (the capacity simulation
#: places pods by priority, model/occupancy.py: the pods before a Pending one have at least its)
REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
#: the DynamicResources PostFilter for a pod without claims (DRA on by default since 1.34)
DRA_POSTFILTER = "no new claims to deallocate"
#: the resources NodeResourcesFit checks by name before the scalar (extended) ones
NAMED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_NAMED = NAMED_RESOURCES

_KUBELET_TAINT = "node(s) had taints that the pod didn't tolerate"


def insufficient(resource: str) -> str:
    """NodeResourcesFit's reason for one resource (``Insufficient nvidia.com/gpu``)."""
    return f"Insufficient {resource}"


@record(frozen=True, slots=True)
class Insufficient:
    """fit.go ``InsufficientResource``: one resource the node cannot give the pod."""

    resource: str
    reason: str
    requested: int  # in the scheduler's unit: millicores for cpu, else whole units
    used: int
    capacity: int
    unresolvable: bool  # the request exceeds allocatable: evicting pods never helps


_NONE = Fraction(0)


def _unit(resource: str, amount: Fraction) -> int:
    return milli_value(amount) if resource == "cpu" else value(amount)


def counted(resource: str, amount: Fraction) -> Fraction:
    """What one pod's request adds to a node's requested total: framework ``NodeInfo``
    keeps whole units per pod (``MilliValue()`` of cpu, ``Value()`` of the rest), so two pods of
    ``500m`` bytes of memory hold 2 bytes, not 1."""
    if resource == "cpu":
        return Fraction(milli_value(amount), 1000)
    return Fraction(value(amount))


def fits_request(
    requests: Mapping[str, Fraction],
    allocatable: Mapping[str, Fraction],
    used: Mapping[str, Fraction] | None = None,
    pods_on_node: int = 0,
) -> list[Insufficient]:
    """fit.go ``fitsRequest``: every resource the node lacks for the pod, in upstream's order.

    ``allocatable`` is what the node lists. A standard resource (cpu, memory,
    ephemeral-storage, pods) it does not list is not checked: an inventory that leaves it out
    says nothing about it (a Node object exported with kubectl always lists all four). A
    resource with a ``/`` or a hugepages size it does not list has 0, as upstream.
    """
    used = used or {}
    out: list[Insufficient] = []
    if "pods" in allocatable:
        allowed = value(allocatable["pods"])
        if pods_on_node + 1 > allowed:
            out.append(Insufficient("pods", REASON_TOO_MANY_PODS, 1, pods_on_node, allowed, False))
    named = [r for r in _NAMED if r in requests]
    scalar = sorted(r for r in requests if r not in _NAMED and r != "pods")
    for resource in named + scalar:
        if resource in _NAMED and resource not in allocatable:
            continue
        want = _unit(resource, requests[resource])
        have = _unit(resource, allocatable.get(resource, _NONE))
        taken = _unit(resource, used.get(resource, _NONE))
        if want > 0 and want > have - taken:
            out.append(
                Insufficient(resource, insufficient(resource), want, taken, have, want > have)
            )
    return out


def reasons_histogram(reasons: Iterable[str]) -> str:
    """``"<count> <reason>"`` per distinct reason, sorted as strings (Go ``sort.Strings``: so
    ``"10 …"`` sorts before ``"2 …"``), joined by ``", "``. ``reasons``: one per node, or a
    Counter of them (model/occupancy.py counts as nodes fill)."""
    counts = reasons if isinstance(reasons, Counter) else Counter(reasons)  # counted already
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items() if n > 0))


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


def preemption_message(
    num_nodes: int, preemption_policy: object = None, no_victims: int = 0
) -> str:
    """The DefaultPreemption PostFilter message.

    Nodes that failed UnschedulableAndUnresolvable (every static reason here, a request larger
    than allocatable included) read "Preemption is not helpful for scheduling"; the
    ``no_victims`` nodes that failed only for want of what other pods hold read
    ``SelectVictimsOnNode``'s "No preemption victims found for incoming pod" (pods take room in
    priority order, model/occupancy.py, so none placed before it has a lower priority).
    """
    if preemption_policy == "Never":
        return f"preemption: {PREEMPTION_NEVER}"
    # counted, not listed: one entry per node would be counted again for every Pending pod
    reasons = Counter(
        {REASON_NO_VICTIMS: no_victims, PREEMPTION_NOT_HELPFUL: num_nodes - no_victims}
    )
    return f"preemption: {fit_error_message(num_nodes, reasons)}"


@record(frozen=True, slots=True)
class SchedulerRelease:
    """The kube-scheduler minor release whose wording is reproduced (``scheduler_version``).

    - 1.34 and later: dynamic resource allocation is on by default, so the DynamicResources
      PostFilter adds "no new claims to deallocate" before the preemption message
      (framework ``RunPostFilterPlugins`` joins the reasons with ", "); a request larger than a
      node's allocatable is unresolvable (PR 131345); the taint reason does not name the taint
      (PR 134740, backported to 1.34).
    - before 1.34: none of the three: no DRA clause, an insufficient resource is resolvable
      (preemption finds no victims), and the taint reads "node(s) had untolerated taint {k: v}".
    - 1.26 to 1.29: ``FitError.Error`` appended the PostFilter message with its
      ``SeparatorFormat`` `" %v."`, after the message's own period: it ends in ".." (1.30 appends
      it as `" %v"`).
    """

    minor: int = 35

    @property
    def dra(self) -> bool:
        return self.minor >= 34

    @property
    def resources_unresolvable(self) -> bool:
        return self.minor >= 34

    def taint_reason(self, taint: Mapping[str, object] | None) -> str:
        if self.minor >= 34 or taint is None:
            return REASON_TAINT
        key, val = taint.get("key") or "", taint.get("value") or ""
        return f"node(s) had untolerated taint {{{key}: {val}}}"

    def postfilter(self, num_nodes: int, preemption_policy: object, no_victims: int = 0) -> str:
        """What follows the filter reasons: the DRA clause (1.34+) and the preemption message."""
        preemption = preemption_message(num_nodes, preemption_policy, no_victims)
        message = f"{DRA_POSTFILTER}, {preemption}" if self.dra else preemption
        return message + "." if 26 <= self.minor <= 29 else message


def scheduler_release(text: object) -> SchedulerRelease | None:
    """``"1.33"`` or ``"v1.33.2"`` → the release; None when it names no 1.x release."""
    if not isinstance(text, str):
        return None
    parts = text.strip().lstrip("v").split(".")
    if len(parts) < 2 or parts[0] != "1" or not parts[1].isascii() or not parts[1].isdigit():
        return None
    minor = int(parts[1]) if len(parts[1]) <= 3 else None
    return SchedulerRelease(minor) if minor is not None else None


def kubelet_rejection(
    reason: str, resource: str | None = None, requested: int = 0, capacity: int = 0, used: int = 0
) -> str:
    """What the kubelet writes into a bound pod's status when it refuses to admit it.

    ``reason`` is ``"affinity"``, ``"taint"`` or ``"resource"`` (then ``resource``,
    ``requested``, ``capacity`` and ``used`` say what was short, in the scheduler's units:
    millicores for cpu; lifecycle/predicate.go ``InsufficientResourceError.Error``).
    """
    if reason == "affinity":
        detail = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    elif reason == "taint":
        detail = f"Predicate TaintToleration failed: {_KUBELET_TAINT}"
    else:
        detail = (
            f"Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, "
            f"capacity: {capacity}"
        )
    return f"Pod was rejected: {detail}"
