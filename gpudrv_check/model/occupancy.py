"""Nodes' capacity shared by the pods that compete for it: which replicas run, which stay Pending.

The static placement (model/placement.py) says on which nodes one pod *could* run. Pods of the
repo then take their share of what those nodes list as allocatable, in a deterministic order: by
pod priority, highest first (the scheduling queue pops pods so, queuesort/priority_sort.go
`Less`; the priority is the PriorityClass `value` admission gives the pod, model/admission.py
`pod_priority`), and within one priority

1. DaemonSet pods, one per node the DaemonSet controller places them on (they are there before
   the workloads they serve; the default scheduler places them, so a workload of a higher
   priority takes room before them: it would preempt them, defaultpreemption
   `SelectVictimsOnNode` evicts any pod of a lower priority);
2. every other workload in file order, replica 0, 1, …: a pod bound with ``spec.nodeName`` on its
   node (the kubelet admits it only if the node still has room); any other pod on the first
   node, in name order, that still has room for it (NodeResourcesFit ``fitsRequest`` against
   what the pods before it requested), taking one node per replica in turn so a workload's
   replicas spread (as the default topology spreading does), never a second replica in a
   topology domain its required pod anti-affinity already holds (per term: a node without the
   term's key is in no domain of it, and takes any number of replicas as far as the term goes),
   and only into a domain its DoNotSchedule topology spread allows (`_place_spread`).

Which node a replica takes is this checker's choice (kube-scheduler scores the nodes and breaks
ties at random); how many replicas run where the nodes are alike is not. A replica that finds no
node stays Pending, and its message is what the scheduler writes then: the static reasons of the
nodes it can never use, the ``Insufficient …`` of the nodes whose room the other pods took (not
unresolvable: preemption looks there and finds "No preemption victims found for incoming pod", as
every pod placed before it has at least its priority: SelectVictimsOnNode finds no pod of a lower
one), "node(s) didn't match pod topology spread constraints" on the nodes whose domain the skew
refuses (before the next filter), and "node(s) didn't match pod anti-affinity rules" on the nodes
with room in a domain its own replicas hold (InterPodAffinity, after both; not unresolvable
either). The message is the one of the replica's turn: pods of a lower priority placed after it, on
room it could not use, would make a later attempt read, for their nodes, what the node lacks
without them instead of "No preemption victims found" (not modelled). A workload whose priority is
not known (it names a PriorityClass neither in the repo nor built in, or writes a `spec.priority`
the plugin forbids) cannot be ordered: then every workload keeps the order above without priorities
(DaemonSets, then file order), as when all have one priority.

Resources are tracked where a node lists them (model/placement.py ``node_allocatable``); a pod
that requests nothing a node tracks takes none of its room, and a node that lists no ``pods``
holds any number of pods.

The simulation runs on one `Demand` per workload that takes room: everything it reads of the
workload (order, priority, pod count, eligible nodes, requests, anti-affinity domains, the
static reasons of the nodes it can never use), built from the model, or decoded from the
partition cache for the workloads a partial run did not read (engine/cache/partition.py): the
same demands give the same outcome whichever way they came.

So the outcome of every workload is a function of the demands, in the order they take room, and
of the nodes (their allocatable, the scheduler release that words the messages). The partition
cache keeps the outcomes of the last simulation with the digest of its demands encoded
canonically (`InputTables`, content-deduplicated, in that order) and of everything the nodes
come from (engine/cache/partition.py: the run's context and shared files); a partial run whose
demands encode to the same digest takes those outcomes instead of placing every pod again
(`replayed`: an edit that changes no workload's pods, requests or placement, such as an image
or a label). A replayed Occupancy knows each workload's outcome (`Replicas.outcome`: all a
finding says of it), not the nodes each pod took, which no `check` reports.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from fractions import Fraction
from itertools import compress, count, repeat
from operator import is_
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.k8s.resources import is_extended
from gpudrv_check.k8s.scheduler import (
    NAMED_RESOURCES,
    Insufficient,
    counted,
    fit_error_message,
    fits_request,
)
from gpudrv_check.k8s.topologyspread import REASON_SPREAD, REASON_SPREAD_LABEL, Skew
from gpudrv_check.model.placement import Placement, Verdict
from gpudrv_check.model.spread import (
    DomainCache,
    SpreadPlan,
    namespace_labels,
    own_anti_affinity,
    spread_plan,
)
from gpudrv_check.model.workload import Workload, cron_job_pods
from gpudrv_check.nvidia.device_plugin import PREFIX as NVIDIA_PREFIX

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

#: InterPodAffinity's reason for a node whose domain holds a pod the incoming pod's required
#: anti-affinity selects (filtering.go ErrReasonAntiAffinityRulesNotMatch, Unschedulable)
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
_REFUSED = lazy_compile(r"(?:: |, )(\d+) " + re.escape(REASON_ANTI_AFFINITY) + r"[,.]")

#: a node's topology pairs (key, value), one per self anti-affinity term key it carries
Pairs = tuple[tuple[str, str], ...]

#: the key of a simulation's inputs, from its demands as stored (tables, records in order):
#: the partition cache's digest of them and of what the nodes come from (`Plan.inputs_key`)
InputsKey = Callable[["InputTables", list[tuple]], str]


#: the pods of one workload the model counts (`pod_count`): the simulation places them one at a
#: time and the rehearsal evicts them one at a time, and a count the API server takes (an
#: int32) can be two billion, which took hours and tens of gigabytes; a million is more than a
#: cluster of 9,000 nodes holds at the kubelet's default of 110 pods each, so the ones past it
#: could only stay Pending (a workload asking for more is said to have a million pods)
MAX_SIMULATED_PODS = 1_000_000


def pod_count(workload: Workload, eligible: int) -> int:
    """Pods the workload has while it runs (a Job, each Job of a CronJob: parallelism capped
    by completions, none while suspended; a DaemonSet: one per node), at most
    MAX_SIMULATED_PODS: what the capacity simulation, the budgets and the rehearsal count."""
    return min(_pod_count(workload, eligible), MAX_SIMULATED_PODS)


def _pod_count(workload: Workload, eligible: int) -> int:
    if workload.api_rejects or workload.template_only:
        return 0  # the API server refuses the object, or pods come from the objects using it
    if workload.owner_kind:
        return workload.replicas or 0
    kind = workload.kind
    if kind == "DaemonSet":
        return eligible
    if kind == "CronJob":
        count = cron_job_pods(workload.manifest)
        return 1 if count is None else count
    if kind == "Job":
        return workload.replicas if workload.replicas is not None else 1
    return workload.replicas or 0


@record(eq=False)
class Nodes:
    """What one constraint set allows: the nodes it may use, in node order, and the static
    reasons of the nodes it can never use, counted (one entry per constraint set)."""

    eligible: tuple[str, ...]
    static: Counter[str]


@record(eq=False)
class Demand:
    """All the simulation needs of one workload (see the module docstring), built from the
    model (`workload` set) or from the partition cache (engine/cache/partition.py)."""

    order: tuple[str, int, int]  # file, document, item: the order pods take room in
    key: str  # names its outcome (`record_key`)
    daemonset: bool
    bound: bool  # spec.nodeName: the kubelet admits it on that node only if it fits
    count: int  # pods
    nodes: Nodes
    requests: dict[str, Fraction]  # one pod's (a bound pod's: those its node can admit)
    #: node -> its topology pairs (key, value) of the self anti-affinity terms whose key it
    #: carries (model/spread.py `own_anti_affinity`); a node without any is not in it
    domains: dict[str, Pairs] | None
    preemption: str | None  # spec.preemptionPolicy
    pods: str  # its pods' name without the index (`pod_name`)
    rid: int  # its requests' number in the Occupancy that built it (`intern_requests`)
    workload: Workload | None = None
    #: its DoNotSchedule topology spread (model/spread.py `spread_plan`), if any
    spread: SpreadPlan | None = None
    #: its pods' priority (model/admission.py `pod_priority`); None: not known
    priority: int | None = 0


@record
class Replicas:
    """Where one workload's pods run. The findings read of it only what `outcome` holds (the
    partition cache compares that, engine/cache/partition.py): not the nodes' names."""

    workload: Workload | None
    nodes: list[str | None] = field(default_factory=list)  # per replica; None: Pending
    message: str = ""  # the scheduler's message for the first Pending replica
    short: tuple[str, ...] = ()  # resources the Pending replica found taken on some node
    prefix: str = ""  # its pods' name without the index

    @property
    def placed(self) -> int:
        return sum(1 for n in self.nodes if n is not None)

    @property
    def pending(self) -> list[int]:
        # without a Python step per pod: a DaemonSet's record holds one entry per node (8,000
        # in the 40k corpus), and its outcome is asked for the cache and its memo
        return list(compress(count(), map(is_, self.nodes, repeat(None))))

    def pod_name(self, index: int) -> str:
        return f"{self.prefix}{index}"

    @property
    def outcome(self) -> tuple:
        """What a finding may say of it (marshal-able): pods, which are Pending, why."""
        return (len(self.nodes), tuple(self.pending), self.message, self.short)


class Occupancy:
    """The repo's pods over the nodes' allocatable, computed once (see the module docstring).
    `cached`: the stored inputs of workloads the run did not read (`decode_inputs`)."""

    def __init__(
        self,
        repo: Repo,
        cached: Any = None,
        memo: Any = None,
        known: Any = None,
        same: Callable[[list[Demand]], Any] | None = None,
    ) -> None:
        """`memo`: (the key of a simulation's inputs, the stored `memo_value` or None) when a
        partial run may take the last simulation's outcomes (see the module doc). `known`: the
        last simulation's outcomes by `Demand.key` when this run's inputs are known to be its
        inputs (engine/cache/partition.py `Plan.known_outcomes`): the model's own demands take
        theirs, the cached ones are not even decoded (InputsError: one has none that fits).
        `same`: given the model's demands, those outcomes when the demands are known to be
        the stored ones (`Plan.outcomes_if_same`), else None; taken as `known` when each of
        the model's demands finds its outcome there (`same_as_stored`)."""
        self.placement: Placement = repo.placement
        self._alloc = {n.name: self.placement.allocatable(n) for n in self.placement.nodes}
        self.used: dict[str, dict[str, Fraction]] = {n: {} for n in self._alloc}
        self.pods: dict[str, int] = {n: 0 for n in self._alloc}
        self.holders: dict[str, list[str]] = {n: [] for n in self._alloc}
        self._full: dict[str, set[str]] = {}  # resource -> nodes with none of it left
        self._replicas: dict[int, Replicas] = {}  # by id(workload), of the model's workloads
        self.demands: list[Demand] = []
        self.outcomes: dict[str, Replicas] = {}  # by Demand.key
        # Memos (a node's room only ever shrinks as pods take it, so what did not fit stays so):
        # per distinct requests, per node, (the node's version, what it lacks); a node's version
        # counts the pods put on it
        self._request_ids: dict[tuple, int] = {}
        self._requests: list[dict[str, Fraction]] = []  # by request id: one dict per value
        self._fits: dict[int, dict[str, tuple[int, list[Insufficient]]]] = {}
        self._version: dict[str, int] = {n: 0 for n in self._alloc}
        # (nodes, requests) for which no node had room: no later replica finds any
        self._hopeless: set[tuple[int, int]] = set()
        # per (nodes, requests): for each index of the eligible nodes, the next index whose
        # node may still have room (see _next)
        self._open: dict[tuple[int, int], list[int]] = {}
        # per (nodes, requests): what their usable nodes lack, and per node the ones to tell
        # when it is given a pod
        self._lacking: dict[tuple[int, int], _Lacking] = {}
        self._watchers: dict[str, list[_Lacking]] = {}
        self._tracked_memo: dict[tuple[int, int], bool] = {}
        # per eligible tuple (by id, kept): the distinct allocatables of its nodes (`_tracks`)
        self._offered: dict[int, tuple[tuple[str, ...], list[Mapping[str, Fraction]]]] = {}
        # per verdicts of the placement (it keeps them: the id is theirs) and per stored
        # table entry: one Nodes, so the memos above see one constraint set once
        self._nodes: dict[int, tuple[Any, Nodes]] = {}
        self._domain_cache: DomainCache = {}
        self._domain_maps: dict[tuple[int, ...], tuple[Any, dict[str, Pairs] | None]] = {}
        # nodes the inventory gives no allocatable for that are no GPU nodes: nothing is known
        # of what they offer but that it holds none of NVIDIA's resources (no device plugin
        # runs there; GPU012 reads them so), which the scheduler finds short at once
        self._gpuless = {
            n.name for n in self.placement.nodes if self._alloc[n.name] is None and not n.is_gpu
        }
        self._gpu_nodes: dict[int, tuple[Nodes, Nodes]] = {}
        self._encoded: tuple[InputTables, list[tuple]] | None = None
        #: the outcomes were taken as `known` from `same`: the model's demands are the stored
        #: ones, and only they are here (the engine stores the cached inputs as they were)
        self.same_as_stored = False
        demands = self._fresh(repo)
        if known is None and same is not None:
            demands.sort(key=_demand_order)
            found = same(demands)
            if found is not None and all(
                _replayed(d, found.get(d.key)) is not None for d in demands
            ):
                known = found
                self.same_as_stored = True
        if known is not None:
            demands.sort(key=_demand_order)
            self.demands = demands
            self.replayed = True  # as `_replay` leaves it: no pod placed, every outcome known
            for demand in demands:
                record = _replayed(demand, known.get(demand.key))
                if record is None:
                    raise InputsError("an outcome the last simulation does not hold")
                self.outcomes[demand.key] = record
                if demand.workload is not None:
                    self._replicas[id(demand.workload)] = record
            return
        if cached is not None:
            demands.extend(decode_inputs(cached, self))
            if len({d.key for d in demands}) != len(demands):
                raise InputsError("two workloads of one key")
        demands.sort(key=_demand_order)  # stable: a file's objects stay in their order
        self.demands = demands
        #: the outcomes were taken from the last simulation of the same demands: no pod was
        #: placed (`used`, `pods` and `holders` are empty, `Replicas.nodes` names no node)
        self.replayed = memo is not None and self._replay(*memo)
        if self.replayed:
            return
        for demand in _placing_order(demands):
            self._place(demand)

    def records(self) -> dict[str, tuple]:
        """The outcome per workload (`Replicas.outcome`), by `Demand.key`."""
        return {key: r.outcome for key, r in self.outcomes.items()}

    def encoded(self) -> tuple[InputTables, list[tuple]]:
        """The demands as stored records, in the order they take room (made once)."""
        if self._encoded is None:
            tables = InputTables()
            self._encoded = (tables, [tables.record(d) for d in self.demands])
        return self._encoded

    def memo_value(self, inputs_key: InputsKey) -> tuple[str, dict[str, tuple]]:
        """What a later run with the same inputs may take (`_replay`): their key (`inputs_key`
        of the encoded demands, which adds what the nodes come from), and the outcome of every
        workload (marshal-able)."""
        return (inputs_key(*self.encoded()), self.records())

    def _replay(self, inputs_key: InputsKey, stored: Any) -> bool:
        """Take every outcome from `stored` (a `memo_value`) when it was made from the same
        inputs and holds a well-formed outcome for each demand; else False (simulate)."""
        if not (
            isinstance(stored, tuple)
            and len(stored) == 2
            and isinstance(stored[0], str)
            and isinstance(stored[1], dict)
        ):
            return False
        known, outcomes = stored
        if known != inputs_key(*self.encoded()):
            return False
        made = []
        for demand in self.demands:
            record = _replayed(demand, outcomes.get(demand.key))
            if record is None:
                return False
            made.append((demand, record))
        for demand, record in made:
            self.outcomes[demand.key] = record
            if demand.workload is not None:
                self._replicas[id(demand.workload)] = record
        return True

    def replicas(self, workload: Workload) -> Replicas | None:
        """Where its pods run; None when it has no pods or no node could ever take one."""
        return self._replicas.get(id(workload))

    # --- what the simulation reads of each workload -----------------------------------------
    def _fresh(self, repo: Repo) -> list[Demand]:
        from gpudrv_check.model.kueue import never_admitted

        namespaces = namespace_labels(repo)
        # Kueue never admits them: a Job stays suspended, pods keep the scheduling gate; they
        # take no room (GPU010 says why)
        held = never_admitted(repo)
        out = []
        for workload in repo.workloads:
            if held and id(workload) in held:
                continue
            demand = self._demand(repo, workload, namespaces)
            if demand is not None:
                out.append(demand)
        return out

    def _demand(self, repo: Repo, workload: Workload, namespaces: dict) -> Demand | None:
        placement = self.placement
        eligible = placement.eligible(workload)
        count = pod_count(workload, len(eligible))
        if not eligible or count <= 0:
            return None
        requests = placement.requests(workload)
        if workload.node_name is not None:
            # the kubelet drops the extended resources its node does not list
            allocatable = self._alloc[eligible[0].name] or {}
            requests = {r: v for r, v in requests.items() if r in allocatable or not is_extended(r)}
        rid, requests = self.intern_requests(requests)
        nodes = self._nodes_of(placement.verdicts(workload))
        if workload.node_name is None:
            nodes = self._offering_nvidia(nodes, requests)
            if not nodes.eligible:
                return None  # no node it may use offers them: GPU012 says so
        spread = spread_plan(workload, placement) if workload.node_name is None else None
        if not self._tracked(requests, nodes, rid) and (spread is None or spread.skew is None):
            return None  # nothing a node counts: every pod runs where the placement allows
        return Demand(
            _order(workload),
            record_key(workload),
            workload.kind == "DaemonSet",
            workload.node_name is not None,
            count,
            nodes,
            requests,
            self._domains(repo, workload, namespaces),
            workload.preemption_policy,
            pod_name(workload, 0)[:-1],
            rid,
            workload,
            spread,
            workload.priority,
        )

    def intern_requests(self, requests: Mapping[str, Fraction]) -> tuple[int, dict]:
        """A small number per distinct requests (the memos' key), and one dict of them."""
        key = tuple(sorted(requests.items()))
        rid = self._request_ids.setdefault(key, len(self._request_ids))
        if rid == len(self._requests):
            self._requests.append(dict(requests))
        return rid, self._requests[rid]

    def _nodes_of(self, verdicts: Mapping[str, Verdict]) -> Nodes:
        """The Nodes of one constraint set's verdicts (counted once per distinct verdict: the
        placement shares one Verdict among the nodes of a class)."""
        found = self._nodes.get(id(verdicts))
        if found is None:
            placement = self.placement
            eligible = tuple(compress(placement.names, placement.ok_bytes(verdicts)))
            static = placement.static_reasons(verdicts)
            found = self._nodes[id(verdicts)] = (verdicts, Nodes(eligible, static))
        return found[1]

    def _offering_nvidia(self, nodes: Nodes, requests: Mapping[str, Fraction]) -> Nodes:
        """`nodes` without the GPU-less nodes of unknown allocatable (`_gpuless`) when the pod
        asks for one of NVIDIA's resources: those nodes lack it from the start, as a static
        reason (`Insufficient nvidia.com/gpu`; the scheduler's preemption finds nothing to
        gain there), so the replicas the GPU nodes have no room for stay Pending instead of
        landing on a node without GPUs. Per Nodes (their verdicts fix the requests)."""
        wanted = {r: v for r, v in requests.items() if r.startswith(NVIDIA_PREFIX)}
        if not wanted or not self._gpuless:
            return nodes
        found = self._gpu_nodes.get(id(nodes))
        if found is None:
            dropped = sum(1 for n in nodes.eligible if n in self._gpuless)
            kept = nodes
            if dropped:
                static = Counter(nodes.static)
                for lack in fits_request(wanted, {}):
                    static[lack.reason] += dropped
                eligible = tuple(n for n in nodes.eligible if n not in self._gpuless)
                kept = Nodes(eligible, static)
            found = self._gpu_nodes[id(nodes)] = (nodes, kept)  # holds `nodes`: its id stays
        return found[1]

    def _domains(self, repo: Repo, workload: Workload, namespaces: dict) -> dict[str, Pairs] | None:
        """Node → its topology pairs of the workload's self anti-affinity terms (one per
        distinct key it carries, in the terms' order); None when no eligible node carries a
        key of them. A node is refused a replica when one of its pairs is held by another
        (filtering.go `satisfyPodAntiAffinity` over the topology pairs' counts)."""
        own = own_anti_affinity(repo, workload, namespaces, self._domain_cache)
        if own is None:
            return None
        keyed = {d.topology_key: d for d in own.domains if d.count}  # a key once, in order
        ids = tuple(map(id, keyed.values()))  # the domains are the cache's: kept alive
        found = self._domain_maps.get(ids)
        if found is None:
            mapping: dict[str, Pairs] = {}
            for key, domains in keyed.items():
                for value, nodes in domains.by_value.items():
                    pair = (key, value)
                    for n in nodes:
                        mapping[n] = (*mapping.get(n, ()), pair)
            found = self._domain_maps[ids] = (tuple(keyed.values()), mapping or None)
        return found[1]

    # --- placing ----------------------------------------------------------------------------
    def _tracked(self, requests: Mapping[str, Fraction], nodes: Nodes, rid: int) -> bool:
        """Whether any of the nodes keeps count of something one pod takes."""
        key = (id(nodes), rid)  # both kept while the Occupancy lives: the ids are theirs
        known = self._tracked_memo.get(key)
        if known is None:
            known = self._tracked_memo[key] = self._tracks(requests, nodes.eligible)
        return known

    def _tracks(self, requests: Mapping[str, Fraction], nodes: tuple[str, ...]) -> bool:
        # each distinct allocatable once (nodes of equal facts share one, model/placement.py),
        # found once per node list (its constraint sets ask it of each of their requests)
        found = self._offered.get(id(nodes))
        if found is None or found[0] is not nodes:
            distinct = {id(a): a for a in map(self._alloc.__getitem__, nodes) if a}
            found = self._offered[id(nodes)] = (nodes, list(distinct.values()))
        for allocatable in found[1]:
            if "pods" in allocatable or any(r in allocatable for r in requests):
                return True
        return False

    def _place(self, demand: Demand) -> None:
        record = Replicas(demand.workload, prefix=demand.pods)
        rid = demand.rid
        eligible = demand.nodes.eligible
        if demand.daemonset:
            record.nodes = [self._take(n, demand, i, rid) for i, n in enumerate(eligible)]
        elif demand.spread is not None and demand.spread.skew is not None:
            self._place_spread(demand, record, rid)
        else:
            held: set[tuple[str, str]] = set()
            cursor = 0
            domain_of = demand.domains
            for index in range(demand.count):
                node, cursor = self._next(demand, cursor, held, rid)
                if node is not None:
                    self._take(node, demand, index, rid)
                    if domain_of is not None:
                        held.update(domain_of.get(node, ()))
                record.nodes.append(node)
        if record.pending and not demand.daemonset:
            record.message, record.short = self._pending_message(demand, record, rid)
        self.outcomes[demand.key] = record
        if demand.workload is not None:
            self._replicas[id(demand.workload)] = record

    def _place_spread(self, demand: Demand, record: Replicas, rid: int) -> None:
        """`_place` for a workload whose own pods a DoNotSchedule spread constraint counts:
        each replica on a node with room whose domain the skew allows (k8s/topologyspread.py
        `Skew`), the one holding the fewest of its pods (the first from the cursor among
        them), as the scheduler's least-allocated score spreads them over alike nodes. How
        many run does not depend on that choice: a domain with room that holds the fewest
        pods always takes one more, so the replicas stop only once each domain holds all it
        has room for or maxSkew over the fewest any domain holds, whichever replica went
        where."""
        held: set[tuple[str, str]] = set()
        cursor = 0
        domain_of = demand.domains
        skew = _skew(demand)  # `_place` sends a demand with a counting constraint only
        assert demand.spread is not None
        values = demand.spread.values or {}
        own: dict[str, int] = {}
        for index in range(demand.count):
            node, cursor = self._next_spread(demand, cursor, held, rid, skew, own, values)
            if node is not None:
                self._take(node, demand, index, rid)
                if domain_of is not None:
                    held.update(domain_of.get(node, ()))
                value = values[node]
                skew.counts[value] = skew.counts.get(value, 0) + 1
                own[node] = own.get(node, 0) + 1
            record.nodes.append(node)

    def _scan(
        self, demand: Demand, key: tuple[int, int]
    ) -> tuple[list[set[str]], tuple[str, ...], list[int]]:
        """What a scan for a node reads: the sets of nodes full for one of the requests (or for
        pods), the eligible nodes, and the next-open pointers of these nodes and requests
        (index len(eligible): none left), made on the first scan."""
        fulls = [f for f in (self._full.get(r) for r in (*demand.requests, "pods")) if f]
        eligible = demand.nodes.eligible
        open_ = self._open.get(key)
        if open_ is None:
            open_ = self._open[key] = list(range(len(eligible) + 1))
        return fulls, eligible, open_

    def _next_spread(
        self,
        demand: Demand,
        cursor: int,
        held: set[tuple[str, str]],
        rid: int,
        skew: Skew,
        own: dict[str, int],
        values: Mapping[str, str],
    ) -> tuple[str | None, int]:
        """`_next` with the spread filter, taking the allowed node with room that holds the
        fewest of the workload's pods (`own`): a node the skew refuses now is passed over for
        this replica only (a later one may find its domain allowed). `values`: each node's
        value of the constraint's key."""
        key = (id(demand.nodes), rid)
        if key in self._hopeless:
            return None, cursor
        requests, domain_of = demand.requests, demand.domains
        fulls, eligible, open_ = self._scan(demand, key)
        total = len(eligible)
        minimum = skew.minimum()
        refused = False
        short = self._short
        best: tuple[int, int] | None = None  # (pods of it there, index) of the node to take
        for start, stop in ((cursor, total), (0, cursor)):
            at = _next_open(open_, start)
            while at < stop:
                node = eligible[at]
                if any(node in full for full in fulls) or short(node, requests, rid):
                    open_[at] = at + 1  # never room again for these requests
                elif not skew.allows(values[node], minimum) or (
                    domain_of is not None and not held.isdisjoint(domain_of.get(node, ()))
                ):
                    refused = True
                else:
                    there = own.get(node, 0)
                    if there == 0:
                        return node, (at + 1) % total
                    if best is None or there < best[0]:
                        best = (there, at)
                at = _next_open(open_, at + 1)
        if best is not None:
            return eligible[best[1]], (best[1] + 1) % total
        if not refused:  # no node has room, whatever the filters after NodeResourcesFit say
            self._hopeless.add(key)
        return None, cursor

    def _next(
        self, demand: Demand, cursor: int, held: set[tuple[str, str]], rid: int
    ) -> tuple[str | None, int]:
        """The first node from ``cursor`` on (wrapping) with room; and where to start next.

        A node that is full for one of the requests, or lacks room for one pod of them, stays
        so for the rest of the run (pods are only ever added), so it is passed over for good
        (`_open`: next-open pointers per nodes and requests) instead of being looked at again
        by every later replica: the scan is the same, without the nodes it can never pick."""
        key = (id(demand.nodes), rid)
        if key in self._hopeless:
            return None, cursor
        requests, domain_of = demand.requests, demand.domains
        fulls, eligible, open_ = self._scan(demand, key)
        total = len(eligible)
        short = self._short
        for start, stop in ((cursor, total), (0, cursor)):
            at = _next_open(open_, start)
            while at < stop:
                node = eligible[at]
                if any(node in full for full in fulls) or short(node, requests, rid):
                    open_[at] = at + 1  # never room again for these requests
                elif domain_of is None or held.isdisjoint(domain_of.get(node, ())):
                    return node, (at + 1) % total
                at = _next_open(open_, at + 1)
        if domain_of is None or not held:  # no node has room, whatever its domains
            self._hopeless.add(key)
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

    def _take(self, node: str, demand: Demand, index: int, rid: int) -> str | None:
        """Put one pod on ``node`` (a DaemonSet pod or a bound pod is admitted only if it fits)."""
        requests = demand.requests
        if (demand.daemonset or demand.bound) and self._short(node, requests, rid):
            return None
        self._version[node] += 1
        for lacking in self._watchers.get(node, ()):
            lacking.changed[node] = None
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
        self.holders[node].append(f"{demand.pods}{index}")
        return node

    # --- what the scheduler says about a Pending replica ------------------------------------
    def _pending_message(
        self, demand: Demand, record: Replicas, rid: int
    ) -> tuple[str, tuple[str, ...]]:
        placement = self.placement
        nodes, requests, domain_of = demand.nodes, demand.requests, demand.domains
        total = len(placement.nodes)
        if demand.spread is not None:
            return self._spread_message(demand, record, rid)
        if domain_of is None:  # what the nodes lack alone decides: kept up to date, not redone
            lacking = self._lacking_for(nodes, requests, rid)
            asked = (lacking.changes, demand.preemption)
            if lacking.said is not None and lacking.said[0] == asked:
                return lacking.said[1]  # nothing changed on these nodes since it was said
            postfilter = placement.release.postfilter(total, demand.preemption, lacking.victims)
            counts = nodes.static + lacking.reasons
            message = fit_error_message(total, counts, postfilter_message=postfilter)
            lacking.said = (asked, (message, lacking.short()))
            return lacking.said[1]
        held = _held(domain_of, record)
        reasons = Counter(nodes.static)  # the message counts reasons: their order does not matter
        no_victims = 0
        short: dict[str, None] = {}
        for node in nodes.eligible:
            taken = self._short(node, requests, rid)
            if taken:
                reasons.update(s.reason for s in taken)
                short.update((s.resource, None) for s in taken)
            elif not held.isdisjoint(domain_of.get(node, ())):
                reasons[REASON_ANTI_AFFINITY] += 1
            else:
                continue  # room left (a replica count past the bound nodes): not reported
            no_victims += 1
        postfilter = placement.release.postfilter(total, demand.preemption, no_victims)
        return fit_error_message(total, reasons, postfilter_message=postfilter), tuple(short)

    def _spread_message(
        self, demand: Demand, record: Replicas, rid: int
    ) -> tuple[str, tuple[str, ...]]:
        """`_pending_message` for a workload with DoNotSchedule topology spread: per node the
        first filter that fails, in the default plugin order (NodeResourcesFit, then
        PodTopologySpread, then InterPodAffinity), on the nodes as the replicas before left
        them. A node the missing-label filter removed reads what it lacks when other pods took
        its room, or the skew reason when a constraint before the one whose key it lacks
        refuses it (filtering.go Filter checks them in order)."""
        placement = self.placement
        spread = demand.spread
        assert spread is not None
        nodes, requests, domain_of = demand.nodes, demand.requests, demand.domains
        held = _held(domain_of, record)
        skew = None
        values = spread.values or {}
        if spread.skew is not None:
            skew = _skew(demand)
            for node in record.nodes:
                if node is not None:
                    skew.counts[values[node]] = skew.counts.get(values[node], 0) + 1
        minimum = skew.minimum() if skew is not None else 0
        reasons = Counter(nodes.static)
        no_victims = 0
        short: dict[str, None] = {}
        eligible = set(nodes.eligible)
        order = sorted((*nodes.eligible, *spread.label_nodes)) if spread.label_nodes else None
        wanted = None
        for node in nodes.eligible if order is None else order:
            taken = self._short(node, requests, rid)
            if node not in eligible:  # removed for a missing topology key
                if not taken and node in self._gpuless:
                    if wanted is None:
                        wanted = {r: v for r, v in requests.items() if r.startswith(NVIDIA_PREFIX)}
                    lacks = fits_request(wanted, {}) if wanted else []
                    if lacks:  # no NVIDIA resource there, before the label: static
                        reasons[REASON_SPREAD_LABEL] -= 1
                        reasons.update(s.reason for s in lacks)
                        short.update((s.resource, None) for s in lacks)
                    continue
                if taken:
                    reasons[REASON_SPREAD_LABEL] -= 1
                    reasons.update(s.reason for s in taken)
                    short.update((s.resource, None) for s in taken)
                elif skew is not None and node in values and not skew.allows(values[node], minimum):
                    reasons[REASON_SPREAD_LABEL] -= 1
                    reasons[REASON_SPREAD] += 1
                else:
                    continue  # unresolvable: the label is missing
                no_victims += 1
                continue
            if taken:
                reasons.update(s.reason for s in taken)
                short.update((s.resource, None) for s in taken)
            elif skew is not None and not skew.allows(values[node], minimum):
                reasons[REASON_SPREAD] += 1
            elif domain_of is not None and not held.isdisjoint(domain_of.get(node, ())):
                reasons[REASON_ANTI_AFFINITY] += 1
            else:
                continue  # room left: not reported
            no_victims += 1
        total = len(placement.nodes)
        postfilter = placement.release.postfilter(total, demand.preemption, no_victims)
        return fit_error_message(total, reasons, postfilter_message=postfilter), tuple(short)

    def _lacking_for(self, nodes: Nodes, requests: Mapping[str, Fraction], rid: int) -> _Lacking:
        """What the usable nodes lack for one pod, brought up to date with the pods taken
        since it was last asked for."""
        key = (id(nodes), rid)
        lacking = self._lacking.get(key)
        if lacking is None:
            usable = nodes.eligible
            lacking = self._lacking[key] = _Lacking({n: i for i, n in enumerate(usable)})
            for node in usable:
                self._watchers.setdefault(node, []).append(lacking)
            changed: Iterable[str] = usable
        else:
            changed, lacking.changed = lacking.changed, {}
        for node in changed:
            lacking.update(node, self._short(node, requests, rid))
        return lacking


def _held(domain_of: Mapping[str, Pairs] | None, record: Replicas) -> set[tuple[str, str]]:
    """The topology pairs the workload's placed replicas hold (none without a self term)."""
    if not domain_of:
        return set()
    return {pair for n in record.nodes if n is not None for pair in domain_of.get(n, ())}


def anti_affinity_refusals(message: str) -> int:
    """How many nodes with room a Pending replica's message says its own required pod
    anti-affinity refused (`REASON_ANTI_AFFINITY` in the histogram of FitError.Error): read
    from the message, which a replayed outcome keeps (`Replicas.outcome`)."""
    found = _REFUSED.search(message)
    return int(found.group(1)) if found else 0


def _skew(demand: Demand) -> Skew:
    """The skew state of a demand's counting constraint with no pod of it placed yet."""
    spread = demand.spread
    assert spread is not None and spread.skew is not None
    max_skew, min_domains, domains = spread.skew
    return Skew(max_skew, min_domains, dict.fromkeys(domains, 0))


def _next_open(open_: list[int], at: int) -> int:
    """The first index from ``at`` on not passed over for good (path-halving lookup)."""
    while open_[at] != at:
        open_[at] = open_[open_[at]]
        at = open_[at]
    return at


def _rank(resource: str) -> tuple:
    """Where fits_request lists a resource among those a node lacks (k8s/scheduler.py)."""
    if resource == "pods":
        return (0, "")
    if resource in NAMED_RESOURCES:
        return (1 + NAMED_RESOURCES.index(resource), "")
    return (9, resource)


@record
class _Lacking:
    """What some nodes (node -> its place in node order) lack for one pod, as the loop over
    them in `_pending_message` would count it. A node only ever lacks more as pods take its
    room, so each node's change is applied on its own: the reasons it gives, whether it is one
    more node with no room, and where each resource first shows (the order of `short`)."""

    index: dict[str, int]
    changed: dict[str, None] = field(default_factory=dict)  # nodes given a pod since asked
    per_node: dict[str, list[Insufficient]] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)  # resource -> first node lacking it
    victims: int = 0  # nodes lacking something
    changes: int = 0  # updates that changed what they lack
    #: ((changes, preemption policy), (message, short)) of the last Pending replica told
    said: tuple[tuple[int, Any], tuple[str, tuple[str, ...]]] | None = None

    def update(self, node: str, lacks: list[Insufficient]) -> None:
        old = self.per_node.get(node, [])
        if lacks is old or (not lacks and not old):
            return
        self.changes += 1
        if lacks and not old:
            self.victims += 1
        reasons = self.reasons  # (a Counter: what subtract and update do, without their calls)
        for s in old:
            reasons[s.reason] -= 1
        for s in lacks:
            reasons[s.reason] += 1
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


def record_key(workload: Workload) -> str:
    """Names one workload's outcome (its manifest's place and its identity)."""
    m = workload.manifest
    return f"{m.file}\0{m.doc}\0{m.item}\0{workload.key}\0{workload.role or ''}"


def _order(workload: Workload) -> tuple[str, int, int]:
    m = workload.manifest
    return (m.file, m.doc, -1 if m.item is None else m.item)


def _demand_order(demand: Demand) -> tuple[str, int, int]:
    return demand.order


def _placing_order(demands: list[Demand]) -> list[Demand]:
    """The demands (in file order) in the order they take room: by priority, highest first,
    DaemonSets first within one priority, then file order (see the module docstring); without
    priorities (all alike, or one not known) DaemonSets first, then file order."""
    priorities = {d.priority for d in demands}
    if len(priorities) > 1 and None not in priorities:
        return sorted(demands, key=_priority_order)  # stable: file order within a priority
    return [*(d for d in demands if d.daemonset), *(d for d in demands if not d.daemonset)]


def _priority_order(demand: Demand) -> tuple[int, bool]:
    assert demand.priority is not None
    return (-demand.priority, not demand.daemonset)


# --- the inputs as the partition cache stores them (engine/cache/partition.py) ---------------


class InputsError(ValueError):
    """Stored inputs that do not decode against this run's nodes: not used."""


def _replayed(demand: Demand, outcome: Any) -> Replicas | None:
    """The Replicas of a stored `Replicas.outcome` of this demand (its pods, which of them are
    Pending, the message and the resources found taken); None when it is not one. The pods
    that run name no node (a replayed simulation placed none)."""
    if not (isinstance(outcome, tuple) and len(outcome) == 4):
        return None
    count, pending, message, short = outcome
    expected = len(demand.nodes.eligible) if demand.daemonset else demand.count
    if count.__class__ is not int or count != expected or pending.__class__ is not tuple:
        return None
    if message.__class__ is not str or short.__class__ is not tuple:
        return None
    if not all(s.__class__ is str for s in short):
        return None
    previous = -1
    for index in pending:
        if index.__class__ is not int or not previous < index < count:
            return None  # increasing indices of the pods
        previous = index
    waiting = set(pending)
    nodes: list[str | None] = [None if i in waiting else "" for i in range(count)]
    return Replicas(demand.workload, nodes, message, short, demand.pods)


class InputTables:
    """Demands as marshal-able records, each distinct Nodes, requests and domains once in a
    table the records index (thousands of workloads share a few constraint sets)."""

    def __init__(self) -> None:
        self.nodes: list[tuple] = []
        self.requests: list[tuple] = []
        self.domains: list[tuple] = []
        self._index: dict[int, int] = {}  # id of a Nodes, requests or domains (all kept alive)
        # each table's entries by their encoding: values written alike share one entry, so
        # the same demands encode alike whichever objects they came as (`Plan.inputs_key`)
        self._by_value: dict[int, dict[tuple, int]] = {}

    def record(self, d: Demand) -> tuple:
        """One demand: its order, key, kind, count, table entries, preemption, pod names,
        priority (and its spread, if any)."""
        file, doc, item = d.order
        nodes = self._add(self.nodes, d.nodes, lambda n: (n.eligible, tuple(n.static.items())))
        requests = self._add(
            self.requests,
            d.requests,
            lambda r: tuple((k, v.numerator, v.denominator) for k, v in r.items()),
        )
        domains = -1 if d.domains is None else self._add(self.domains, d.domains, _items)
        made = (
            *(file, doc, item, d.key, d.daemonset, d.bound, d.count),
            *(nodes, requests, domains, d.preemption, d.pods, d.priority),
        )
        if d.spread is None:
            return made
        spread = d.spread
        values = None if spread.values is None else tuple(spread.values.items())
        return (*made, (spread.label_nodes, spread.skew, values))

    def _add(self, table: list[tuple], value: Any, encoded: Any) -> int:
        index = self._index.get(id(value))
        if index is None:
            text = encoded(value)
            entries = self._by_value.setdefault(id(table), {})
            index = entries.get(text)
            if index is None:
                index = entries[text] = len(table)
                table.append(text)
            self._index[id(value)] = index
        return index

    def stored(self) -> tuple[tuple, tuple, tuple]:
        return (tuple(self.nodes), tuple(self.requests), tuple(self.domains))


def _items(mapping: Mapping[str, Pairs]) -> tuple:
    return tuple(mapping.items())


def resolved_records(tables: Any, records: Any) -> list[tuple] | None:
    """Stored records (`InputTables.record`) with the table entries they index in place of the
    indexes: what two sets of tables encode alike compares equal. None when the tables or a
    record are not of the shape `InputTables` gives, or a record names an entry its tables
    do not have (a cached value is checked, never trusted)."""
    if not (_tuple(tables, 3) and all(isinstance(t, (tuple, list)) for t in tables)):
        return None
    if not isinstance(records, (tuple, list)):
        return None
    nodes_t, requests_t, domains_t = tables
    out = []
    for r in records:
        if not (isinstance(r, tuple) and len(r) in (13, 14)):
            return None
        nodes, requests, domains = r[7], r[8], r[9]
        if not (_within(nodes, nodes_t) and _within(requests, requests_t)):
            return None
        if not (domains == -1 and domains.__class__ is int or _within(domains, domains_t)):
            return None
        table_domains = None if domains == -1 else domains_t[domains]
        out.append((*r[:7], nodes_t[nodes], requests_t[requests], table_domains, *r[10:]))
    return out


def _within(index: Any, table: tuple | list) -> bool:
    return index.__class__ is int and 0 <= index < len(table)


def decode_inputs(value: Any, occupancy: Occupancy) -> list[Demand]:
    """The demands of stored (tables, records); InputsError when any is malformed or names a
    node this run does not have."""
    if not (_tuple(value, 2) and _tuple(value[0], 3)):
        raise InputsError("not (tables, records)")
    nodes_t, requests_t, domains_t = value[0]
    nodes = [_decode_nodes(v, occupancy._alloc) for v in _seq(nodes_t)]
    requests = [occupancy.intern_requests(_decode_requests(v)) for v in _seq(requests_t)]
    domains = [_decode_domains(v, occupancy._alloc) for v in _seq(domains_t)]
    return [_decode_demand(r, nodes, requests, domains) for r in _seq(value[1])]


def _tuple(value: Any, size: int) -> bool:
    return isinstance(value, tuple) and len(value) == size


def _seq(value: Any) -> tuple | list:
    if not isinstance(value, (tuple, list)):
        raise InputsError("not a sequence")
    return value


def _all_str(values: tuple) -> bool:
    return all(isinstance(v, str) for v in values)


def _int(value: Any, low: int) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
        raise InputsError("not a count")
    return value


def _decode_nodes(value: Any, alloc: Mapping[str, Any]) -> Nodes:
    if not _tuple(value, 2):
        raise InputsError("not (eligible, static)")
    eligible, static = _seq(value[0]), _seq(value[1])
    if not eligible or not all(isinstance(n, str) and n in alloc for n in eligible):
        raise InputsError("a node this run does not have")
    counts: Counter[str] = Counter()
    for entry in static:
        if not (_tuple(entry, 2) and isinstance(entry[0], str)):
            raise InputsError("not (reason, count)")
        counts[entry[0]] = _int(entry[1], 1)
    return Nodes(tuple(eligible), counts)


def _decode_requests(value: Any) -> dict[str, Fraction]:
    out = {}
    for entry in _seq(value):
        if not (_tuple(entry, 3) and isinstance(entry[0], str)):
            raise InputsError("not (resource, numerator, denominator)")
        numerator = entry[1]
        if not isinstance(numerator, int) or isinstance(numerator, bool):
            raise InputsError("not an amount")
        out[entry[0]] = Fraction(numerator, _int(entry[2], 1))
    return out


def _decode_domains(value: Any, alloc: Mapping[str, Any]) -> dict[str, Pairs]:
    out = {}
    for entry in _seq(value):
        if not (_tuple(entry, 2) and isinstance(entry[0], str) and entry[0] in alloc):
            raise InputsError("not (node, pairs)")
        pairs = entry[1]
        if not (
            isinstance(pairs, tuple)
            and pairs
            and all(_tuple(pair, 2) and _all_str(pair) for pair in pairs)
        ):
            raise InputsError("not topology pairs")
        out[entry[0]] = pairs
    return out


def _decode_demand(
    r: Any, nodes: list[Nodes], requests: list[tuple[int, dict]], domains: list[dict[str, Pairs]]
) -> Demand:
    if not (
        isinstance(r, tuple)
        and len(r) in (13, 14)
        and isinstance(r[0], str)
        and isinstance(r[3], str)
    ):
        raise InputsError("not a demand record")
    daemonset, bound, preemption, pods = r[4], r[5], r[10], r[11]
    if not (isinstance(daemonset, bool) and isinstance(bound, bool) and isinstance(pods, str)):
        raise InputsError("not a demand record")
    if preemption is not None and not isinstance(preemption, str):
        raise InputsError("not a preemption policy")
    priority = r[12]
    if priority is not None and priority.__class__ is not int:
        raise InputsError("not a priority")
    n, q, d = _int(r[7], 0), _int(r[8], 0), _int(r[9], -1)
    if n >= len(nodes) or q >= len(requests) or d >= len(domains):
        raise InputsError("no such table entry")
    group = nodes[n]
    count = _int(r[6], 1)
    if daemonset and count != len(group.eligible):
        raise InputsError("a DaemonSet has one pod per eligible node")
    rid, amounts = requests[q]
    order = (r[0], _int(r[1], 0), _int(r[2], -1))
    mapping = None if d < 0 else domains[d]  # a node without pairs: in no domain
    spread = _decode_spread(r[13], group) if len(r) == 14 else None
    return Demand(
        order,
        r[3],
        daemonset,
        bound,
        count,
        group,
        amounts,
        mapping,
        preemption,
        pods,
        rid,
        None,
        spread,
        priority,
    )


def _decode_spread(value: Any, group: Nodes) -> SpreadPlan:
    """A stored `SpreadPlan` (label nodes, skew, values): every node it may land on with its
    value when a constraint counts its pods."""
    if not _tuple(value, 3):
        raise InputsError("not (label nodes, skew, values)")
    label_nodes, skew, values = _seq(value[0]), value[1], value[2]
    if not _all_str(tuple(label_nodes)):
        raise InputsError("not node names")
    if skew is None:
        if values is not None:
            raise InputsError("values without a skew")
        return SpreadPlan(tuple(label_nodes))
    if not (_tuple(skew, 3) and _all_str(tuple(_seq(skew[2])))):
        raise InputsError("not (maxSkew, minDomains, domains)")
    mapping = {}
    for entry in _seq(values):
        if not (_tuple(entry, 2) and _all_str(entry)):
            raise InputsError("not (node, value)")
        mapping[entry[0]] = entry[1]
    if any(node not in mapping for node in group.eligible):
        raise InputsError("a node without its value")
    plan = (_int(skew[0], 1), _int(skew[1], 1), tuple(skew[2]))
    return SpreadPlan(tuple(label_nodes), plan, mapping)
