"""What the built-in rules leave unread: the skim plan the engine hands to the reader.

`current_plan()` is the one place the plan comes from (the reader knows no kind or field by
name: read/yaml_docs.py takes the plan as an input). Its body lists, for now, what no rule reads;
it is to be derived from what each rule declares it reads (rule.yaml `reads:`).
"""

from __future__ import annotations

from gpudrv_check.core.reads import SkimPlan

#: kinds no rule reads past `metadata`: their content is parsed (syntax, nesting, duplicate keys
#: and tags are still reported) but not kept. Large CRDs are most of the bytes of a typical
#: GitOps repo.
_KINDS = frozenset(
    (
        "APIService",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Endpoints",
        "EndpointSlice",
        "HorizontalPodAutoscaler",
        "Ingress",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "NetworkPolicy",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
        "StorageClass",
        "ValidatingWebhookConfiguration",
    )
)
#: parts of a Node's status no rule reads (capacity and allocatable are read): a `kubectl get
#: nodes -o yaml` export lists every cached image of every node, often most of the file
_NODE_STATUS = frozenset(
    (
        "addresses",
        # "conditions" is read: the Ready condition (rehearse, GetCurrentUnavailableNodes)
        "config",
        "daemonEndpoints",
        "features",
        "images",
        "nodeInfo",
        "runtimeHandlers",
        "volumesAttached",
        "volumesInUse",
    )
)
#: fields of a workload's containers no rule reads (name, image and resources are read)
_CONTAINER = frozenset(
    (
        "args",
        "command",
        "env",
        "envFrom",
        "lifecycle",
        "livenessProbe",
        "ports",
        "readinessProbe",
        "securityContext",
        "startupProbe",
        "volumeDevices",
        "volumeMounts",
    )
)


def current_plan() -> SkimPlan:
    """What the built-in rules leave unread. Only used when the repo has no custom policies,
    which may assert on any field (then the engine passes `NOTHING_SKIPPED`)."""
    return SkimPlan(kinds=_KINDS, node_status=_NODE_STATUS, container=_CONTAINER)
