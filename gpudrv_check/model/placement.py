"""Which nodes a pod template can land on, as kube-scheduler's filters (the kubelet for a pod
bound with ``spec.nodeName``, the DaemonSet controller for a DaemonSet) decide from manifests.

Per node the verdict is the first filter that fails, in the scheduler's plugin order:
NodeAffinity PreFilter (``matchFields metadata.name In`` in every term), NodeUnschedulable,
NodeName, TaintToleration, NodeAffinity, NodeResourcesFit (``nvidia.com/gpu``, where the
inventory gives allocatable or capacity), PodTopologySpread's missing-label filter (a node
without the topologyKey of a DoNotSchedule constraint; the skew depends on where the pods
went: model/occupancy.py). See ``k8s/scheduler.py`` for the wording.

Speed: nodes that agree on their taints, cordon and GPU count form one *base class* (computed
once). For one constraint set, nodes of a base class that also agree on every label key the
constraints mention (and on the name, when the constraints read it) are evaluated once.
Identical constraint sets are evaluated once. A repo with thousands of nodes and workloads
costs a few hundred class evaluations, not millions of node checks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

from gpudrv_check.core.label_reads import note_reads
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.nodeaffinity import (
    RequiredNodeAffinity,
    node_selector_terms,
    prefilter_node_names,
    required_node_affinity,
)
from gpudrv_check.k8s.quantity import quantity_value
from gpudrv_check.k8s.resources import is_extended
from gpudrv_check.k8s.scheduler import (
    REASON_AFFINITY,
    REASON_AFFINITY_CONFLICT,
    REASON_NODE_NAME,
    REASON_PREFILTER_AFFINITY,
    REASON_TAINT,
    REASON_UNSCHEDULABLE,
    Insufficient,
    SchedulerRelease,
    fits_request,
)
from gpudrv_check.k8s.taints import (
    daemonset_pod_tolerations,
    first_untolerated_taint,
    first_untolerated_taint_for_bound_pod,
    node_taints,
)
from gpudrv_check.k8s.topologyspread import FIELD as SPREAD_FIELD
from gpudrv_check.k8s.topologyspread import (
    REASON_SPREAD_LABEL,
    missing_keys,
    spread_constraints,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.workload import GPU_RESOURCE, Workload, placement_fields

# why a node was filtered, in the order of kube-scheduler's plugins
OK = "ok"
PREFILTER = "prefilter"  # NodeAffinity PreFilter: matchFields names other nodes
AFFINITY_CONFLICT = "affinity_conflict"  # NodeAffinity PreFilter: terms pin disjoint names
UNSCHEDULABLE = "unschedulable"  # NodeUnschedulable: cordoned, cordon taint not tolerated
NODE_NAME = "node_name"  # NodeName: spec.nodeName names another node
TAINT = "taint"  # TaintToleration: an untolerated NoSchedule/NoExecute taint
AFFINITY = "affinity"  # NodeAffinity: nodeSelector / required node affinity
INSUFFICIENT = "insufficient"  # NodeResourcesFit: a request larger than allocatable
SPREAD_LABEL = "spread_label"  # PodTopologySpread: the node lacks a DoNotSchedule topologyKey
INSUFFICIENT_GPU = INSUFFICIENT  # the name callers used when only nvidia.com/gpu was checked

#: the scheduler's wording per reason (FitError messages)
SCHEDULER_WORDING = {
    PREFILTER: REASON_PREFILTER_AFFINITY,
    AFFINITY_CONFLICT: REASON_AFFINITY_CONFLICT,
    UNSCHEDULABLE: REASON_UNSCHEDULABLE,
    NODE_NAME: REASON_NODE_NAME,
    TAINT: REASON_TAINT,
    AFFINITY: REASON_AFFINITY,
    SPREAD_LABEL: REASON_SPREAD_LABEL,
}


@record(frozen=True, slots=True)
class Verdict:
    reason: str
    taint: Mapping[str, Any] | None = None  # the untolerated taint (TAINT, UNSCHEDULABLE)
    short: tuple[Insufficient, ...] = ()  # INSUFFICIENT: every resource the node lacks
    # OK for a bound pod: extended resources the node does not list, which the kubelet drops
    # from the request (lifecycle/predicate.go removeMissingExtendedResources)
    dropped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reason == OK

    @property
    def reasons(self) -> tuple[str, ...]:
        """The filter's reasons for this node, as the FitError histogram counts them."""
        if self.reason == INSUFFICIENT:
            return tuple(s.reason for s in self.short)
        wording = SCHEDULER_WORDING.get(self.reason)
        return (wording,) if wording else ()

    @property
    def wording(self) -> str:
        return ", ".join(self.reasons)


_OK = Verdict(OK)
_REASON = attrgetter("reason")


def ok_flags(verdicts: Mapping[str, Verdict]) -> Iterator[bool]:
    """`Verdict.ok` of each of `Placement.verdicts`, in their order (the nodes' order), without
    a Python call per node: a large inventory's constraint sets each ask it of every node."""
    return map(OK.__eq__, map(_REASON, verdicts.values()))


def node_allocatable(node: Node) -> dict[str, Fraction] | None:
    """What the scheduler may allocate on the node; None when the inventory gives neither.

    ``status.allocatable``, defaulted to ``status.capacity`` when absent (pkg/apis/core/v1
    ``SetDefaults_NodeStatus``, "Allocatable ... Defaults to Capacity"). A quantity that does not
    parse (reported by the inventory reader) counts as 0.
    """
    source = node.allocatable or node.capacity
    if not source:
        return None
    out: dict[str, Fraction] = {}
    for key, raw in source.items():
        amount, _ = quantity_value(raw)
        out[key] = amount if amount is not None and amount > 0 else Fraction(0)
    return out


def node_gpu_count(node: Node) -> int | None:
    """``nvidia.com/gpu`` the node offers: allocatable, else capacity; None when neither is given.

    A node whose allocatable (or capacity) is given without ``nvidia.com/gpu`` offers 0: that
    is what the scheduler sees on a node without a running device plugin.

    Read as the quantity it is, not as digits: the kubelet's device manager writes the device
    count as ``resource.NewQuantity(n, resource.DecimalSI)`` (pkg/kubelet/cm/devicemanager
    ``GetCapacity``), whose text for 2000 time-sliced replicas is ``2k``.
    """
    for source in (node.allocatable, node.capacity):
        if source:
            amount, _ = quantity_value(source.get(GPU_RESOURCE, "0"))
            if amount is None or amount < 0 or amount.denominator != 1:
                return 0  # no whole count (reported by the inventory reader): none offered
            return int(amount)
    return None


def runtime_class_overheads(manifests: Iterable[Manifest]) -> dict[str, dict[str, Fraction]]:
    """RuntimeClass name → ``overhead.podFixed`` for the RuntimeClasses in the repo
    (node.k8s.io/v1; the RuntimeClass admission controller copies it into each pod's
    ``spec.overhead``, which ``PodRequests`` adds)."""
    out: dict[str, dict[str, Fraction]] = {}
    for manifest in manifests:
        if manifest.kind != "RuntimeClass" or not manifest.api_version.startswith("node.k8s.io/"):
            continue
        fixed = manifest.get("overhead", "podFixed")
        if manifest.name and isinstance(fixed, MAPPINGS):
            amounts = {k: quantity_value(v)[0] for k, v in fixed.items() if isinstance(k, str)}
            out[manifest.name] = {k: v for k, v in amounts.items() if v is not None and v > 0}
    return out


def _amounts(amounts: Mapping[str, Fraction] | None) -> tuple | None:
    """Resource amounts as a hashable key."""
    return None if amounts is None else tuple(sorted((k, str(v)) for k, v in amounts.items()))


# json.dumps(value, sort_keys=True, default=str), without building an encoder per call
_signature = json.JSONEncoder(sort_keys=True, default=str).encode


def _facts_key(node: Node) -> tuple | None:
    """What `Placement` works out of a node depends on, as a key (None: a value no key can
    hold, a list say: worked out for that node alone)."""
    try:
        key = (
            _items_key(node.allocatable),
            _items_key(node.capacity),
            tuple(_items_key(taint) for taint in node.taints),
            node.unschedulable,
        )
        hash(key)
    except TypeError:
        return None
    return key


def _items_key(mapping: Mapping) -> tuple:
    """A mapping's items as a key: a string as it is, any other value with its class and its
    repr (equal keys for `1`, `1.0` and `true`, or for `0.0` and `-0.0`, would not do: their
    texts differ). The inventory's amounts and taints are strings (model/inventory.py)."""
    return tuple(
        (k, v) if v.__class__ is str else (k, v.__class__, repr(v)) for k, v in mapping.items()
    )


def _mentioned_keys(pod_spec: Any) -> tuple[tuple[str, ...], bool]:
    """Label keys the spec's node constraints read, and whether matchFields reads the name."""
    keys: set[str] = set()
    uses_name = False
    if not isinstance(pod_spec, dict):
        return (), False
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, dict):
        keys.update(k for k in selector if isinstance(k, str))
    for term in node_selector_terms(pod_spec):
        if not isinstance(term, dict):
            continue
        expressions = term.get("matchExpressions")
        for req in expressions if isinstance(expressions, list) else []:
            if isinstance(req, dict) and isinstance(req.get("key"), str):
                keys.add(req["key"])
        if term.get("matchFields"):
            uses_name = True
    return tuple(sorted(keys)), uses_name


@record(frozen=True, slots=True)
class _Constraints:
    """One pod template's placement constraints, parsed once."""

    affinity: RequiredNodeAffinity
    tolerations: object
    bound: str | None  # spec.nodeName: no scheduler, the kubelet admits
    prefilter: frozenset[str] | None  # NodeAffinity PreFilter node names; None: every node
    requests: dict[str, Fraction]  # one pod's requests, RuntimeClass overhead included
    #: the topologyKeys of its DoNotSchedule topology spread constraints a node must carry
    #: (k8s/topologyspread.py `missing_keys`; none for a bound pod: no scheduler reads them)
    spread_keys: tuple[str, ...] = ()


class Placement:
    """Placement of pod templates over one inventory of nodes, with memoisation."""

    def __init__(
        self,
        nodes: list[Node],
        overheads: Mapping[str, Mapping[str, Fraction]] | None = None,
        release: SchedulerRelease | None = None,
        derived: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        #: the nodes' names, in their order (do not mutate)
        self.names = [n.name for n in self.nodes]
        #: whose wording the FitError messages reproduce (GPU010's scheduler_version)
        self.release = release or SchedulerRelease()
        #: RuntimeClass name -> overhead.podFixed (the RuntimeClass admission controller sets
        #: a pod's spec.overhead from it)
        self.overheads = dict(overheads or {})
        # a node the inventory gives no allocatable for may have one derived from its MIG config
        derived = derived or {}
        self._alloc: dict[str, dict[str, Fraction] | None] = {}
        self._taints: dict[str, list[dict[str, object]]] = {}
        self._gpus: dict[str, int | None] = {}
        self._base: dict[str, int] = {}
        # what a node's facts give, once per distinct facts: a fleet's nodes write the same
        # few amounts and taints (10k corpus: 2,000 nodes, 3 distinct); the results are read,
        # never changed, so nodes of equal facts share them
        by_facts: dict[tuple, tuple] = {}
        base_ids: dict[tuple, int] = {}
        for n in self.nodes:
            # a node whose allocatable is derived from its MIG config is worked out alone
            facts = _facts_key(n) if n.name not in derived else None
            found = by_facts.get(facts) if facts is not None else None
            if found is None:
                alloc: dict[str, Fraction] | None = (
                    {k: Fraction(v) for k, v in derived[n.name].items()}
                    if n.name in derived
                    else node_allocatable(n)
                )
                taints = node_taints({"taints": n.taints})
                base = (_signature(taints), n.unschedulable, _amounts(alloc))
                found = (alloc, taints, node_gpu_count(n), base_ids.setdefault(base, len(base_ids)))
                if facts is not None:
                    by_facts[facts] = found
            name = n.name
            self._alloc[name], self._taints[name], self._gpus[name], self._base[name] = found
        self._cordon = {
            n.name: node_taints({"unschedulable": True})[-1] for n in self.nodes if n.unschedulable
        }
        self._cache: dict[tuple, dict[str, Verdict]] = {}
        self._keys: dict[int, tuple[Workload, tuple]] = {}  # constraint keys by identity
        self._requests: dict[int, tuple[Workload, dict[str, Fraction]]] = {}  # likewise
        self._eligible: dict[tuple, list[Node]] = {}
        self._lists: dict[bytes, list[Node]] = {}  # by which nodes they keep: `eligible`
        self._partitions: dict[tuple[str, ...], tuple[list[int], list[Node]]] = {}
        # the results `_evaluate` made by node classes, by their id (each kept, so the id
        # stays its own): (result, each node's class, each class's verdict); and the sizes
        # of the classes, by the id of the nodes' class numbers (kept with them)
        self._by_class: dict[int, tuple[dict[str, Verdict], list[int], list[Verdict]]] = {}
        self._sizes: dict[int, tuple[list[int], list[int]]] = {}
        self._ok: dict[int, bytes] = {}  # `ok_bytes` of the results in `_by_class`, by id
        self._texts: dict[str, str] = {}
        #: memo for derived per-constraint-set results (model/pending.py, model/cuda.py)
        self.memo: dict[tuple, Any] = {}
        #: how much work memoisation left: constraint sets and node classes evaluated
        self.constraint_sets = 0
        self.class_evaluations = 0

    def gpu_count(self, node: Node) -> int | None:
        return self._gpus.get(node.name)

    def node_reasons(self, verdict: Verdict) -> tuple[str, ...]:
        """The FitError reasons of one node's verdict in this release's wording."""
        if verdict.reason == TAINT:
            return (self.release.taint_reason(verdict.taint),)
        return verdict.reasons

    def untolerated(self, node: Node, tolerations: object) -> bool:
        """Whether the node has a NoSchedule or NoExecute taint ``tolerations`` do not tolerate,
        the cordon's included (the node lifecycle controller taints a cordoned node)."""
        taints = self._taints.get(node.name, [])
        cordon = self._cordon.get(node.name)
        return (
            first_untolerated_taint([*taints, cordon] if cordon else taints, tolerations)
            is not None
        )

    def allocatable(self, node: Node) -> dict[str, Fraction] | None:
        """What the node offers (do not mutate the result); None when the inventory says nothing."""
        return self._alloc.get(node.name)

    def requests(self, workload: Workload) -> dict[str, Fraction]:
        """One pod's requests as the scheduler sums them: the template's plus the overhead of
        its RuntimeClass when the repo holds that RuntimeClass (once per workload: the key,
        the capacity and the messages each ask)."""
        found = self._requests.get(id(workload))
        if found is not None:
            return found[1]
        runtime = workload.spec_get("runtimeClassName")
        overhead = self.overheads.get(runtime) if isinstance(runtime, str) else None
        total = workload.requests
        if overhead:
            total = dict(workload.requests)
            for key, amount in overhead.items():
                total[key] = total.get(key, Fraction(0)) + amount
        # by identity; the entry holds the workload, so its id cannot be reused meanwhile
        self._requests[id(workload)] = (workload, total)
        return total

    def constraint_key(self, workload: Workload, daemonset: bool | None = None) -> tuple:
        """What the verdicts depend on: equal keys, equal verdicts on every node."""
        if daemonset is None:
            # by identity; the entry holds the workload, so its id cannot be reused meanwhile
            found = self._keys.get(id(workload))
            if found is None:
                found = self._keys[id(workload)] = (workload, self._constraint_key(workload, None))
            return found[1]
        return self._constraint_key(workload, daemonset)

    def _constraint_key(self, workload: Workload, daemonset: bool | None) -> tuple:
        spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
        is_ds = workload.kind == "DaemonSet" if daemonset is None else daemonset
        # one text, as distinct as the three values: the tree holds builtin values only (the
        # loader's scalars, dicts, lists), whose repr names each type and value, so equal texts
        # are equal values (order counts too: finer than sorted JSON, about twice as fast);
        # made once per workload (its validation made it: Workload.placement_text); one copy
        # kept per distinct text
        text = workload.placement_text(placement_fields(spec))
        key = (
            self._texts.setdefault(text, text),
            is_ds,
            workload.node_name,
            workload.host_network if is_ds else False,
            _amounts(self.requests(workload)),
        )
        if spec.get(SPREAD_FIELD) is None:
            return key
        # the topologyKeys a node must carry (PodTopologySpread's missing-label filter)
        return (*key, self.spread_keys(spec, workload.node_name))

    def spread_keys(self, spec: Any, bound: str | None) -> tuple[str, ...]:
        """The topology keys of the spec's DoNotSchedule constraints a node must carry, in
        their order (k8s/topologyspread.py); none for a bound pod (the kubelet reads none)
        or a list the API server rejects (no pod of it exists)."""
        if bound is not None:
            return ()
        constraints = spread_constraints(spec, self.release.minor)
        return missing_keys(constraints) if constraints else ()

    def verdicts(self, workload: Workload, daemonset: bool | None = None) -> dict[str, Verdict]:
        """Node name → verdict for every node of the inventory (do not mutate the result)."""
        key = self.constraint_key(workload, daemonset)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._evaluate(workload, key[1])
            self._cache[key] = cached
        return cached

    def eligible(self, workload: Workload, daemonset: bool | None = None) -> list[Node]:
        """The nodes it can land on, by name (do not mutate the result). Constraint sets that
        keep the same nodes share one list: what is worked out once per node list (a CUDA
        fit's drivers, model/cuda.py) is then worked out once per distinct one (a fleet's
        hundreds of constraint sets keep a few lists)."""
        key = self.constraint_key(workload, daemonset)
        cached = self._eligible.get(key)
        if cached is None:
            flags = self.ok_bytes(self.verdicts(workload, daemonset))
            cached = self._lists.get(flags)
            if cached is None:
                cached = self._lists[flags] = list(compress(self.nodes, flags))
            self._eligible[key] = cached
        return cached

    def _constraints(self, workload: Workload, daemonset: bool) -> _Constraints:
        spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
        tolerations = spec.get("tolerations")
        if daemonset:
            tolerations = daemonset_pod_tolerations(tolerations, workload.host_network)
        bound = workload.node_name
        # the PreFilter is the scheduler's; bound pods and the DaemonSet controller skip it
        prefilter = None if (bound or daemonset) else prefilter_node_names(spec)
        return _Constraints(
            required_node_affinity(spec),
            tolerations,
            bound,
            prefilter,
            self.requests(workload),
            self.spread_keys(spec, bound) if spec.get(SPREAD_FIELD) is not None else (),
        )

    def _evaluate(self, workload: Workload, daemonset: bool) -> dict[str, Verdict]:
        self.constraint_sets += 1
        constraints = self._constraints(workload, daemonset)
        if constraints.prefilter is not None and not constraints.prefilter:
            return {n.name: Verdict(AFFINITY_CONFLICT) for n in self.nodes}
        keys, uses_name = _mentioned_keys(workload.pod_spec)
        if constraints.spread_keys:
            keys = tuple(sorted({*keys, *constraints.spread_keys}))
        by_name = uses_name or constraints.bound is not None or constraints.prefilter is not None
        if by_name:  # every node is a class of its own
            self.class_evaluations += len(self.nodes)
            return {node.name: self._judge(node, constraints) for node in self.nodes}
        of_node, representatives = self._classes(keys)
        self.class_evaluations += len(representatives)
        judged = [self._judge(node, constraints) for node in representatives]
        # node name -> its class's verdict, in the nodes' order (`ok_flags` reads it so)
        verdicts = dict(zip(self.names, map(judged.__getitem__, of_node), strict=True))
        self._by_class[id(verdicts)] = (verdicts, of_node, judged)
        return verdicts

    def ok_bytes(self, verdicts: Mapping[str, Verdict]) -> bytes:
        """`ok_flags` of a result of `verdicts` as bytes (1: the node may take the pod): for a
        result `_evaluate` made by node classes, from its classes' verdicts, once (one C loop
        over the nodes' class numbers rather than two over the verdicts; 8,000 nodes, 46
        constraint sets: their Nodes, model/occupancy.py `_nodes_of`, 90 -> 7 ms, with
        `static_reasons`); for any other mapping, from it as it is now (nothing kept: a
        mapping of the caller's may change)."""
        classes = self._by_class.get(id(verdicts))
        if classes is None or classes[0] is not verdicts:
            return bytes(ok_flags(verdicts))
        flags = self._ok.get(id(verdicts))
        if flags is None:
            ok = bytes([verdict.reason == OK for verdict in classes[2]])
            flags = self._ok[id(verdicts)] = bytes(map(ok.__getitem__, classes[1]))
        return flags

    def static_reasons(self, verdicts: Mapping[str, Verdict]) -> Counter[str]:
        """The reasons (`node_reasons`) of the nodes a result of `verdicts` keeps out, each
        counted once per such node, in the order their first node has them: per node class
        when `_evaluate` made the result by classes (a class's verdict times its size), else
        per distinct verdict (the placement shares one among the nodes of a class). A new
        Counter per call."""
        static: Counter[str] = Counter()
        classes = self._by_class.get(id(verdicts))
        if classes is not None and classes[0] is verdicts:
            _, of_node, judged = classes
            known = self._sizes.get(id(of_node))
            if known is None or known[0] is not of_node:  # (kept with it: the id is its own)
                counted = Counter(of_node)
                sizes = [counted[c] for c in range(len(judged))]
                known = self._sizes[id(of_node)] = (of_node, sizes)
            pairs: Iterable[tuple[Verdict, int]] = zip(judged, known[1], strict=True)
        else:
            values = verdicts.values()
            by_id: dict[int, Verdict] = dict(zip(map(id, values), values, strict=True))
            pairs = ((by_id[vid], n) for vid, n in Counter(map(id, values)).items())
        for verdict, n in pairs:
            if verdict.reason != OK:
                for reason in self.node_reasons(verdict):
                    static[reason] += n
        return static

    def _classes(self, keys: tuple[str, ...]) -> tuple[list[int], list[Node]]:
        """Nodes that agree on their base class and on the labels `keys`: per node its class,
        and each class's first node. The same for every constraint set reading these keys."""
        found = self._partitions.get(keys)
        if found is None:
            nodes = self.nodes
            if nodes:
                note_reads(keys)  # each value is read below by its key, unrecorded
            # per node (its base class, its value of each key), a column at a time: C loops
            bases = list(map(self._base.__getitem__, self.names))
            if keys:
                labels = [n.labels for n in nodes]
                columns = (map(dict.get, labels, repeat(key)) for key in keys)
                classes = list(zip(bases, zip(*columns, strict=True), strict=True))
            else:
                classes = [(base, ()) for base in bases]
            index: dict[tuple, int] = {}
            of_node = [index.setdefault(klass, len(index)) for klass in classes]
            # each class's first node: the last of each written in reverse
            first = dict(zip(reversed(classes), reversed(nodes), strict=True))
            representatives = [first[klass] for klass in index]
            found = self._partitions[keys] = (of_node, representatives)
        return found

    def _judge(self, node: Node, c: _Constraints) -> Verdict:
        taints = self._taints[node.name]
        if c.bound is not None:
            # no scheduler: the kubelet admits it (lifecycle/predicate.go generalFilter) on
            # scheduler.AdmissionCheck, resources first, then node affinity, then its NoExecute
            # taints, and tells the first reason it finds
            if c.bound != node.name:
                return Verdict(NODE_NAME)
            fit = self._resources(node, c)
            if not fit.ok:
                return fit
            if not c.affinity.matches(node.name, node.labels):
                return Verdict(AFFINITY)
            taint = first_untolerated_taint_for_bound_pod(taints, c.tolerations)
            if taint is not None:
                return Verdict(TAINT, taint)
            return fit
        if c.prefilter is not None and node.name not in c.prefilter:
            return Verdict(PREFILTER)
        cordon = self._cordon.get(node.name)
        if cordon is not None and first_untolerated_taint([cordon], c.tolerations):
            return Verdict(UNSCHEDULABLE, cordon)
        taint = first_untolerated_taint(taints, c.tolerations)
        if taint is not None:
            return Verdict(TAINT, taint)
        if not c.affinity.matches(node.name, node.labels):
            return Verdict(AFFINITY)
        fit = self._resources(node, c)
        if c.spread_keys and fit.ok:
            # PodTopologySpread, after NodeResourcesFit (the default plugin order): a node
            # without a DoNotSchedule constraint's topologyKey (filtering.go Filter)
            labels = node.labels
            if any(key not in labels for key in c.spread_keys):
                return Verdict(SPREAD_LABEL)
        return fit

    def _resources(self, node: Node, c: _Constraints) -> Verdict:
        """NodeResourcesFit on the node's allocatable (a bound pod's extended resources the
        node does not list are dropped first, as the kubelet does)."""
        allocatable = self._alloc[node.name]
        if allocatable is None:
            return _OK
        requests, dropped = c.requests, tuple[str, ...]()
        if c.bound is not None:
            dropped = tuple(sorted(r for r in requests if is_extended(r) and r not in allocatable))
            requests = {r: v for r, v in requests.items() if r not in dropped}
        short = fits_request(requests, allocatable)
        if short:
            return Verdict(INSUFFICIENT, short=tuple(short))
        return Verdict(OK, dropped=dropped) if dropped else _OK
