"""How far required pod anti-affinity lets a workload spread over the nodes it can land on.

For every workload with a fixed pod count (replicas; a Job's or each Job of a CronJob's
parallelism, capped by completions) and a required anti-affinity term that selects its own
pods, the term allows one pod per topology domain of the eligible nodes (see
k8s/podaffinity.py). Whether a term selects its own pods reads the labels the pods have when
the API server creates them: the template's and those their controller adds
(`controller_labels`), with ``matchLabelKeys``/``mismatchLabelKeys`` merged from 1.31 on (the
scheduler release of GPU010's ``scheduler_version``). The binding term is the one with the
fewest domains. Nodes lacking the topology key are not limited by the term, so a term is
binding only when every eligible node carries the key; `kubernetes.io/hostname`, which every
kubelet sets, is read as the node's name when an inventory leaves it out.

`own_anti_affinity` keeps every such term with its domains (`OwnAntiAffinity`): what the
capacity simulation (model/occupancy.py) refuses a replica for, whether every eligible node
carries the key or not. kube-scheduler's InterPodAffinity filter (pkg/scheduler/framework/
plugins/interpodaffinity/filtering.go) counts the pods each term selects per topology pair
(the key, the value of their node) and refuses a node one of whose pairs holds such a pod
(`satisfyPodAntiAffinity`); a node without a term's key has no pair of it, so that term never
refuses it however many of the pods it holds (the workload's other terms may). A term some
eligible nodes lack the key of (`OwnAntiAffinity.mixed`) caps nothing by itself: the nodes
without the key take the replicas their room holds, the others one per domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.core.located import Path
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.nodeaffinity import required_node_affinity
from gpudrv_check.k8s.podaffinity import (
    HOSTNAME_LABEL,
    NO_SIBLING_LABELS,
    AntiAffinityTerm,
    Domains,
    SiblingLabels,
    controller_labels,
    required_anti_affinity_terms,
    term_selects_own_pods,
    topology_domains,
)
from gpudrv_check.k8s.topologyspread import FIELD as SPREAD_FIELD
from gpudrv_check.k8s.topologyspread import (
    SIBLINGS,
    SpreadConstraint,
    modelled,
    own_selection,
    spread_constraints,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import SPREAD_LABEL, Placement
from gpudrv_check.model.workload import Workload, cron_job_pods

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

#: MatchLabelKeysInPodAffinity: alpha (off) in 1.29 and 1.30, on by default from 1.31
#: (pkg/features/kube_features.go); off, the API server drops both fields
MATCH_LABEL_KEYS_SINCE = 31

REQUIRED_ANTI_AFFINITY: Path = (
    "affinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)


@record(frozen=True)
class Spread:
    """A workload whose replicas are capped by a self anti-affinity term."""

    workload: Workload
    term: AntiAffinityTerm
    domains: Domains
    replicas: int  # pods side by side (replicas; a Job's parallelism: `spread_pods`)
    eligible: tuple[str, ...]  # names of the eligible nodes
    #: the term's matchLabelKeys/mismatchLabelKeys the API server drops (before 1.31)
    keys_dropped: bool = False

    @property
    def capacity(self) -> int:
        """Replicas that can run at once: one per domain."""
        return self.domains.count

    @property
    def pending(self) -> int:
        """Replicas that stay Pending even with every eligible node up."""
        return max(self.replicas - self.capacity, 0)

    @property
    def topology_key_path(self) -> Path:
        """Path of the term's topologyKey inside the workload's manifest."""
        return (
            *self.workload.spec_path,
            *REQUIRED_ANTI_AFFINITY,
            self.term.index,
            "topologyKey",
        )

    @property
    def per_node(self) -> bool:
        return self.term.topology_key == HOSTNAME_LABEL

    def drained_domain_nodes(self, node: str) -> tuple[str, ...]:
        """The eligible nodes sharing ``node``'s domain (``node`` included); () if none."""
        value = self.domains.domain_of(node)
        return self.domains.by_value.get(value, ()) if value is not None else ()

    def strands_on_drain(self, node: str) -> bool:
        """Whether cordoning ``node`` leaves one more replica without a domain to run in."""
        return self.replicas >= self.capacity and self.drained_domain_nodes(node) == (node,)

    def single_node_domains(self) -> tuple[str, ...]:
        """Nodes that are alone in their domain: draining one of them removes a domain."""
        return tuple(nodes[0] for nodes in self.domains.by_value.values() if len(nodes) == 1)


def _topology_labels(node: Node) -> dict[str, str]:
    if HOSTNAME_LABEL in node.labels:
        return node.labels
    return {**node.labels, HOSTNAME_LABEL: node.name}


def namespace_labels(repo: Repo) -> dict[str, dict[str, str]]:
    """Labels of the Namespace objects in the repo, by name."""
    out: dict[str, dict[str, str]] = {}
    for manifest in repo.of_kind("Namespace"):
        if manifest.api_version == "v1" and manifest.name:
            labels = manifest.labels
            out[manifest.name] = {
                k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)
            }
    return out


DomainCache = dict[tuple[str, tuple[str, ...]], Domains]


def eligible_domains(
    topology_key: str, eligible: list[Node], cache: DomainCache | None = None
) -> Domains:
    """`topology_domains` of the eligible nodes, memoised: many workloads share a node set."""
    names = tuple(n.name for n in eligible)
    key = (topology_key, names)
    if cache is not None and key in cache:
        return cache[key]
    domains = topology_domains(
        topology_key,
        (
            (n.name, n.labels if topology_key != HOSTNAME_LABEL else _topology_labels(n))
            for n in eligible
        ),
    )
    if cache is not None:
        cache[key] = domains
    return domains


def spread_pods(workload: Workload) -> int | None:
    """The pods of ``workload`` that run side by side (what its anti-affinity spreads): its
    replicas, a Job's parallelism capped by completions, each Job of a CronJob's likewise
    (cronjob_controllerv2 starts them from its jobTemplate); None for a DaemonSet (one pod per
    node), a count that is not a whole number, or a workload without pods of its own."""
    if workload.api_rejects or workload.template_only or workload.kind == "DaemonSet":
        return None
    if workload.kind == "CronJob" and _core(workload):
        return cron_job_pods(workload.manifest)
    return workload.replicas


#: the API groups of the core controllers `controller_labels` knows
_CORE_GROUPS = frozenset(("apps", "extensions", "batch"))


def _core(workload: Workload) -> bool:
    """A core kind's own object, not a custom resource's pod template (nor a custom kind named
    like a core one, such as Volcano's Job)."""
    group = workload.manifest.api_version.rpartition("/")[0]
    return not workload.owner_kind and group in _CORE_GROUPS


def sibling_labels(workload: Workload) -> SiblingLabels:
    """The labels the controller of ``workload`` adds to its pods (k8s/podaffinity.py
    `controller_labels`); none for a pod template an operator's custom resource holds."""
    if not _core(workload):
        return NO_SIBLING_LABELS
    kind, manifest = workload.kind, workload.manifest
    if kind == "CronJob":
        job = manifest.get("spec", "jobTemplate", "spec")
        return controller_labels(kind, None, job if isinstance(job, MAPPINGS) else {})
    return controller_labels(kind, workload.name, manifest.get("spec"))


@record(frozen=True)
class OwnAntiAffinity:
    """The required anti-affinity terms of a workload that select its own pods, each with its
    domains over the eligible nodes (see the module docstring), in the order it lists them."""

    workload: Workload
    replicas: int  # pods side by side (`spread_pods`)
    eligible: tuple[str, ...]  # names of the eligible nodes
    terms: tuple[AntiAffinityTerm, ...]
    domains: tuple[Domains, ...]  # per term
    #: per term: its matchLabelKeys/mismatchLabelKeys the API server drops (before 1.31)
    dropped: tuple[bool, ...]

    def _fewest(self, mixed: bool) -> Spread | None:
        """The first term with the fewest domains among those every eligible node carries
        the key of (`mixed` False), or among those some eligible node lacks it of while
        another carries it (True)."""
        best: int | None = None
        for index, domains in enumerate(self.domains):
            if bool(domains.unconstrained) is not mixed or not domains.count:
                continue
            if best is None or domains.count < self.domains[best].count:
                best = index
        if best is None:
            return None
        return Spread(
            self.workload,
            self.terms[best],
            self.domains[best],
            self.replicas,
            self.eligible,
            keys_dropped=self.dropped[best],
        )

    @property
    def binding(self) -> Spread | None:
        """The term that caps the replicas at its domains, every eligible node carrying its
        key (`workload_spread`)."""
        return self._fewest(False)

    @property
    def mixed(self) -> Spread | None:
        """A term some eligible nodes lack the key of and others carry: its domains take one
        replica each, the nodes without the key any number (their room decides), so its
        `Spread.capacity` counts its domains only, and caps nothing by itself."""
        return self._fewest(True)


def own_anti_affinity(
    repo: Repo,
    workload: Workload,
    namespaces: dict[str, dict[str, str]] | None = None,
    cache: DomainCache | None = None,
) -> OwnAntiAffinity | None:
    """The required anti-affinity terms that select ``workload``'s own pods, with their
    domains; None when it has none, fewer than two pods side by side, or no eligible node.

    ``namespaces`` (`namespace_labels(repo)`) and ``cache`` are passed in when called for many
    workloads.
    """
    pods = spread_pods(workload)
    if pods is None or pods < 2:
        return None
    terms = required_anti_affinity_terms(workload.pod_spec)
    if not terms:
        return None
    if namespaces is None:
        namespaces = namespace_labels(repo)
    ns_labels = namespaces.get(workload.namespace)
    eligible = repo.placement.eligible(workload)
    if not eligible:
        return None  # nowhere to run at all: a placement problem, not a spread one
    siblings = sibling_labels(workload)
    label_keys = repo.placement.release.minor >= MATCH_LABEL_KEYS_SINCE
    own = [
        term
        for term in terms
        if term_selects_own_pods(
            term,
            workload.namespace,
            workload.pod_labels,
            ns_labels,
            siblings=siblings,
            label_keys=label_keys,
        )
    ]
    if not own:
        return None
    return OwnAntiAffinity(
        workload,
        pods,
        tuple(n.name for n in eligible),
        tuple(own),
        tuple(eligible_domains(term.topology_key, eligible, cache) for term in own),
        tuple(
            not label_keys and bool(term.match_label_keys or term.mismatch_label_keys)
            for term in own
        ),
    )


def workload_spread(
    repo: Repo,
    workload: Workload,
    namespaces: dict[str, dict[str, str]] | None = None,
    cache: DomainCache | None = None,
) -> Spread | None:
    """The anti-affinity cap of ``workload`` (`OwnAntiAffinity.binding`), or None when no term
    limits its replicas: nodes without a term's key take any number of them.

    ``namespaces`` (`namespace_labels(repo)`) and ``cache`` are passed in when called for many
    workloads.
    """
    own = own_anti_affinity(repo, workload, namespaces, cache)
    return None if own is None else own.binding


# --- topology spread that must hold (PodTopologySpread's filter) ------------------------------


@record(eq=False)
class SpreadPlan:
    """What the capacity simulation (model/occupancy.py) needs of a workload's DoNotSchedule
    topology spread constraints (k8s/topologyspread.py): the nodes the missing-label filter
    removed, which other pods may fill first (then NodeResourcesFit, which runs before, names
    what they lack), and the one constraint that counts the workload's own pods, if any."""

    label_nodes: tuple[str, ...]  # in node order
    #: the counting constraint: (maxSkew, minDomains, every domain of the nodes that count)
    skew: tuple[int, int, tuple[str, ...]] | None = None
    #: node -> its value of the counting constraint's key: every node it may land on, and the
    #: label nodes the Filter checks against it before it finds their missing key
    values: dict[str, str] | None = None


def _key_value(node: Node, key: str) -> str | None:
    value = node.labels.get(key)
    if value is None and key == HOSTNAME_LABEL:
        return node.name  # every kubelet sets it (see `_topology_labels`)
    return value


def counting_constraint(workload: Workload, minor: int) -> SpreadConstraint | None:
    """The DoNotSchedule constraint that counts the workload's own pods, when this check
    evaluates its constraints (`modelled`: at most one may count them) and one does; a
    DaemonSet's none (its pod's node affinity names its node: under nodeAffinityPolicy Honor
    the only domain is that node's, where none of its pods runs yet, so no skew fails)."""
    if workload.kind == "DaemonSet" or workload.node_name is not None:
        return None
    constraints = spread_constraints(workload.pod_spec, minor)
    if not modelled(constraints) or not constraints:
        return None
    siblings = sibling_labels(workload)
    counting = [
        c for c in constraints if own_selection(c, workload.pod_labels, siblings) == SIBLINGS
    ]
    # two (a per-pod matchLabelKeys key its pods lack): not evaluated, as `modelled` says
    return counting[0] if len(counting) == 1 else None


def spread_plan(workload: Workload, placement: Placement) -> SpreadPlan | None:
    """The workload's `SpreadPlan`; None when its DoNotSchedule constraints neither removed a
    node nor count its own pods (or it has none)."""
    spec = workload.pod_spec
    if not isinstance(spec, dict) or spec.get(SPREAD_FIELD) is None:
        return None
    verdicts = placement.verdicts(workload)
    label_nodes = tuple(name for name, v in verdicts.items() if v.reason == SPREAD_LABEL)
    counting = counting_constraint(workload, placement.release.minor)
    if counting is None:
        return SpreadPlan(label_nodes) if label_nodes else None
    constraints = spread_constraints(spec, placement.release.minor) or ()
    keys = [c.topology_key for c in constraints]
    affinity = required_node_affinity(spec)
    tolerations = spec.get("tolerations")
    domains: set[str] = set()
    values: dict[str, str] = {}
    eligible = {n.name for n in placement.eligible(workload)}
    labelled = set(label_nodes)
    for node in placement.nodes:
        found = [_key_value(node, key) for key in keys]
        value = _key_value(node, counting.topology_key)
        if node.name in eligible and value is not None:
            values[node.name] = value
        elif node.name in labelled and value is not None:
            # the Filter stops at the first constraint whose key the node lacks: this one is
            # checked first when it comes before that
            first_missing = next(i for i, v in enumerate(found) if v is None)
            if counting.index < constraints[first_missing].index:
                values[node.name] = value
        # calPreFilterState: a node with every key that the inclusion policies admit
        if value is None or any(v is None for v in found):
            continue
        if counting.honor_affinity and not affinity.matches(node.name, node.labels):
            continue
        if counting.honor_taints and placement.untolerated(node, tolerations):
            continue
        domains.add(value)
    skew = (counting.max_skew, counting.min_domains, tuple(sorted(domains)))
    return SpreadPlan(label_nodes, skew, values)
