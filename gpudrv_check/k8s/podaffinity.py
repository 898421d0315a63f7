"""Required pod anti-affinity: which pods a term keeps apart, and how many topology domains exist.

Mirrors kube-scheduler's InterPodAffinity filter (pkg/scheduler/framework/plugins/
interpodaffinity/filtering.go) and the term semantics of k8s.io/api core/v1 ``PodAffinityTerm``:

- A term applies to existing pods in its namespaces - ``namespaces`` plus those selected by
  ``namespaceSelector`` (``{}`` = every namespace); both absent means the pod's own namespace
  - whose labels match ``labelSelector`` (absent/null matches nothing, ``{}`` everything).
- ``matchLabelKeys`` adds ``key In (<the pod's own value>)`` and ``mismatchLabelKeys`` adds
  ``key NotIn (<the pod's own value>)`` for keys the pod carries; keys it lacks are ignored.
  So a term with a mismatch key the pod carries never selects the pod's own siblings.
- A node whose labels lack ``topologyKey`` is not constrained by the term at all
  (``satisfyPodAntiAffinity`` only checks nodes that carry the key): such nodes take any
  number of replicas.
- A term that selects the pod itself (self anti-affinity) allows at most one such pod per
  topology domain (distinct value of ``topologyKey``): a workload with N replicas needs N
  eligible domains, and replicas beyond that stay Pending.

Inputs are plain JSON-like data and may have wrong types; nothing here raises. A malformed
term (no ``topologyKey``, wrong types) is skipped: the API server would reject the pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field

from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import selector_matches

#: The label every kubelet sets to the node's hostname (one domain per node).
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The label the API server sets on every Namespace to its own name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@record(frozen=True)
class AntiAffinityTerm:
    """One ``requiredDuringSchedulingIgnoredDuringExecution`` anti-affinity term."""

    index: int  # position in the required list
    topology_key: str
    label_selector: object
    namespaces: tuple[str, ...] = ()
    namespace_selector: object = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@record(frozen=True)
class Domains:
    """Topology domains of a set of nodes for one key.

    ``by_value`` maps each value of the key to the nodes carrying it; ``unconstrained`` lists
    the nodes without the key, which the anti-affinity term does not limit.
    """

    topology_key: str
    by_value: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unconstrained: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.by_value)

    def domain_of(self, node: str) -> str | None:
        for value, nodes in self.by_value.items():
            if node in nodes:
                return value
        return None


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def required_anti_affinity_terms(pod_spec: object) -> list[AntiAffinityTerm]:
    """The well-formed required anti-affinity terms of a pod spec, in order."""
    if not isinstance(pod_spec, MAPPINGS):
        return []
    affinity = pod_spec.get("affinity")
    anti = affinity.get("podAntiAffinity") if isinstance(affinity, MAPPINGS) else None
    required = (
        anti.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(anti, MAPPINGS)
        else None
    )
    if not isinstance(required, list):
        return []
    terms = []
    for index, term in enumerate(required):
        if not isinstance(term, MAPPINGS):
            continue
        key = term.get("topologyKey")
        if not isinstance(key, str) or not key:
            continue
        terms.append(
            AntiAffinityTerm(
                index=index,
                topology_key=key,
                label_selector=term.get("labelSelector"),
                namespaces=_strings(term.get("namespaces")),
                namespace_selector=term.get("namespaceSelector"),
                match_label_keys=_strings(term.get("matchLabelKeys")),
                mismatch_label_keys=_strings(term.get("mismatchLabelKeys")),
            )
        )
    return terms


def term_namespace_matches(
    term: AntiAffinityTerm,
    pod_namespace: str,
    namespace: str,
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether the term of a pod in ``pod_namespace`` looks at pods in ``namespace``."""
    if not term.namespaces and term.namespace_selector is None:
        return namespace == pod_namespace
    if namespace in term.namespaces:
        return True
    if term.namespace_selector is None:
        return False
    labels = dict(namespace_labels or {})
    labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return selector_matches(term.namespace_selector, labels)


def term_selects_own_pods(
    term: AntiAffinityTerm,
    pod_namespace: str,
    pod_labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether the term keeps two pods of the same template apart (self anti-affinity)."""
    if not term_namespace_matches(term, pod_namespace, pod_namespace, namespace_labels):
        return False
    if any(key in pod_labels for key in term.mismatch_label_keys):
        return False  # key NotIn (own value) never matches a sibling with the same value
    # matchLabelKeys adds key In (own value): always true for a sibling
    return selector_matches(term.label_selector, pod_labels)


def topology_domains(topology_key: str, nodes: Iterable[tuple[str, Mapping[str, str]]]) -> Domains:
    """Group ``(name, labels)`` nodes by their value of ``topology_key``."""
    by_value: dict[str, list[str]] = {}
    unconstrained: list[str] = []
    for name, labels in nodes:
        value = labels.get(topology_key) if isinstance(labels, MAPPINGS) else None
        if isinstance(value, str):
            by_value.setdefault(value, []).append(name)
        else:
            unconstrained.append(name)
    return Domains(
        topology_key,
        {value: tuple(names) for value, names in sorted(by_value.items())},
        tuple(unconstrained),
    )
