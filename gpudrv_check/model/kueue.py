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
(flavorSelector), matching its ``nodeLabels``, and its pod set asking for no more than the
flavor's ``nominalQuota`` when the ClusterQueue has no cohort to borrow from (fitsResourceQuota:
more than the maximum capacity never fits). A Job's pod set is all its pods, their requests
added up (jobs/job ``podsCount``: parallelism capped by completions, or the fewest partial
admission allows), and so is a queued StatefulSet's pod group (`replicas` pods;
`pod_set_count`); other kinds are weighed one pod at a time, which never fits less than Kueue
does. Other quota is not modelled: every flavor is taken to have room. Kueue checks the
template as written for a Job-like object, the pod (after the API server's admission plugins)
for the pod-based integrations. At admission the flavors' ``nodeLabels`` are merged into the
pod's nodeSelector and their ``tolerations`` appended (pkg/podset/podset.go FromAssignment,
Merge).

Nothing is injected when Kueue would not admit the workload, or when an object the answer
depends on (the LocalQueue, ClusterQueue, a flavor) is not in the repo.

``never_admitted`` says which workloads Kueue never admits when the repo settles it (GPU010
reports them): the LocalQueue and its ClusterQueue are in the repo and one of these holds, in
Kueue's order: a ``stopPolicy`` Hold or HoldAndDrain on the LocalQueue
(controller/core/workload_controller.go "LocalQueue %s is stopped") or the ClusterQueue
(updateQueueStatus: inactive); no ``namespaceSelector`` (selects nothing), or one that does not
select the namespace when its labels are known: the Namespace is in the repo, or the selector
reads only ``kubernetes.io/metadata.name`` (ValidateAdmissibility, ErrNamespaceMismatch); a
requested resource no resource group covers ("resource %s unavailable in ClusterQueue", with
Kueue's default ``quotaCheckStrategy`` and no ``excludeResourcePrefixes``); no flavor of a group
fits, every flavor of it in the repo and the pod spec the one Kueue reads. A refusal an absent
object could lift (a LocalQueue, ClusterQueue or ResourceFlavor not in the repo, a Namespace
whose labels the selector needs) is not certain, nor one on a value the API server would refuse
(a stopPolicy, selector or resource group of the wrong form): then the next certain one counts,
if any. Such a job stays suspended; the pod integration's pods keep the scheduling gate
``kueue.x-k8s.io/admission``.

Kueue also suspends a queued object until admission and lifts ``suspend`` then, so for the
kinds its default configuration integrates (batch/job, and the table's ``kueue: true`` kinds)
a written ``suspend`` does not keep the pods away: model/workload.py (Job) and
model/workload_kinds.py (``count_pods``) read the object's own queue label the same way
(``kueue_queued``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from gpudrv_check.core.located import LMap, Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import selector_key
from gpudrv_check.k8s.nodeaffinity import node_selector_terms, requirement_matches, selector_value
from gpudrv_check.k8s.podaffinity import NAMESPACE_NAME_LABEL
from gpudrv_check.k8s.quantity import quantity_value
from gpudrv_check.k8s.taints import first_untolerated_taint
from gpudrv_check.model.workload import Workload, job_parallel_pods, whole_count
from gpudrv_check.model.workload_kinds import QUEUE_LABEL

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

GROUP = "kueue.x-k8s.io"
#: constants.DefaultLocalQueueName
DEFAULT_QUEUE = "default"
#: the namespaces the default managedJobsNamespaceSelector leaves out (apis/config/v1beta2
#: defaults.go: kubernetes.io/metadata.name NotIn [kube-system, <kueue's namespace>])
UNMANAGED_NAMESPACES = frozenset(("kube-system", "kueue-system"))
#: the stopPolicy values that stop a queue (apis/kueue/v1beta2 StopPolicy: None, Hold,
#: HoldAndDrain; another value is refused by the API server)
HOLD_POLICIES = frozenset(("Hold", "HoldAndDrain"))
_KINDS = frozenset(("LocalQueue", "ClusterQueue", "ResourceFlavor"))
#: how a flavor's misfit reads (Refusal.details of NO_FLAVOR_FITS; flavorassigner.go's words)
MISFIT_TAINT = "untolerated taint"
MISFIT_AFFINITY = "doesn't match node affinity"
MISFIT_QUOTA = "insufficient quota"
#: the pod integration's scheduling gate: a pod Kueue has not admitted keeps it
#: (pkg/controller/jobs/pod/constants SchedulingGateName)
SCHEDULING_GATE = "kueue.x-k8s.io/admission"
_EXTRAS_KEY = "kueue"
#: why Kueue admits nothing (Refusal.cause)
NO_LOCAL_QUEUE = "no-local-queue"
LOCAL_QUEUE_STOPPED = "local-queue-stopped"
NO_CLUSTER_QUEUE = "no-cluster-queue"
CLUSTER_QUEUE_STOPPED = "cluster-queue-stopped"
NO_NAMESPACE_SELECTOR = "no-namespace-selector"
NAMESPACE_NOT_SELECTED = "namespace-not-selected"
MISSING_FLAVOR = "missing-flavor"
UNCOVERED_RESOURCE = "uncovered-resource"
NO_FLAVOR_FITS = "no-flavor-fits"
INVALID = "invalid"
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


class Refusal(NamedTuple):
    """Why Kueue does not admit a workload."""

    cause: str  # one of the causes above
    reason: str  # in words
    certain: bool  # no object the repo may lack (or hold in another form) could lift it
    local_queue: str  # namespace/name
    cluster_queue: str | None
    details: tuple[str, ...] = ()  # the flavors missing, resources uncovered, misfits
    resources: tuple[str, ...] = ()  # what the group no flavor fits covers, of the requests


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


def _group_ok(group: object) -> bool:
    """A resource group the API server accepts as far as the evaluation reads it: covered
    resources and flavors (at least one each), names strings."""
    if not isinstance(group, MAPPINGS):
        return False
    covered, flavors = group.get("coveredResources"), group.get("flavors")
    return (
        isinstance(covered, list)
        and bool(covered)
        and all(isinstance(r, str) for r in covered)
        and isinstance(flavors, list)
        and bool(flavors)
        and all(isinstance(f, MAPPINGS) and isinstance(f.get("name"), str) for f in flavors)
    )


def _labels_text(labels: Mapping[Any, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((str(k), str(v)) for k, v in labels.items()))


def _holds(policy: object) -> bool:
    """A stopPolicy that stops the queue (another value than these and None is refused)."""
    return isinstance(policy, str) and policy in HOLD_POLICIES


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


#: partial admission (jobs/job: `JobMinParallelismAnnotation`): Kueue may admit fewer pods
MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"


def pod_set_count(manifest: Manifest, queue: Queue) -> tuple[int | None, bool]:
    """How many pods the one pod set of the object's Kueue workload holds, when known for
    certain, and whether that is the fewest partial admission allows:

    - a Job (jobs/job/job_controller.go `PodSets`, `podsCount`): `parallelism` (defaulted to
      1), never more than `completions`; a CronJob's Jobs alike, from its job template; with
      partial admission (the job-min-parallelism annotation) the fewest it may admit;
    - a StatefulSet queued by its own label or its namespace's `default` LocalQueue: its pods
      are one pod group of `replicas` pods (default 1), admitted together
      (jobs/statefulset/statefulset_webhook.go `Default`: GroupTotalCountAnnotation).

    None otherwise: each pod its own workload (a Deployment's, a bare Pod, a queue label on the
    template only), pod sets this check does not add up (multi-template kinds, a
    LeaderWorkerSet's groups), or a count the API server would refuse."""
    api, kind = manifest.api_version, manifest.kind
    if api == "apps/v1" and kind == "StatefulSet":
        if not (queue.defaulted or queue.path == ("metadata", "labels", QUEUE_LABEL)):
            return None, False  # the template's label only: the pod integration, pod by pod
        replicas = manifest.get("spec", "replicas")
        return (1 if replicas is None else whole_count(replicas)), False
    if queue.pod_based or api not in ("batch/v1", "batch/v1beta1"):
        return None, False
    job: Path
    if kind == "Job" and api == "batch/v1":
        job = ()
    elif kind == "CronJob":
        job = ("spec", "jobTemplate")
    else:
        return None, False
    count = job_parallel_pods(manifest, (*job, "spec"))
    annotations = manifest.get(*job, "metadata", "annotations")
    if count is None or not isinstance(annotations, MAPPINGS):
        return count, False
    if MIN_PARALLELISM_ANNOTATION not in annotations:
        return count, False
    return _min_count(annotations[MIN_PARALLELISM_ANNOTATION], count), True


def _min_count(written: Any, count: int) -> int | None:
    """Partial admission (jobs/job/job_controller.go `minPodsCount`, the scheduler then tries
    fewer pods down to it): the fewest pods Kueue may admit the Job with, which must fit for it
    ever to be admitted. None when the annotation is not a number from 1 to one below the
    count (jobs/job/job_webhook.go `validatePartialAdmissionCreate` refuses the Job then:
    nothing is certain; a signed number Atoi reads, `+2`, is left uncertain too)."""
    if not isinstance(written, str) or not written.isascii() or not written.isdigit():
        return None
    least = int(written)
    return least if 1 <= least < count else None


def _selector_fits(labels: Mapping[str, str], spec: Mapping[str, Any]) -> bool:
    """flavorSelector: the nodeSelector and required node affinity cut to the flavor's label
    keys (a term left with no expression drops the affinity) match the flavor's labels."""
    selector = spec.get("nodeSelector")
    if isinstance(selector, MAPPINGS):
        for key, raw in selector.items():
            if isinstance(key, str) and key in labels and selector_value(raw) != labels[key]:
                return False
    kept: list[list[Any]] = []
    for term in node_selector_terms(spec):
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
        self.local: dict[tuple[str, str], Manifest] = {}
        self.cluster: dict[str, Manifest] = {}
        self.flavors: dict[str, Manifest] = {}
        #: name -> metadata.labels as written (of any type)
        self.namespaces: dict[str | None, Any] = {}
        for m in manifests:  # one pass, the kind first (most objects are none of these)
            kind = m.kind
            if kind == "Namespace":
                if m.api_version == "v1":
                    self.namespaces[m.name] = m.get("metadata", "labels")
            elif kind in _KINDS and m.name and m.api_version.split("/", 1)[0] == GROUP:
                if kind == "LocalQueue":
                    self.local[(m.namespace or "default", m.name)] = m
                elif kind == "ClusterQueue":
                    self.cluster[m.name] = m
                else:
                    self.flavors[m.name] = m

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

    def _namespace_labels(self, namespace: str) -> tuple[dict[str, str], bool]:
        """The namespace's labels as the API server keeps them (its name label added), and
        whether they are all known: its Namespace is in the repo with labels it accepts."""
        found = self.namespaces.get(namespace)
        known = namespace in self.namespaces and (
            found is None
            or (
                isinstance(found, MAPPINGS)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in found.items())
            )
        )
        labels = dict(found) if known and isinstance(found, MAPPINGS) else {}
        labels[NAMESPACE_NAME_LABEL] = namespace
        return labels, known

    def _check_queues(
        self, workload: Workload, queue: Queue, out: list[Refusal]
    ) -> Manifest | None:
        """The ClusterQueue whose resource groups decide, else None: a refusal in ``out`` ends the
        evaluation (the repo does not say more, or Kueue certainly admits nothing)."""
        where = f"{workload.namespace}/{queue.name}"

        def refuse(
            cause: str, reason: str, certain: bool, cq: str | None = None, *details: str
        ) -> None:
            out.append(Refusal(cause, reason, certain, where, cq, details))

        local = self.local.get((workload.namespace, queue.name))
        if local is None:
            refuse(NO_LOCAL_QUEUE, f"the repo holds no LocalQueue {where}", False)
            return None
        if not isinstance(local.get("spec"), MAPPINGS):  # the API server refuses it
            refuse(INVALID, f"LocalQueue {where} has no spec", False)
            return None
        spec = _spec(local)
        target = spec.get("clusterQueue")
        if _stopped(spec):
            policy = spec.get("stopPolicy")
            refuse(
                LOCAL_QUEUE_STOPPED,
                f"LocalQueue {where} has stopPolicy {policy}, so it admits no workload",
                # certain only with its ClusterQueue in the repo too (what the repo shows whole)
                _holds(policy) and isinstance(target, str) and target in self.cluster,
                target if isinstance(target, str) else None,
            )
            return None
        cq = self.cluster.get(target) if isinstance(target, str) else None
        if cq is None:
            refuse(
                NO_CLUSTER_QUEUE,
                f"the repo holds no ClusterQueue {target} (LocalQueue {where})",
                False,
            )
            return None
        if not isinstance(cq.get("spec"), MAPPINGS):
            refuse(INVALID, f"ClusterQueue {cq.name} has no spec", False, cq.name)
            return None
        spec = _spec(cq)
        if _stopped(spec):
            policy = spec.get("stopPolicy")
            refuse(
                CLUSTER_QUEUE_STOPPED,
                f"ClusterQueue {cq.name} has stopPolicy {policy}, so it admits no workload",
                _holds(policy),
                cq.name,
            )
            return None
        selector = spec.get("namespaceSelector")
        key = selector_key(selector)
        if key.kind == "nothing":
            refuse(
                NO_NAMESPACE_SELECTOR,
                f"ClusterQueue {cq.name} has no namespaceSelector, which selects no "
                "namespace (`{}` selects all)",
                True,
                cq.name,
            )
            return None
        if key.kind == "invalid":  # the API server refuses the ClusterQueue
            refuse(
                INVALID,
                f"the namespaceSelector of ClusterQueue {cq.name} is not valid",
                False,
                cq.name,
            )
            return None
        labels, known = self._namespace_labels(workload.namespace)
        if not key.matches_clean(labels):
            # the labels are known when the Namespace is in the repo, or when the selector
            # reads none but the name label the API server gives every Namespace
            known = known or all(r.key == NAMESPACE_NAME_LABEL for r in key.requirements)
            refuse(
                NAMESPACE_NOT_SELECTED,
                f"the namespaceSelector of ClusterQueue {cq.name} does not select namespace "
                f"{workload.namespace}",
                known,
                cq.name,
                _labels_text(labels),
            )
            if known:
                return None
        return cq

    @staticmethod
    def _requested(workload: Workload, covered: set[str]) -> dict[str, Fraction]:
        """What one pod asks Kueue for: its non-zero requests, and 1 `pods` when a resource
        group covers it (flavorassigner.go assignFlavors)."""
        wanted = {k: v for k, v in workload.requests.items() if v > 0}
        if "pods" in covered:
            wanted["pods"] = Fraction(1)
        return wanted

    @staticmethod
    def _quota_misfit(
        name: str,
        entry: Mapping[str, Any],
        requested: Mapping[str, Fraction],
        cohort: bool,
        count: int | None = None,
        fewest: bool = False,
    ) -> str | None:
        """fitsResourceQuota: without a cohort a flavor's capacity is its nominalQuota, and a
        pod set asking for more never fits (with one, what it may borrow is not modelled).
        `count`: the pods of the pod set when known (`pod_set_count`; `fewest`: the fewest
        partial admission allows), whose requests Kueue
        adds up (flavorassigner.go assignFlavors: `TotalRequests`); else one pod is weighed."""
        if cohort:
            return None
        for item in _list(entry.get("resources")):
            if not isinstance(item, MAPPINGS) or "nominalQuota" not in item:
                continue
            resource = item.get("name")
            amount = requested.get(resource) if isinstance(resource, str) else None
            quota, _ = quantity_value(item.get("nominalQuota"))
            if amount is None or quota is None:
                continue
            total = amount if count is None else amount * count
            if total > quota:
                from gpudrv_check.model.pending import amount_text

                asked = amount_text(str(resource), total)
                if fewest and count is not None:
                    asks = f"the fewest pods it may run with ({count}) request {asked} in all"
                elif count is None or count == 1:
                    asks = f"one pod requests {amount_text(str(resource), amount)}"
                else:
                    asks = f"its {count} pods request {asked} in all"
                return (
                    f"{MISFIT_QUOTA} for {resource} in flavor {name}: {asks} > maximum "
                    f"capacity {amount_text(str(resource), quota)}, and the ClusterQueue has no "
                    "cohort to borrow from"
                )
        return None

    @staticmethod
    def _misfit(name: str, flavor: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
        """checkFlavorForPodSets: taints tolerated, labels matched; else why not."""
        taints = [t for t in _list(flavor.get("nodeTaints")) if isinstance(t, MAPPINGS)]
        tolerations = [*_list(spec.get("tolerations")), *_list(flavor.get("tolerations"))]
        taint = first_untolerated_taint(taints, tolerations)
        if taint is not None:
            from gpudrv_check.model.pending import taint_text

            return f"{MISFIT_TAINT} {taint_text(taint)} in flavor {name}"
        labels = flavor.get("nodeLabels")
        if not isinstance(labels, MAPPINGS):
            return None
        if _selector_fits({str(k): str(v) for k, v in labels.items()}, spec):
            return None
        return f"flavor {name} {MISFIT_AFFINITY}, its nodeLabels being {_labels_text(labels)}"

    def evaluate(
        self, workload: Workload, queue: Queue, spec: Mapping[str, Any], spec_known: bool = True
    ) -> tuple[list[str], list[Refusal]]:
        """The flavors Kueue assigns, one per resource group the pod uses, in the ClusterQueue's
        order, and why Kueue does not admit it, in Kueue's order; it goes on past a refusal the
        repo cannot settle and stops at the first certain one. ``spec_known``: whether ``spec``
        is the one Kueue reads (else no flavor's fit is certain)."""
        out: list[Refusal] = []
        cq = self._check_queues(workload, queue, out)
        if cq is None:
            return [], out
        where = f"{workload.namespace}/{queue.name}"
        raw = _spec(cq).get("resourceGroups")
        # a malformed group makes the API server refuse the ClusterQueue: nothing is certain
        strict = raw is None or (isinstance(raw, list) and all(_group_ok(g) for g in raw))
        groups = [g for g in _list(raw) if isinstance(g, MAPPINGS)]
        entries = [[f for f in _list(g.get("flavors")) if isinstance(f, MAPPINGS)] for g in groups]
        named = [f.get("name") for group in entries for f in group]
        missing = sorted({str(n) for n in named if not isinstance(n, str) or n not in self.flavors})
        if missing:  # the ClusterQueue is inactive, or the repo partial
            reason = (
                f"the repo holds no ResourceFlavor {', '.join(missing)} (ClusterQueue {cq.name})"
            )
            out.append(Refusal(MISSING_FLAVOR, reason, False, where, cq.name, tuple(missing)))
        covers = [
            {r for r in _list(g.get("coveredResources")) if isinstance(r, str)} for g in groups
        ]
        requested = self._requested(workload, set().union(*covers))
        uncovered = sorted(r for r in requested if not any(r in c for c in covers))
        if uncovered:
            reason = f"resource {uncovered[0]} unavailable in ClusterQueue {cq.name}"
            out.append(
                Refusal(UNCOVERED_RESOURCE, reason, strict, where, cq.name, tuple(uncovered))
            )
            return [], out
        used = sorted({next(i for i, c in enumerate(covers) if r in c) for r in requested})
        cohort = bool(_spec(cq).get("cohort") or _spec(cq).get("cohortName"))
        count, fewest = pod_set_count(workload.manifest, queue)
        chosen: list[str] = []
        for index in used:
            wanted = {k: v for k, v in requested.items() if k in covers[index]}
            found: str | None = None
            why: list[str] = []
            complete = True
            for entry in entries[index]:
                name = entry.get("name")
                if not isinstance(name, str) or name not in self.flavors:
                    complete = False
                    continue
                misfit = self._misfit(name, _spec(self.flavors[name]), spec)
                misfit = misfit or self._quota_misfit(name, entry, wanted, cohort, count, fewest)
                if misfit is None:
                    found = name
                    break
                why.append(misfit)
            if found is None:
                names = ", ".join(str(f.get("name")) for f in entries[index]) or "none"
                reason = (
                    f"no flavor of ClusterQueue {cq.name} for {', '.join(sorted(wanted))} fits "
                    f"(flavors: {names})"
                )
                certain = strict and complete and spec_known and bool(entries[index])
                out.append(
                    Refusal(
                        NO_FLAVOR_FITS,
                        reason,
                        certain,
                        where,
                        cq.name,
                        tuple(why),
                        tuple(sorted(wanted)),
                    )
                )
                return [], out
            if found not in chosen:
                chosen.append(found)
        return ([] if out else chosen), out

    def assign(
        self, workload: Workload, queue: Queue, spec: Mapping[str, Any]
    ) -> tuple[list[str], str]:
        """The flavors Kueue assigns, one per resource group the pod uses, in the ClusterQueue's
        order; else [] and why none (Kueue does not admit it, or the repo does not say)."""
        chosen, refusals = self.evaluate(workload, queue, spec)
        return chosen, refusals[0].reason if refusals else ""

    def never_admits(self, workload: Workload) -> tuple[Queue, Refusal] | None:
        """The queue and the first refusal that no object the repo may lack could lift, when
        Kueue never admits the workload (after ``apply``, on the workload as admitted)."""
        if not self.local or workload.admitted_by("Kueue "):
            return None
        queue = self.queue(workload)
        if queue is None:
            return None
        from gpudrv_check.model.admission import EXTENDED_RESOURCE_TOLERATION

        # Kueue read the pod (pod_spec after admission: it added nothing), or the template as
        # written: pod_spec too unless another admission source changed it since
        changed = any(
            n.startswith((EXTENDED_RESOURCE_TOLERATION, "RuntimeClass ")) for n in workload.admitted
        )
        spec = workload.pod_spec if isinstance(workload.pod_spec, MAPPINGS) else {}
        _, refusals = self.evaluate(workload, queue, spec, queue.pod_based or not changed)
        certain = next((r for r in refusals if r.certain), None)
        return (queue, certain) if certain is not None else None

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


def of_repo(repo: Repo) -> Kueue | None:
    """The repo's Kueue objects, read once per run (kept in ``repo.extras``); None when it holds
    no LocalQueue, so that a repo without Kueue costs the rules one pass over its objects."""
    extras = repo.extras
    if _EXTRAS_KEY not in extras:
        found = Kueue(repo.manifests)
        extras[_EXTRAS_KEY] = found if found.local else None
    kueue = extras[_EXTRAS_KEY]
    return kueue if isinstance(kueue, Kueue) else None


#: id of a workload Kueue never admits -> the workload the refusal is about, its queue, why
Held = dict[int, tuple[Workload, Queue, Refusal]]
_HELD_KEY = "kueue_held"


def never_admitted(repo: Repo) -> Held:
    """The workloads whose pods never exist because Kueue never admits them (after admission),
    each with a refusal the repo settles (`Kueue.never_admits`); every pod template of an
    object Kueue admits as a whole (not through the pod integration) goes with the first
    refused one. Worked out once per run (``repo.extras``); empty, at the cost of one pass
    over the objects, when the repo holds no LocalQueue."""
    found = repo.extras.get(_HELD_KEY)
    if isinstance(found, dict):
        return found
    held: Held = {}
    kueue = of_repo(repo)
    if kueue is None:
        repo.extras[_HELD_KEY] = held
        return held
    objects: dict[int, tuple[Workload, Queue, Refusal]] = {}
    for workload in repo.workloads:
        if not workload.placeable or workload.template_only:
            continue
        verdict = kueue.never_admits(workload)
        if verdict is None:
            continue
        queue, refusal = verdict
        held[id(workload)] = (workload, queue, refusal)
        if not queue.pod_based:  # one Kueue Workload for all the object's pod sets
            objects.setdefault(id(workload.manifest), (workload, queue, refusal))
    if objects:
        for workload in repo.workloads:
            whole = objects.get(id(workload.manifest))
            if whole is None or id(workload) in held or not workload.placeable:
                continue
            own = kueue.queue(workload)
            if own is not None and not own.pod_based and not workload.template_only:
                held[id(workload)] = whole
    repo.extras[_HELD_KEY] = held
    return held
