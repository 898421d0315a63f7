"""Where each kind that carries a pod template keeps its pod spec."""

from __future__ import annotations

#: the path of the pod spec inside the object, per kind
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
#: the pod spec's lists of containers
CONTAINER_LISTS = frozenset(("containers", "initContainers", "ephemeralContainers"))
