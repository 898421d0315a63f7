"""Namespaced or cluster-scoped: where an object without `metadata.namespace` ends up.

`kubectl apply` puts a namespaced object that names no namespace into the current context's
namespace, `default` unless told otherwise; cluster-scoped objects have no namespace at all.
The list covers the built-in cluster-scoped kinds and the GPU Operator's and NFD's own. In
`core/` because a finding's fingerprint names the namespace an object lives in
(core/finding.py); k8s/scope.py gives the same names to the layers above.
"""

from __future__ import annotations

DEFAULT_NAMESPACE = "default"

CLUSTER_SCOPED_KINDS = frozenset(
    (
        "APIService",
        "CertificateSigningRequest",
        "ClusterPolicy",  # nvidia.com/v1
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "NodeFeatureRule",  # nfd.k8s-sigs.io
        "NVIDIADriver",  # nvidia.com/v1alpha1
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    )
)


def is_cluster_scoped(kind: str) -> bool:
    return kind in CLUSTER_SCOPED_KINDS


def effective_namespace(kind: str, namespace: str | None) -> str | None:
    """The namespace the object lives in once applied: None for cluster-scoped kinds."""
    if is_cluster_scoped(kind):
        return None
    return namespace or DEFAULT_NAMESPACE
