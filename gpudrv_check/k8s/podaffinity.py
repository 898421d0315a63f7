"""Required pod anti-affinity: which pods a term keeps apart, and how many topology domains exist.

Mirrors kube-scheduler's InterPodAffinity filter (pkg/scheduler/framework/plugins/
interpodaffinity/filtering.go) and the term semantics of k8s.io/api core/v1 ``PodAffinityTerm``:

- A term applies to existing pods in its namespaces - ``namespaces`` plus those selected by
  ``namespaceSelector`` (``{}`` = every namespace); both absent means the pod's own namespace
  - whose labels match ``labelSelector`` (absent/null matches nothing, ``{}`` everything).
- ``matchLabelKeys`` adds ``key In (<the pod's own value>)`` and ``mismatchLabelKeys`` adds
  ``key NotIn (<the pod's own value>)`` for keys the pod carries; keys it lacks are ignored
  (the API server merges them into ``labelSelector`` when it creates the pod: pkg/registry/
  core/pod/strategy.go ``applyMatchLabelKeysAndMismatchLabelKeys``; not into a null selector).
  The pod carries the labels its controller adds to the template's (`SiblingLabels`): a
  Deployment's ``pod-template-hash``, a Job's ``job-name``, and on each StatefulSet pod or
  Indexed Job pod a value of its own (``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index``, ``batch.kubernetes.io/job-completion-index``). So a
  mismatch key the siblings share, or a match key with a value per pod, never selects the pod's
  own siblings. Before 1.31 (MatchLabelKeysInPodAffinity off by default, absent before 1.29)
  the API server drops both fields (pkg/api/pod/util.go
  ``dropDisabledMatchLabelKeysFieldInPodAffinity``): ``label_keys=False``.
- A node whose labels lack ``topologyKey`` is not constrained by the term at all
  (``satisfyPodAntiAffinity`` only checks nodes that carry the key, and a pod on such a node
  adds no topology pair of the term): such nodes take any number of replicas as far as this
  term goes (another term of the pod, on a key they carry, may still refuse them).
- A term that selects the pod itself (self anti-affinity) allows at most one such pod per
  topology domain (distinct value of ``topologyKey``): a workload with N replicas needs N
  eligible domains when every eligible node carries the key, and replicas beyond that stay
  Pending; with nodes lacking it, those take what their room holds besides.

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


#: a label value no pod spec can name (label values hold no ``<``): one the repo does not know
UNKNOWN_VALUE = "<set by the controller>"
#: the other pod's value of a label each pod of a template holds a value of its own for
OTHER_POD_VALUE = "<another pod's own>"


@record(frozen=True)
class SiblingLabels:
    """The labels a controller adds to every pod it creates from one template.

    ``shared``: the same value on every pod of the template (None: a value the repo does not
    know, such as a ``pod-template-hash``); ``per_pod``: keys each pod holds a value of its own
    for. ``template_wins``: the template's own value of a ``shared`` key is kept (the Job API
    adds its labels only when the template lacks them).
    """

    shared: Mapping[str, str | None] = field(default_factory=dict)
    per_pod: frozenset[str] = frozenset()
    template_wins: bool = False


NO_SIBLING_LABELS = SiblingLabels()

#: Deployment: the ReplicaSet's template gets the hash of the pod template (pkg/controller/
#: deployment/sync.go ``getNewReplicaSet``, ``DefaultDeploymentUniqueLabelKey``)
POD_TEMPLATE_HASH = "pod-template-hash"
#: StatefulSet: the revision (``setPodRevision``) and the pod's identity (pkg/controller/
#: statefulset/stateful_set_utils.go ``updateIdentity``; pod-index: PodIndexLabel, 1.28+)
CONTROLLER_REVISION_HASH = "controller-revision-hash"
STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
#: Job: pkg/registry/batch/job/strategy.go ``generateSelector`` (unless manualSelector), and
#: the completion index of an Indexed Job's pod (pkg/controller/job/indexed_job_utils.go)
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
JOB_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def controller_labels(kind: str, name: object, spec: object) -> SiblingLabels:
    """What the controller of ``kind`` adds to the pods of its template. ``spec``: the object's
    spec (a CronJob's: its ``jobTemplate.spec``); ``name``: the Job's name (None when it is
    not known, as for the Jobs a CronJob names after the schedule)."""
    if kind == "Deployment":
        return SiblingLabels({POD_TEMPLATE_HASH: None})
    if kind == "StatefulSet":
        return SiblingLabels(
            {CONTROLLER_REVISION_HASH: None}, frozenset((STATEFULSET_POD_NAME, POD_INDEX))
        )
    if kind in ("Job", "CronJob"):
        spec = spec if isinstance(spec, MAPPINGS) else {}
        per_pod = (
            frozenset((JOB_COMPLETION_INDEX,))
            if spec.get("completionMode") == "Indexed"
            else frozenset()
        )
        if spec.get("manualSelector") is True:
            return SiblingLabels({}, per_pod)
        job_name = name if isinstance(name, str) and name else None
        shared: dict[str, str | None] = dict.fromkeys(JOB_NAME_LABELS, job_name)
        shared.update(dict.fromkeys(JOB_UID_LABELS))
        return SiblingLabels(shared, per_pod, template_wins=True)
    return NO_SIBLING_LABELS


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
    # the API server sets the name label to the name, whatever the manifest says
    # (pkg/apis/core/v1/defaults.go SetDefaults_Namespace)
    labels = {**(namespace_labels or {}), NAMESPACE_NAME_LABEL: namespace}
    return selector_matches(term.namespace_selector, labels)


def sibling_pod_labels(
    template: Mapping[str, str],
    siblings: SiblingLabels = NO_SIBLING_LABELS,
    *,
    per_pod: bool = True,
) -> dict[str, str]:
    """The labels a pod of the template holds once its controller made it, as another pod
    or a selector sees them: the template's, the controller's shared ones (a value the repo
    cannot know reads `UNKNOWN_VALUE`; the template's own value kept where `template_wins`)
    and, with ``per_pod``, each per-pod key holding a value of its own (`OTHER_POD_VALUE`)."""
    labels = dict(template)
    for key, value in siblings.shared.items():
        if not (siblings.template_wins and key in template):
            labels[key] = UNKNOWN_VALUE if value is None else value
    if per_pod:
        labels.update(dict.fromkeys(siblings.per_pod, OTHER_POD_VALUE))
    return labels


def term_selects_own_pods(
    term: AntiAffinityTerm,
    pod_namespace: str,
    pod_labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None = None,
    *,
    siblings: SiblingLabels = NO_SIBLING_LABELS,
    label_keys: bool = True,
) -> bool:
    """Whether the term keeps two pods of the same template apart (self anti-affinity).

    ``pod_labels``: the template's labels; ``siblings``: what the controller adds to them;
    ``label_keys``: whether the API server applies ``matchLabelKeys``/``mismatchLabelKeys``.
    """
    if not term_namespace_matches(term, pod_namespace, pod_namespace, namespace_labels):
        return False
    if term.label_selector is None:
        return False  # null selects nothing, whatever keys are merged (strategy.go skips it)
    other = sibling_pod_labels(pod_labels, siblings)  # the other pod, as this one's term sees it
    if label_keys:
        for key in term.match_label_keys:
            if key in siblings.per_pod:
                return False  # key In (own value): a sibling holds another value
        for key in term.mismatch_label_keys:
            if key in other and key not in siblings.per_pod:
                return False  # key NotIn (own value): a sibling holds the same value
    return selector_matches(term.label_selector, other)


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
