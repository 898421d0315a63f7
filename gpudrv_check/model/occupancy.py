"""Nodes' capacity shared by the pods that compete for it: which replicas run, which stay Pending.

The static placement (model/placement.py) says on which nodes one pod *could* run. Pods of the
repo then take their share of what those nodes list as allocatable, in a deterministic order:

1. DaemonSet pods, one per node the DaemonSet controller places them on (they are there before
   the workloads they serve);
2. every other workload in file order, replica 0, 1, …: a pod bound with ``spec.nodeName`` on its
   node (the kubelet admits it only if the node still has room); any other pod on the first
   node, in name order, that still has room for it (NodeResourcesFit ``fitsRequest`` against
   what the pods before it requested), taking one node per replica in turn so a workload's
   replicas spread (as the default topology spreading does), and never a second replica in a
   topology domain its required pod anti-affinity already holds.

Which node a replica takes is this checker's choice (kube-scheduler scores the nodes and breaks
ties at random); how many replicas run where the nodes are alike is not. A replica that finds no
node stays Pending, and its message is what the scheduler writes then: the static reasons of the
nodes it can never use, the ``Insufficient …`` of the nodes whose room the other pods took (not
unresolvable: preemption looks there and finds "No preemption victims found for incoming pod",
every pod of a repo having the same priority), and "node(s) didn't match pod anti-affinity
rules" on the nodes its own replicas hold.

Resources are tracked where a node lists them (model/placement.py ``node_allocatable``); a pod
that requests nothing a node tracks takes none of its room, and a node that lists no ``pods``
holds any number of pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from gpudrv_check.k8s.resources import is_extended
from gpudrv_check.k8s.scheduler import Insufficient, fit_error_message, fits_request
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import Placement
from gpudrv_check.model.spread import namespace_labels, workload_spread
from gpudrv_check.model.workload import Workload

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"


def pod_count(workload: Workload, eligible: int) -> int:
    """Pods the workload has while it runs (Job/CronJob: parallelism; DaemonSet: one per node)."""
    if workload.api_rejects or workload.template_only:
        return 0  # the API server refuses the object, or pods come from the objects using it
    if workload.owner_kind:
        return workload.replicas or 0
    kind = workload.kind
    if kind == "DaemonSet":
        return eligible
    if kind == "CronJob":
        value = workload.manifest.get("spec", "jobTemplate", "spec", "parallelism")
        return value if isinstance(value, int) and not isinstance(value, bool) else 1
    if kind == "Job":
        return workload.replicas if workload.replicas is not None else 1
    return workload.replicas or 0


@dataclass
class Replicas:
    """Where one workload's pods run."""

    workload: Workload
    nodes: list[str | None] = field(default_factory=list)  # per replica; None: Pending
    message: str = ""  # the scheduler's message for the first Pending replica
    short: tuple[str, ...] = ()  # resources the Pending replica found taken on some node

    @property
    def placed(self) -> int:
        return sum(1 for n in self.nodes if n is not None)

    @property
    def pending(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n is None]

    def pod_name(self, index: int) -> str:
        return pod_name(self.workload, index)


class Occupancy:
    """The repo's pods over the nodes' allocatable, computed once (see the module docstring)."""

    def __init__(self, repo: Repo, records: Mapping[str, Any] | None = None) -> None:
        self.placement: Placement = repo.placement
        self._alloc = {n.name: self.placement.allocatable(n) for n in self.placement.nodes}
        self.used: dict[str, dict[str, Fraction]] = {n: {} for n in self._alloc}
        self.pods: dict[str, int] = {n: 0 for n in self._alloc}
        self.holders: dict[str, list[str]] = {n: [] for n in self._alloc}
        self._full: dict[str, set[str]] = {}  # resource -> nodes with none of it left
        self._replicas: dict[int, Replicas] = {}
        if records is not None:
            self._restore(repo, records)
            return
        namespaces = namespace_labels(repo)
        ordered = sorted(repo.workloads, key=_order)
        for workload in ordered:
            if workload.kind == "DaemonSet":
                self._place(workload, repo, namespaces)
        for workload in ordered:
            if workload.kind != "DaemonSet":
                self._place(workload, repo, namespaces)

    def records(self) -> dict[str, tuple]:
        """The outcome per workload, for the partition cache (marshal-able builtins)."""
        return {
            _record_key(r.workload): (tuple(r.nodes), r.message, r.short)
            for r in self._replicas.values()
        }

    def _restore(self, repo: Repo, records: Mapping[str, Any]) -> None:
        for workload in repo.workloads:
            record = records.get(_record_key(workload))
            if not isinstance(record, tuple) or len(record) != 3:
                continue
            nodes, message, short = record
            if isinstance(nodes, tuple) and isinstance(message, str) and isinstance(short, tuple):
                self._replicas[id(workload)] = Replicas(workload, list(nodes), message, short)

    def replicas(self, workload: Workload) -> Replicas | None:
        """Where its pods run; None when it has no pods or no node could ever take one."""
        return self._replicas.get(id(workload))

    # --- placing ----------------------------------------------------------------------------
    def _tracked(self, requests: Mapping[str, Fraction], nodes: list[Node]) -> bool:
        """Whether any of the nodes keeps count of something one pod takes."""
        for node in nodes:
            allocatable = self._alloc[node.name] or {}
            if "pods" in allocatable or any(r in allocatable for r in requests):
                return True
        return False

    def _place(self, workload: Workload, repo: Repo, namespaces: dict) -> None:
        eligible = self.placement.eligible(workload)
        count = pod_count(workload, len(eligible))
        if not eligible or count <= 0:
            return
        requests = self.placement.requests(workload)
        if workload.node_name is not None:
            # the kubelet drops the extended resources its node does not list
            allocatable = self._alloc[eligible[0].name] or {}
            requests = {r: v for r, v in requests.items() if r in allocatable or not is_extended(r)}
        if not self._tracked(requests, eligible):
            return  # nothing a node counts: every pod runs where the placement allows
        record = Replicas(workload)
        domain_of = _domains(repo, workload, namespaces)
        if workload.kind == "DaemonSet":
            record.nodes = [
                self._take(n.name, workload, requests, i) for i, n in enumerate(eligible)
            ]
        else:
            held: set[str] = set()
            cursor = 0
            for index in range(count):
                node, cursor = self._next(eligible, cursor, requests, domain_of, held)
                if node is not None:
                    self._take(node, workload, requests, index)
                    if domain_of is not None:
                        held.add(domain_of[node])
                record.nodes.append(node)
        if record.pending and workload.kind != "DaemonSet":
            record.message, record.short = self._pending_message(
                workload, requests, domain_of, record
            )
        self._replicas[id(workload)] = record

    def _next(
        self,
        eligible: list[Node],
        cursor: int,
        requests: Mapping[str, Fraction],
        domain_of: Mapping[str, str] | None,
        held: set[str],
    ) -> tuple[str | None, int]:
        """The first node from ``cursor`` on (wrapping) with room; and where to start next."""
        skip = set().union(*(self._full.get(r, set()) for r in (*requests, "pods")))
        total = len(eligible)
        for step in range(total):
            node = eligible[(cursor + step) % total].name
            if node in skip or (domain_of is not None and domain_of.get(node) in held):
                continue
            if not self._short(node, requests):
                return node, (cursor + step + 1) % total
        return None, cursor

    def _short(self, node: str, requests: Mapping[str, Fraction]) -> list[Insufficient]:
        allocatable = self._alloc[node]
        if allocatable is None:
            return []
        return fits_request(requests, allocatable, self.used[node], self.pods[node])

    def _take(
        self, node: str, workload: Workload, requests: Mapping[str, Fraction], index: int
    ) -> str | None:
        """Put one pod on ``node`` (a DaemonSet pod or a bound pod is admitted only if it fits)."""
        bound = workload.kind == "DaemonSet" or workload.node_name is not None
        if bound and self._short(node, requests):
            return None
        allocatable = self._alloc[node] or {}
        used = self.used[node]
        for resource, amount in requests.items():
            if resource in allocatable:
                used[resource] = used.get(resource, Fraction(0)) + amount
                if used[resource] >= allocatable[resource]:
                    self._full.setdefault(resource, set()).add(node)
        self.pods[node] += 1
        if "pods" in allocatable and self.pods[node] >= allocatable["pods"]:
            self._full.setdefault("pods", set()).add(node)
        self.holders[node].append(pod_name(workload, index))
        return node

    # --- what the scheduler says about a Pending replica ------------------------------------
    def _pending_message(
        self,
        workload: Workload,
        requests: Mapping[str, Fraction],
        domain_of: Mapping[str, str] | None,
        record: Replicas,
    ) -> tuple[str, tuple[str, ...]]:
        placement = self.placement
        verdicts = placement.verdicts(workload)
        held = {domain_of[n] for n in record.nodes if n is not None} if domain_of else set()
        reasons: list[str] = []
        no_victims = 0
        short: dict[str, None] = {}
        for node in placement.nodes:
            verdict = verdicts[node.name]
            if not verdict.ok:
                reasons.extend(placement.node_reasons(verdict))
                continue
            taken = self._short(node.name, requests)
            if taken:
                reasons.extend(s.reason for s in taken)
                short.update((s.resource, None) for s in taken)
            elif domain_of is not None and domain_of.get(node.name) in held:
                reasons.append(REASON_ANTI_AFFINITY)
            else:
                continue  # room left (a replica count past the bound nodes): not reported
            no_victims += 1
        total = len(placement.nodes)
        postfilter = placement.release.postfilter(total, workload.preemption_policy, no_victims)
        return fit_error_message(total, reasons, postfilter_message=postfilter), tuple(short)


def pod_name(workload: Workload, index: int) -> str:
    """How `place` and GPU010 name one replica: ``Deployment/ml/web#0`` (with the template's
    role for a custom kind: ``RayCluster/ml/llm worker group gpu#0``)."""
    role = f" {workload.role}" if workload.role else ""
    return f"{workload.kind}/{workload.namespace}/{workload.name or '?'}{role}#{index}"


def _record_key(workload: Workload) -> str:
    m = workload.manifest
    return f"{m.file}\0{m.doc}\0{m.item}\0{workload.key}\0{workload.role or ''}"


def _order(workload: Workload) -> tuple:
    m = workload.manifest
    return (m.file, m.doc, -1 if m.item is None else m.item)


def _domains(repo: Repo, workload: Workload, namespaces: dict) -> dict[str, str] | None:
    """Node → topology domain of the workload's binding self anti-affinity term, if any."""
    spread = workload_spread(repo, workload, namespaces)
    if spread is None:
        return None
    return {n: value for value, nodes in spread.domains.by_value.items() for n in nodes}
