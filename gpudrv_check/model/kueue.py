"""Kueue: the node labels and tolerations of the ResourceFlavor a queued workload is admitted to.

A workload labelled ``kueue.x-k8s.io/queue-name: Q`` goes to the LocalQueue Q of its namespace,
whose ``spec.clusterQueue`` names a ClusterQueue; the ClusterQueue's resource group that covers
the pod's resources lists flavors in order, and Kueue assigns the first that fits
(pkg/scheduler/flavorassigner/flavorassigner.go: the flavor's ``nodeTaints`` must be tolerated by
the pod's and the flavor's tolerations, and the pod's nodeSelector must not contradict the
flavor's ``nodeLabels``; quota is not modelled: every flavor is taken to have room). At
admission the flavor's ``nodeLabels`` are merged into the pod's nodeSelector and its
``tolerations`` appended (pkg/podset/podset.go Merge). Nothing is injected when any object of
that chain is not in the repo.

Kueue also suspends a queued object until admission and lifts ``suspend`` then, so for the
kinds its default configuration integrates (batch/job, and the table's ``kueue: true`` kinds)
a written ``suspend`` does not keep the pods away: model/workload.py (Job) and
model/workload_kinds.py (``count_pods``) read the queue label the same way (``kueue_queued``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudrv_check.core.located import LMap
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.k8s.taints import first_untolerated_taint
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.model.workload_kinds import QUEUE_LABEL

GROUP = "kueue.x-k8s.io"


def _spec(manifest: Manifest) -> Mapping[str, Any]:
    spec = manifest.get("spec")
    return spec if isinstance(spec, Mapping) else {}


class Kueue:
    def __init__(self, manifests: list[Manifest]) -> None:
        ours = [m for m in manifests if m.api_version.split("/", 1)[0] == GROUP and m.name]
        self.local = {(m.namespace or "default", m.name): m for m in ours if m.kind == "LocalQueue"}
        self.cluster = {m.name: m for m in ours if m.kind == "ClusterQueue"}
        self.flavors = {m.name: m for m in ours if m.kind == "ResourceFlavor"}

    def queue_of(self, workload: Workload) -> str | None:
        for labels in (workload.manifest.labels, workload.pod_labels):
            value = labels.get(QUEUE_LABEL) if isinstance(labels, Mapping) else None
            if isinstance(value, str) and value:
                return value
        return None

    @staticmethod
    def _label_path(workload: Workload) -> tuple:
        if QUEUE_LABEL in workload.manifest.labels or workload.labels_path is None:
            return ("metadata", "labels", QUEUE_LABEL)
        return (*workload.labels_path, QUEUE_LABEL)

    def _flavor_names(self, workload: Workload) -> list[str]:
        queue = self.queue_of(workload)
        local = self.local.get((workload.namespace, queue or ""))
        target = _spec(local).get("clusterQueue") if local is not None else None
        cq = self.cluster.get(target) if isinstance(target, str) else None
        groups = _spec(cq).get("resourceGroups") if cq is not None else None
        if not isinstance(groups, list):
            return []
        wanted = GPU_RESOURCE if workload.gpus else "cpu"
        chosen = next(
            (
                g
                for g in groups
                if isinstance(g, Mapping) and wanted in (g.get("coveredResources") or [])
            ),
            None,
        )
        flavors = chosen.get("flavors") if isinstance(chosen, Mapping) else None
        return [
            f["name"]
            for f in flavors or []
            if isinstance(f, Mapping) and isinstance(f.get("name"), str)
        ]

    def _fits(self, flavor: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        labels = flavor.get("nodeLabels")
        selector = spec.get("nodeSelector")
        if isinstance(labels, Mapping) and isinstance(selector, Mapping):
            if any(k in labels and str(labels[k]) != str(v) for k, v in selector.items()):
                return False
        taints = [t for t in flavor.get("nodeTaints") or [] if isinstance(t, Mapping)]
        own, extra = spec.get("tolerations"), flavor.get("tolerations")
        tolerations = [
            *(own if isinstance(own, list) else []),
            *(extra if isinstance(extra, list) else []),
        ]
        return first_untolerated_taint(taints, tolerations) is None

    def apply(self, workload: Workload, spec: LMap) -> bool:
        """Merge the assigned flavor into ``spec``; whether anything was added."""
        from gpudrv_check.model.admission import _missing, _with_selector, _with_tolerations

        for name in self._flavor_names(workload):
            manifest = self.flavors.get(name)
            if manifest is None:
                return False  # the flavor Kueue may pick is not in the repo: unknown
            flavor = _spec(manifest)
            if not self._fits(flavor, spec):
                continue
            labels = flavor.get("nodeLabels")
            if isinstance(labels, Mapping) and labels:
                _with_selector(spec, {str(k): str(v) for k, v in labels.items()})
            tolerations = flavor.get("tolerations")
            if isinstance(tolerations, list):
                added = _missing(
                    spec.get("tolerations"), [t for t in tolerations if isinstance(t, Mapping)]
                )
                if added:
                    _with_tolerations(spec, added)
            workload.admitted.append(f"Kueue ResourceFlavor {name}")
            workload.admitted_at = workload.admitted_at or self._label_path(workload)
            return True
        return False
