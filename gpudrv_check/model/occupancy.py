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

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from gpudrv_check.k8s.resources import is_extended
from gpudrv_check.k8s.scheduler import (
    NAMED_RESOURCES,
    Insufficient,
    counted,
    fit_error_message,
    fits_request,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import Placement, Verdict
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
        # Memos (a node's room only ever shrinks as pods take it, so what did not fit stays so):
        # per distinct requests, per node, (the node's version, what it lacks); a node's version
        # counts the pods put on it
        self._request_ids: dict[tuple, int] = {}
        self._fits: dict[int, dict[str, tuple[int, list[Insufficient]]]] = {}
        self._version: dict[str, int] = {n: 0 for n in self._alloc}
        # (eligible nodes, requests) for which no node had room: no later replica finds any
        # (the list is kept with its entry, so its id names it while the entry lives)
        self._hopeless: dict[tuple[int, int], list[Node]] = {}
        # per verdicts (one per constraint set): the reasons of the nodes it can never use, and
        # the nodes it may use, in node order
        self._static: dict[int, tuple[dict[str, Verdict], list[str], list[str]]] = {}
        # per (verdicts, requests): what their usable nodes lack, as of `seen` entries of the log
        # of nodes given a pod
        self._lacking: dict[tuple[int, int], _Lacking] = {}
        self._static_counted: dict[int, Counter[str]] = {}
        self._tracked_memo: dict[tuple[int, int], tuple[list[Node], bool]] = {}
        self._log: list[str] = []
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
    def _tracked(self, requests: Mapping[str, Fraction], nodes: list[Node], rid: int) -> bool:
        """Whether any of the nodes keeps count of something one pod takes."""
        key = (id(nodes), rid)  # the list is kept with the answer: the id is its own
        known = self._tracked_memo.get(key)
        if known is None:
            known = self._tracked_memo[key] = (nodes, self._tracks(requests, nodes))
        return known[1]

    def _tracks(self, requests: Mapping[str, Fraction], nodes: list[Node]) -> bool:
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
        rid = self._request_id(requests)
        if not self._tracked(requests, eligible, rid):
            return  # nothing a node counts: every pod runs where the placement allows
        record = Replicas(workload)
        domain_of = _domains(repo, workload, namespaces)
        if workload.kind == "DaemonSet":
            record.nodes = [
                self._take(n.name, workload, requests, i, rid) for i, n in enumerate(eligible)
            ]
        else:
            held: set[str] = set()
            cursor = 0
            for index in range(count):
                node, cursor = self._next(eligible, cursor, requests, domain_of, held, rid)
                if node is not None:
                    self._take(node, workload, requests, index, rid)
                    if domain_of is not None:
                        held.add(domain_of[node])
                record.nodes.append(node)
        if record.pending and workload.kind != "DaemonSet":
            record.message, record.short = self._pending_message(
                workload, requests, domain_of, record, rid
            )
        self._replicas[id(workload)] = record

    def _request_id(self, requests: Mapping[str, Fraction]) -> int:
        """A small number per distinct requests (the memos' key)."""
        key = tuple(sorted(requests.items()))
        return self._request_ids.setdefault(key, len(self._request_ids))

    def _next(
        self,
        eligible: list[Node],
        cursor: int,
        requests: Mapping[str, Fraction],
        domain_of: Mapping[str, str] | None,
        held: set[str],
        rid: int,
    ) -> tuple[str | None, int]:
        """The first node from ``cursor`` on (wrapping) with room; and where to start next."""
        hopeless = (id(eligible), rid)
        if hopeless in self._hopeless:
            return None, cursor
        fulls = [f for f in (self._full.get(r) for r in (*requests, "pods")) if f]
        skip = fulls[0] if len(fulls) == 1 else set().union(*fulls)  # one set: not copied
        total = len(eligible)
        for step in range(total):
            node = eligible[(cursor + step) % total].name
            if node in skip or (domain_of is not None and domain_of.get(node) in held):
                continue
            if not self._short(node, requests, rid):
                return node, (cursor + step + 1) % total
        if domain_of is None or not held:  # no node has room, whatever its domain
            self._hopeless[hopeless] = eligible
        return None, cursor

    def _short(self, node: str, requests: Mapping[str, Fraction], rid: int) -> list[Insufficient]:
        """What ``node`` lacks now for one pod of ``requests`` (do not mutate the result)."""
        allocatable = self._alloc[node]
        if allocatable is None:
            return []
        fits = self._fits.get(rid)
        if fits is None:
            fits = self._fits[rid] = {}
        version = self._version[node]
        known = fits.get(node)
        if known is not None and known[0] == version:
            return known[1]
        lacks = fits_request(requests, allocatable, self.used[node], self.pods[node])
        fits[node] = (version, lacks)
        return lacks

    def _take(
        self,
        node: str,
        workload: Workload,
        requests: Mapping[str, Fraction],
        index: int,
        rid: int,
    ) -> str | None:
        """Put one pod on ``node`` (a DaemonSet pod or a bound pod is admitted only if it fits)."""
        bound = workload.kind == "DaemonSet" or workload.node_name is not None
        if bound and self._short(node, requests, rid):
            return None
        self._version[node] += 1
        self._log.append(node)
        allocatable = self._alloc[node] or {}
        used = self.used[node]
        for resource, amount in requests.items():
            if resource in allocatable:
                used[resource] = used.get(resource, Fraction(0)) + counted(resource, amount)
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
        rid: int,
    ) -> tuple[str, tuple[str, ...]]:
        placement = self.placement
        verdicts = placement.verdicts(workload)
        static, usable = self._static_reasons(verdicts)
        total = len(placement.nodes)
        if domain_of is None:  # what the nodes lack alone decides: kept up to date, not redone
            lacking = self._lacking_for(verdicts, usable, requests, rid)
            postfilter = placement.release.postfilter(
                total, workload.preemption_policy, lacking.victims
            )
            counts = self._static_counts(verdicts, static) + lacking.reasons
            message = fit_error_message(total, counts, postfilter_message=postfilter)
            return message, lacking.short()
        held = {domain_of[n] for n in record.nodes if n is not None} if domain_of else set()
        reasons = list(static)  # the message counts reasons: their order does not matter
        no_victims = 0
        short: dict[str, None] = {}
        for node in usable:
            taken = self._short(node, requests, rid)
            if taken:
                reasons.extend(s.reason for s in taken)
                short.update((s.resource, None) for s in taken)
            elif domain_of is not None and domain_of.get(node) in held:
                reasons.append(REASON_ANTI_AFFINITY)
            else:
                continue  # room left (a replica count past the bound nodes): not reported
            no_victims += 1
        postfilter = placement.release.postfilter(total, workload.preemption_policy, no_victims)
        return fit_error_message(total, reasons, postfilter_message=postfilter), tuple(short)

    def _lacking_for(
        self,
        verdicts: dict[str, Verdict],
        usable: list[str],
        requests: Mapping[str, Fraction],
        rid: int,
    ) -> _Lacking:
        """What the usable nodes lack for one pod, brought up to date with the pods taken
        since it was last asked for."""
        key = (id(verdicts), rid)  # the verdicts are kept by _static_reasons: the id is theirs
        lacking = self._lacking.get(key)
        if lacking is None:
            lacking = self._lacking[key] = _Lacking({n: i for i, n in enumerate(usable)})
            changed: list[str] = usable
        else:
            index = lacking.index
            changed = list(dict.fromkeys(n for n in self._log[lacking.seen :] if n in index))
        for node in changed:
            lacking.update(node, self._short(node, requests, rid))
        lacking.seen = len(self._log)
        return lacking

    def _static_counts(self, verdicts: dict[str, Verdict], static: list[str]) -> Counter[str]:
        """The static reasons counted (once per constraint set)."""
        found = self._static_counted.get(id(verdicts))  # kept with _static: the id is theirs
        if found is None:
            found = self._static_counted[id(verdicts)] = Counter(static)
        return found

    def _static_reasons(self, verdicts: dict[str, Verdict]) -> tuple[list[str], list[str]]:
        """The reasons of the nodes these verdicts rule out, and the nodes they allow, in node
        order (one entry per constraint set: the placement keeps each verdicts dict)."""
        found = self._static.get(id(verdicts))
        if found is None:
            placement = self.placement
            reasons: list[str] = []
            usable: list[str] = []
            for node in placement.nodes:
                verdict = verdicts[node.name]
                if verdict.ok:
                    usable.append(node.name)
                else:
                    reasons.extend(placement.node_reasons(verdict))
            found = self._static[id(verdicts)] = (verdicts, reasons, usable)
        return found[1], found[2]


def _rank(resource: str) -> tuple:
    """Where fits_request lists a resource among those a node lacks (k8s/scheduler.py)."""
    if resource == "pods":
        return (0, "")
    if resource in NAMED_RESOURCES:
        return (1 + NAMED_RESOURCES.index(resource), "")
    return (9, resource)


@dataclass
class _Lacking:
    """What some nodes (node -> its place in node order) lack for one pod, as the loop over
    them in `_pending_message` would count it. A node only ever lacks more as pods take its
    room, so each node's change is applied on its own: the reasons it gives, whether it is one
    more node with no room, and where each resource first shows (the order of `short`)."""

    index: dict[str, int]
    seen: int = 0  # entries of Occupancy._log applied
    per_node: dict[str, list[Insufficient]] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)  # resource -> first node lacking it
    victims: int = 0  # nodes lacking something

    def update(self, node: str, lacks: list[Insufficient]) -> None:
        old = self.per_node.get(node, [])
        if lacks is old or (not lacks and not old):
            return
        if lacks and not old:
            self.victims += 1
        self.reasons.subtract(s.reason for s in old)
        self.reasons.update(s.reason for s in lacks)
        at = self.index[node]
        for s in lacks:
            if self.first.get(s.resource, at) >= at:
                self.first[s.resource] = at
        self.per_node[node] = lacks

    def short(self) -> tuple[str, ...]:
        """The resources lacked, by the first node lacking them, then as fits_request lists."""
        return tuple(sorted(self.first, key=lambda r: (self.first[r], _rank(r))))


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
