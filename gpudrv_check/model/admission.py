"""What the API server and the queue add to a pod before the scheduler sees it.

Three sources of tolerations and node selectors that are not in the manifest:

- the ExtendedResourceToleration admission plugin, when ``cluster.admission`` lists it (GKE and
  EKS run it): for each extended resource a container or init container requests it adds the
  toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` unless an identical
  one is there (kubernetes plugin/pkg/admission/extendedresourcetoleration/admission.go Admit,
  pkg/apis/core/helper AddOrUpdateTolerationInPod);
- the RuntimeClass admission plugin, for a pod whose ``runtimeClassName`` names a RuntimeClass
  in the repo with ``scheduling``: its nodeSelector is merged into the pod's and its
  tolerations are added (plugin/pkg/admission/runtimeclass/admission.go setScheduling);
- Kueue, for a workload labelled ``kueue.x-k8s.io/queue-name``: when the LocalQueue, its
  ClusterQueue and the ResourceFlavor it would assign are in the repo, the flavor's
  nodeLabels join the nodeSelector and its tolerations are added (kueue pkg/podset/podset.go
  Merge; the flavor is the first of the ClusterQueue's flavors for the pod's resources whose
  nodeLabels the pod's nodeSelector does not contradict and whose nodeTaints the pod
  tolerates, pkg/scheduler/flavorassigner).

Each workload's ``pod_spec`` is replaced by a copy with them; ``admitted`` says who added what.

And the Priority admission plugin (plugin/pkg/admission/priority/admission.go admitPod): a pod
naming a PriorityClass the repo holds, or naming none while the repo holds a `globalDefault`
one, takes that class's `preemptionPolicy` (default PreemptLowerPriority), which the
scheduler's preemption message reads (`preemption: not eligible due to
preemptionPolicy=Never.`), and its priority (`pod_priority`), by which the capacity simulation
orders the pods (model/occupancy.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudrv_check.core.located import LMap, LSeq
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.model.workload import SCALABLE_KINDS, Workload
from gpudrv_check.read.config import Config

EXTENDED_RESOURCE_TOLERATION = "ExtendedResourceToleration"
#: pkg/apis/core/helper IsNativeResource: no domain, or a kubernetes.io one
_NATIVE_DOMAIN = "kubernetes.io"


def is_extended_resource(name: str) -> bool:
    """pkg/apis/core/helper IsExtendedResourceName: a domain-qualified name outside
    ``kubernetes.io`` that is not a quota ``requests.`` name."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return domain != _NATIVE_DOMAIN and not domain.endswith("." + _NATIVE_DOMAIN)


def extended_resources(workload: Workload) -> list[str]:
    """The extended resources its containers and init containers request, sorted (limits
    count: the API server defaults a missing request to the limit)."""
    found: set[str] = set()
    for container in workload.containers:
        resources = workload.manifest.get(*container.path, "resources")
        if not isinstance(resources, MAPPINGS):
            continue
        for section in ("requests", "limits"):
            amounts = resources.get(section)
            if isinstance(amounts, MAPPINGS):
                found.update(k for k in amounts if isinstance(k, str) and is_extended_resource(k))
    return sorted(found)


def copy_pod_spec(spec: Mapping[str, Any]) -> LMap:
    """A shallow copy that keeps the positions (the values are shared)."""
    out = LMap(getattr(spec, "pos", (1, 1)))
    out.update(spec)
    out.kpos = dict(getattr(spec, "kpos", {}))
    raw = getattr(spec, "raw", None)
    out.raw = dict(raw) if raw else None
    return out


def _with_tolerations(spec: LMap, added: list[dict[str, Any]]) -> None:
    current = spec.get("tolerations")
    seq = LSeq(getattr(current, "pos", spec.key_pos("tolerations")))
    if isinstance(current, list):
        seq.extend(current)
        seq.ipos = list(getattr(current, "ipos", [seq.pos] * len(current)))
    for toleration in added:
        item = LMap(seq.pos)
        item.update(toleration)
        seq.append(item)
        seq.ipos.append(seq.pos)
    spec["tolerations"] = seq


def _with_selector(spec: LMap, labels: Mapping[str, str]) -> bool:
    """Merge ``labels`` into the nodeSelector; False on a conflicting value (rejected)."""
    current = spec.get("nodeSelector")
    merged = LMap(getattr(current, "pos", spec.key_pos("nodeSelector")))
    if isinstance(current, MAPPINGS):
        merged.update(current)
        merged.kpos = dict(getattr(current, "kpos", {}))
    for key, value in labels.items():
        if key in merged and merged[key] != value:
            return False
        merged.setdefault(key, value)
    spec["nodeSelector"] = merged
    return True


def _missing(existing: object, wanted: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    have = [dict(t) for t in existing] if isinstance(existing, list) else []
    out = []
    for toleration in wanted:
        if dict(toleration) not in have and dict(toleration) not in out:
            out.append(dict(toleration))
    return out


class Admission:
    """The admission sources of one repo, applied workload by workload."""

    def __init__(self, manifests: list[Manifest], config: Config) -> None:
        self.extended = EXTENDED_RESOURCE_TOLERATION in config.cluster.admission
        self.runtime_classes = {
            m.name: m
            for m in manifests
            if m.kind == "RuntimeClass" and m.api_version.startswith("node.k8s.io/") and m.name
        }
        from gpudrv_check.model.kueue import Kueue

        self.kueue = Kueue(manifests)
        self.priority_classes: dict[str, Manifest] = {}
        self.default_class: Manifest | None = None
        for m in manifests:
            if m.kind == "PriorityClass" and m.api_version.startswith("scheduling.k8s.io/"):
                if m.name:
                    self.priority_classes.setdefault(m.name, m)
                if m.get("globalDefault") is True and self.default_class is None:
                    self.default_class = m

    def apply(self, workload: Workload) -> None:
        self._priority(workload)
        if not isinstance(workload.pod_spec, MAPPINGS) or not self._may_apply(workload):
            return
        spec = copy_pod_spec(workload.pod_spec)
        changed = self._extended(workload, spec)
        changed = self._runtime_class(workload, spec) or changed
        changed = self.kueue.apply(workload, spec) or changed
        if changed:
            workload.pod_spec = spec

    def _priority(self, workload: Workload) -> None:
        """The priority and the preemption policy the Priority admission plugin gives the pod:
        its class's (the named one, else the repo's globalDefault class), when the repo holds
        it."""
        workload.priority = pod_priority(workload, self.priority_classes, self.default_class)
        if not self.priority_classes:
            return
        name = workload.spec_get("priorityClassName")
        found = (
            self.priority_classes.get(name)
            if isinstance(name, str) and name
            else self.default_class
        )
        if found is None:
            return
        policy = found.get("preemptionPolicy")
        workload.admitted_preemption(policy if isinstance(policy, str) else "PreemptLowerPriority")

    def _may_apply(self, workload: Workload) -> bool:
        """Cheap test first: most workloads meet none of the sources."""
        spec = workload.pod_spec
        return (
            self.extended
            or (bool(self.runtime_classes) and "runtimeClassName" in spec)
            or (bool(self.kueue.local) and self.kueue.queue_of(workload) is not None)
        )

    def _extended(self, workload: Workload, spec: LMap) -> bool:
        if not self.extended:
            return False
        wanted = [
            {"key": name, "operator": "Exists", "effect": "NoSchedule"}
            for name in extended_resources(workload)
        ]
        added = _missing(spec.get("tolerations"), wanted)
        if not added:
            return False
        _with_tolerations(spec, added)
        keys = ", ".join(t["key"] for t in added)
        workload.admitted.append(f"{EXTENDED_RESOURCE_TOLERATION} tolerates {keys}:NoSchedule")
        return True

    def _runtime_class(self, workload: Workload, spec: LMap) -> bool:
        name = spec.get("runtimeClassName")
        rc = self.runtime_classes.get(name) if isinstance(name, str) else None
        scheduling = rc.get("scheduling") if rc is not None else None
        if not isinstance(scheduling, MAPPINGS):
            return False
        changed = False
        selector = scheduling.get("nodeSelector")
        if isinstance(selector, MAPPINGS) and selector:
            if not _with_selector(spec, {str(k): str(v) for k, v in selector.items()}):
                return False  # the API server rejects the pod; GPU040 is not ours to guess
            changed = True
        tolerations = scheduling.get("tolerations")
        if isinstance(tolerations, list):
            listed = [t for t in tolerations if isinstance(t, MAPPINGS)]
            added = _missing(spec.get("tolerations"), listed)
            if added:
                _with_tolerations(spec, added)
                changed = True
        if changed:
            workload.admitted.append(f"RuntimeClass {name} scheduling")
            workload.admitted_at = workload.admitted_at or (*workload.spec_path, "runtimeClassName")
        return changed


#: the classes every cluster holds (pkg/apis/scheduling/types.go SystemNodeCritical,
#: SystemClusterCritical; the Priority plugin's PostStartHook creates them)
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
#: pkg/apis/scheduling/types.go HighestUserDefinablePriority (validation refuses a user class
#: above it) and the int32 range of `value`
_HIGHEST_USER_PRIORITY = 1000000000
_LOWEST_PRIORITY = -(2**31)


def class_value(manifest: Manifest) -> int | None:
    """A PriorityClass's `value` as the API server stores it; None when it refuses the class
    (pkg/apis/scheduling/validation ValidatePriorityClass: an int32, at most
    HighestUserDefinablePriority, a ``system-`` name only for the built-in classes)."""
    name, value = manifest.name or "", manifest.get("value")
    if name in SYSTEM_PRIORITY_CLASSES:
        return SYSTEM_PRIORITY_CLASSES[name] if value == SYSTEM_PRIORITY_CLASSES[name] else None
    if name.startswith("system-") or not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if _LOWEST_PRIORITY <= value <= _HIGHEST_USER_PRIORITY else None


def pod_priority(
    workload: Workload, classes: Mapping[str, Manifest], default: Manifest | None
) -> int | None:
    """The pod's priority (plugin/pkg/admission/priority/admission.go admitPod): the value of
    the class `priorityClassName` names (a built-in one, else the repo's), or with no name the
    globalDefault class's (the first the repo holds: the plugin's validatePriorityClass
    refuses a second default), else 0 (DefaultPriorityWhenNoDefaultClassExists). A
    `spec.priority` written in the template is only accepted when it equals that value.
    None when it is not known: a class neither built in nor in the repo (the cluster may hold
    it), a class the API server refuses, or a written priority the plugin forbids."""
    name = workload.spec_get("priorityClassName")
    found: int | None
    if name is None or name == "":
        found = 0 if default is None else class_value(default)
    elif not isinstance(name, str):
        return None
    elif name in SYSTEM_PRIORITY_CLASSES:
        found = SYSTEM_PRIORITY_CLASSES[name]
    else:
        named = classes.get(name)
        found = None if named is None else class_value(named)
    written = workload.spec_get("priority")
    if written is not None and (written.__class__ is not int or written != found):
        return None  # forbidden: "the integer value of priority (…) must not be provided …"
    return found


def admit(workloads: list[Workload], manifests: list[Manifest], config: Config) -> None:
    """Apply every admission source to every workload's pod spec, in place; and the replicas a
    HorizontalPodAutoscaler of the repo keeps its target at (`autoscale`)."""
    admission = Admission(manifests, config)
    scalers = autoscalers(manifests)
    for workload in workloads:
        admission.apply(workload)
        if scalers:
            autoscale(workload, scalers)


#: (namespace, kind, name) of a target -> the (minReplicas, maxReplicas) of each HPA on it
Autoscalers = dict[tuple[str, str, str], list[tuple[int, int]]]


def autoscalers(manifests: list[Manifest]) -> Autoscalers:
    """The repo's HorizontalPodAutoscalers (autoscaling/v1, v2) by the object they scale:
    `spec.scaleTargetRef` in the HPA's namespace; `minReplicas` defaults to 1 and
    `maxReplicas` is required (an HPA without a whole one is left out)."""
    out: Autoscalers = {}
    for m in manifests:
        if m.kind != "HorizontalPodAutoscaler" or not m.api_version.startswith("autoscaling/"):
            continue
        target = m.get("spec", "scaleTargetRef")
        low, high = m.get("spec", "minReplicas"), m.get("spec", "maxReplicas")
        low = 1 if low is None else low
        if not (isinstance(target, MAPPINGS) and _whole(low) and _whole(high)):
            continue
        kind, name = target.get("kind"), target.get("name")
        if isinstance(kind, str) and isinstance(name, str):
            key = (m.namespace or "default", kind, name)
            out.setdefault(key, []).append((low, high))
    return out


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def autoscale(workload: Workload, scalers: Autoscalers) -> None:
    """The replicas the HPA controller keeps its target at, before any metric moves it
    (pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler): the written count raised
    to minReplicas and cut to maxReplicas; 0 stays 0 (autoscaling disabled for a target scaled
    to zero); a target of two HPAs is not scaled (the controller refuses both, with
    AmbiguousSelector)."""
    if workload.kind not in SCALABLE_KINDS or workload.replicas is None:
        return
    found = scalers.get((workload.namespace or "default", workload.kind, workload.name or ""))
    if found is None or len(found) != 1 or workload.replicas == 0:
        return
    low, high = found[0]
    wanted = min(max(workload.replicas, max(low, 1)), high)
    if wanted != workload.replicas:
        workload.replicas = wanted
        workload.replicas_path = None  # the count is the HPA's, not a key of this object
