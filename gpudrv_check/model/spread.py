"""How far required pod anti-affinity lets a workload spread over the nodes it can land on.

For every workload with a fixed replica count and a required anti-affinity term that selects
its own pods, the term allows one replica per topology domain of the eligible nodes (see
k8s/podaffinity.py). The binding term is the one with the fewest domains. Nodes lacking the
topology key are not limited by the term, so a term is binding only when every eligible node
carries the key; `kubernetes.io/hostname`, which every kubelet sets, is read as the node's
name when an inventory leaves it out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.core.located import Path
from gpudrv_check.core.records import record
from gpudrv_check.k8s.podaffinity import (
    HOSTNAME_LABEL,
    AntiAffinityTerm,
    Domains,
    required_anti_affinity_terms,
    term_selects_own_pods,
    topology_domains,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.workload import Workload

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

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
    replicas: int
    eligible: tuple[str, ...]  # names of the eligible nodes

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


def workload_spread(
    repo: Repo,
    workload: Workload,
    namespaces: dict[str, dict[str, str]] | None = None,
    cache: DomainCache | None = None,
) -> Spread | None:
    """The anti-affinity cap of ``workload``, or None when no term limits its replicas.

    ``namespaces`` (`namespace_labels(repo)`) and ``cache`` are passed in when called for many
    workloads.
    """
    if workload.kind == "DaemonSet" or workload.replicas is None or workload.replicas < 2:
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
    best: Spread | None = None
    for term in terms:
        if not term_selects_own_pods(term, workload.namespace, workload.pod_labels, ns_labels):
            continue
        domains = eligible_domains(term.topology_key, eligible, cache)
        if domains.unconstrained:
            continue  # nodes without the key take any number of replicas
        spread = Spread(workload, term, domains, workload.replicas, tuple(n.name for n in eligible))
        if best is None or spread.capacity < best.capacity:
            best = spread
    return best
