"""Kueue: the node labels and tolerations of the ResourceFlavors a queued workload is admitted to.

Which queue (kubernetes-sigs/kueue pkg/controller/jobframework, default configuration:
``manageJobsWithoutQueueName: false``, the integrations of
config/components/manager/controller_manager_config.yaml):

- an object of an integrated kind (batch/v1 Job, v1 Pod, apps/v1 Deployment and StatefulSet,
  the ``kueue: true`` kinds of the workload table) names its LocalQueue with its own
  ``kueue.x-k8s.io/queue-name`` label (QueueNameForObject: the label only); a CronJob's Jobs
  carry the label of ``spec.jobTemplate.metadata``; the label of an object Kueue does not
  integrate (a PyTorchJob, a DaemonSet, the CronJob itself) does nothing;
- an integrated object without the label gets ``default`` when its namespace holds a LocalQueue
  named ``default`` (jobframework/defaults.go ApplyDefaultLocalQueue), outside the namespaces
  ``managedJobsNamespaceSelector`` leaves out by default (kube-system, kueue-system);
- else a queue-name label on the pod template reaches the pods, which the ``pod`` integration
  admits one by one (jobs/pod/pod_webhook.go Default, same namespaces left out).

The LocalQueue of that name in the workload's namespace names a ClusterQueue. Kueue admits
nothing through a LocalQueue or ClusterQueue whose ``stopPolicy`` is set (Hold, HoldAndDrain),
a ClusterQueue that names a ResourceFlavor that does not exist (cache/scheduler/clusterqueue.go
updateQueueStatus), or a ClusterQueue whose ``namespaceSelector`` does not select the namespace
(workload/resources.go ValidateAdmissibility; null selects nothing, ``{}`` everything). Every
resource a pod requests must be covered by a resource group (else "resource X unavailable in
ClusterQueue"); for each group the pod uses, the first flavor that fits is assigned
(scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets, checkFlavorForPodSets): its
NoSchedule/NoExecute ``nodeTaints`` tolerated by the pod's and the flavor's tolerations, the
pod's nodeSelector and required node affinity, cut to the flavor's label keys
(flavorSelector), matching its ``nodeLabels``, and no pod asking for more than the flavor's
``nominalQuota`` when the ClusterQueue has no cohort to borrow from (fitsResourceQuota: more
than the maximum capacity never fits). Other quota is not modelled: every flavor is taken to have
room. Kueue checks the template as written for a Job-like object, the pod (after the API
server's admission plugins) for the pod-based integrations. At admission the flavors'
``nodeLabels`` are merged into the pod's nodeSelector and their ``tolerations`` appended
(pkg/podset/podset.go FromAssignment, Merge).

Nothing is injected when Kueue would not admit the workload, or when an object the answer
depends on (the LocalQueue, ClusterQueue, a flavor) is not in the repo.

Kueue also suspends a queued object until admission and lifts ``suspend`` then, so for the
kinds its default configuration integrates (batch/job, and the table's ``kueue: true`` kinds)
a written ``suspend`` does not keep the pods away: model/workload.py (Job) and
model/workload_kinds.py (``count_pods``) read the object's own queue label the same way
(``kueue_queued``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from gpudrv_check.core.located import LMap, Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import selector_matches
from gpudrv_check.k8s.nodeaffinity import requirement_matches, selector_value
from gpudrv_check.k8s.quantity import quantity_value
from gpudrv_check.k8s.taints import first_untolerated_taint
from gpudrv_check.model.workload import Workload
from gpudrv_check.model.workload_kinds import QUEUE_LABEL

GROUP = "kueue.x-k8s.io"
#: constants.DefaultLocalQueueName
DEFAULT_QUEUE = "default"
#: the namespaces the default managedJobsNamespaceSelector leaves out (apis/config/v1beta2
#: defaults.go: kubernetes.io/metadata.name NotIn [kube-system, <kueue's namespace>])
UNMANAGED_NAMESPACES = frozenset(("kube-system", "kueue-system"))
#: apimachinery LabelMetadataName: the label the API server puts on every Namespace
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: the core kinds of the default integrations: batch/job, pod, deployment, statefulset
_CORE = {
    ("batch/v1", "Job"): False,
    ("v1", "Pod"): True,
    ("apps/v1", "Deployment"): True,
    ("apps/v1", "StatefulSet"): True,
}
#: integrations that admit pod groups through the pod integration: Kueue reads the pods
_POD_BASED = frozenset(("LeaderWorkerSet",))
_CRON_JOB_LABELS = ("spec", "jobTemplate", "metadata", "labels")


class Queue(NamedTuple):
    """The LocalQueue a workload goes to, and why."""

    name: str
    path: Path  # the key that sends it there (for findings)
    pod_based: bool  # Kueue reads the pod, not the template as written
    defaulted: bool  # the namespace's `default` LocalQueue, no label


def _spec(manifest: Manifest | None) -> Mapping[str, Any]:
    spec = manifest.get("spec") if manifest is not None else None
    return spec if isinstance(spec, MAPPINGS) else {}


def _label(labels: object) -> str | None:
    value = labels.get(QUEUE_LABEL) if isinstance(labels, MAPPINGS) else None
    return value if isinstance(value, str) and value else None


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _stopped(spec: Mapping[str, Any]) -> bool:
    policy = spec.get("stopPolicy")
    return policy is not None and policy != "None"


def _integrated(manifest: Manifest) -> bool | None:
    """Whether Kueue's default configuration integrates the kind: None when it does not,
    else whether it is pod-based."""
    core = _CORE.get((manifest.api_version, manifest.kind))
    if core is not None:
        return core
    if "/" not in manifest.api_version:
        return None
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    entry = builtin_kind_table().lookup(manifest.api_version, manifest.kind)
    if entry is None or not entry.kueue:
        return None
    return manifest.kind in _POD_BASED


def _selector_fits(labels: Mapping[str, str], spec: Mapping[str, Any]) -> bool:
    """flavorSelector: the nodeSelector and required node affinity cut to the flavor's label
    keys (a term left with no expression drops the affinity) match the flavor's labels."""
    selector = spec.get("nodeSelector")
    if isinstance(selector, MAPPINGS):
        for key, raw in selector.items():
            if isinstance(key, str) and key in labels and selector_value(raw) != labels[key]:
                return False
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, MAPPINGS) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node, MAPPINGS)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, MAPPINGS) else None
    kept: list[list[Any]] = []
    for term in terms if isinstance(terms, list) else []:
        found = term.get("matchExpressions") if isinstance(term, MAPPINGS) else None
        expressions = [
            e
            for e in (found if isinstance(found, list) else [])
            if isinstance(e, MAPPINGS) and isinstance(e.get("key"), str) and e["key"] in labels
        ]
        if not expressions:
            return True  # this term matches any flavor, and terms are ORed
        kept.append(expressions)
    if not kept:
        return True
    return any(all(requirement_matches(e, labels) for e in term) for term in kept)


class Kueue:
    def __init__(self, manifests: list[Manifest]) -> None:
        ours = [m for m in manifests if m.api_version.split("/", 1)[0] == GROUP and m.name]
        self.local = {(m.namespace or "default", m.name): m for m in ours if m.kind == "LocalQueue"}
        self.cluster = {m.name: m for m in ours if m.kind == "ClusterQueue"}
        self.flavors = {m.name: m for m in ours if m.kind == "ResourceFlavor"}
        self.namespaces = {
            m.name: m.labels for m in manifests if m.kind == "Namespace" and m.api_version == "v1"
        }

    # --- which queue ---------------------------------------------------------------------------

    def queue(self, workload: Workload) -> Queue | None:
        manifest = workload.manifest
        namespace = workload.namespace
        if manifest.kind == "CronJob" and manifest.api_version in ("batch/v1", "batch/v1beta1"):
            pod_based: bool | None = False  # its Jobs: the batch/job integration
            own = _label(manifest.get(*_CRON_JOB_LABELS))
            own_path: tuple = (*_CRON_JOB_LABELS, QUEUE_LABEL)
        else:
            pod_based = _integrated(manifest)
            own = _label(manifest.labels) if pod_based is not None else None
            own_path = ("metadata", "labels", QUEUE_LABEL)
        managed_namespace = namespace not in UNMANAGED_NAMESPACES
        # a bare Pod is the pod integration's, which leaves the unmanaged namespaces out
        if own is not None and (manifest.kind != "Pod" or managed_namespace):
            return Queue(own, own_path, bool(pod_based), False)
        if pod_based is not None and managed_namespace:
            if (namespace, DEFAULT_QUEUE) in self.local:
                key = "namespace" if manifest.namespace else "name"
                return Queue(DEFAULT_QUEUE, ("metadata", key), bool(pod_based), True)
        template = _label(workload.pod_labels)
        if template is not None and managed_namespace:
            labels_path = workload.labels_path or ("metadata", "labels")
            return Queue(template, (*labels_path, QUEUE_LABEL), True, False)
        return None

    def queue_of(self, workload: Workload) -> str | None:
        found = self.queue(workload)
        return found.name if found is not None else None

    # --- which flavors -------------------------------------------------------------------------

    def _namespace_selected(self, selector: object, namespace: str) -> bool:
        """The ClusterQueue's namespaceSelector selects the namespace; False also when the
        Namespace is not in the repo and the selector needs labels other than its name."""
        labels = dict(self.namespaces.get(namespace) or {})
        labels[NAMESPACE_NAME_LABEL] = namespace
        return selector_matches(selector, labels)

    def _cluster_queue(self, workload: Workload, queue: Queue) -> tuple[Manifest | None, str]:
        """The ClusterQueue that would admit the workload, else None and why not."""
        where = f"{workload.namespace}/{queue.name}"
        local = self.local.get((workload.namespace, queue.name))
        if local is None:
            return None, f"the repo holds no LocalQueue {where}"
        if _stopped(_spec(local)):
            return None, f"LocalQueue {where} has a stopPolicy: it admits nothing"
        target = _spec(local).get("clusterQueue")
        cq = self.cluster.get(target) if isinstance(target, str) else None
        if cq is None:
            return None, f"the repo holds no ClusterQueue {target} (LocalQueue {where})"
        spec = _spec(cq)
        if _stopped(spec):
            return None, f"ClusterQueue {cq.name} has a stopPolicy: it admits nothing"
        selector = spec.get("namespaceSelector")
        if not self._namespace_selected(selector, workload.namespace):
            if selector is None:
                return None, (
                    f"ClusterQueue {cq.name} has no namespaceSelector, which selects no "
                    "namespace (`{}` selects all)"
                )
            return None, (
                f"the namespaceSelector of ClusterQueue {cq.name} does not select namespace "
                f"{workload.namespace}"
            )
        return cq, ""

    @staticmethod
    def _requested(workload: Workload, covered: set[str]) -> dict[str, Fraction]:
        """What one pod asks Kueue for: its non-zero requests, and 1 `pods` when a resource
        group covers it (flavorassigner.go assignFlavors)."""
        wanted = {k: v for k, v in workload.requests.items() if v > 0}
        if "pods" in covered:
            wanted["pods"] = Fraction(1)
        return wanted

    @staticmethod
    def _quota_fits(
        entry: Mapping[str, Any], requested: Mapping[str, Fraction], cohort: bool
    ) -> bool:
        """fitsResourceQuota: without a cohort a flavor's capacity is its nominalQuota, and a
        pod asking for more never fits (with one, what it may borrow is not modelled)."""
        if cohort:
            return True
        for item in _list(entry.get("resources")):
            if not isinstance(item, MAPPINGS) or "nominalQuota" not in item:
                continue
            amount = requested.get(str(item.get("name")))
            quota, _ = quantity_value(item.get("nominalQuota"))
            if amount is not None and quota is not None and amount > quota:
                return False
        return True

    @staticmethod
    def _fits(flavor: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        """checkFlavorForPodSets: taints tolerated, labels matched."""
        taints = [t for t in _list(flavor.get("nodeTaints")) if isinstance(t, MAPPINGS)]
        tolerations = [*_list(spec.get("tolerations")), *_list(flavor.get("tolerations"))]
        if first_untolerated_taint(taints, tolerations) is not None:
            return False
        labels = flavor.get("nodeLabels")
        if not isinstance(labels, MAPPINGS):
            return True
        return _selector_fits({str(k): str(v) for k, v in labels.items()}, spec)

    def assign(
        self, workload: Workload, queue: Queue, spec: Mapping[str, Any]
    ) -> tuple[list[str], str]:
        """The flavors Kueue assigns, one per resource group the pod uses, in the ClusterQueue's
        order; else [] and why none (Kueue does not admit it, or the repo does not say)."""
        cq, why = self._cluster_queue(workload, queue)
        if cq is None:
            return [], why
        groups = [g for g in _list(_spec(cq).get("resourceGroups")) if isinstance(g, MAPPINGS)]
        entries = [[f for f in _list(g.get("flavors")) if isinstance(f, MAPPINGS)] for g in groups]
        named = [f.get("name") for group in entries for f in group]
        missing = sorted({str(n) for n in named if not isinstance(n, str) or n not in self.flavors})
        if missing:  # the ClusterQueue is inactive (or the repo partial)
            return (
                [],
                f"the repo holds no ResourceFlavor {', '.join(missing)} (ClusterQueue {cq.name})",
            )
        covers = [
            {r for r in _list(g.get("coveredResources")) if isinstance(r, str)} for g in groups
        ]
        requested = self._requested(workload, set().union(*covers))
        used: set[int] = set()
        for resource in sorted(requested):
            index = next((i for i, c in enumerate(covers) if resource in c), None)
            if index is None:
                return [], f"resource {resource} unavailable in ClusterQueue {cq.name}"
            used.add(index)
        cohort = bool(_spec(cq).get("cohort") or _spec(cq).get("cohortName"))
        chosen: list[str] = []
        for index in sorted(used):
            wanted = {k: v for k, v in requested.items() if k in covers[index]}
            found = next(
                (
                    name
                    for entry in entries[index]
                    if self._fits(_spec(self.flavors[name := str(entry["name"])]), spec)
                    and self._quota_fits(entry, wanted, cohort)
                ),
                None,
            )
            if found is None:
                names = ", ".join(str(f["name"]) for f in entries[index]) or "none"
                return [], (
                    f"no flavor of ClusterQueue {cq.name} for {', '.join(sorted(wanted))} fits "
                    f"(flavors: {names})"
                )
            if found not in chosen:
                chosen.append(found)
        return chosen, ""

    # --- admission -----------------------------------------------------------------------------

    def apply(self, workload: Workload, spec: LMap) -> bool:
        """Merge the assigned flavors into ``spec``; whether anything was added."""
        from gpudrv_check.model.admission import _missing, _with_selector, _with_tolerations

        queue = self.queue(workload)
        if queue is None:
            return False
        written = workload.pod_spec if isinstance(workload.pod_spec, MAPPINGS) else {}
        chosen, _ = self.assign(workload, queue, spec if queue.pod_based else written)
        if not chosen:
            return False
        labels: dict[str, str] = {}
        tolerations: list[Mapping[str, Any]] = []
        for name in chosen:
            flavor = _spec(self.flavors[name])
            found = flavor.get("nodeLabels")
            if isinstance(found, MAPPINGS):
                labels.update({str(k): str(v) for k, v in found.items()})
            listed = flavor.get("tolerations")
            if isinstance(listed, list):
                tolerations += [t for t in listed if isinstance(t, MAPPINGS)]
        if labels:
            _with_selector(spec, labels)
        added = _missing(spec.get("tolerations"), tolerations)
        if added:
            _with_tolerations(spec, added)
        note = f"Kueue ResourceFlavor{'s' if len(chosen) > 1 else ''} {', '.join(chosen)}"
        if queue.defaulted:
            note += f" (LocalQueue {DEFAULT_QUEUE} of namespace {workload.namespace})"
        workload.admitted.append(note)
        workload.admitted_at = workload.admitted_at or queue.path
        return True
