"""Namespaced or cluster-scoped: where an object without `metadata.namespace` ends up (the
facts live in core/scope.py, which a finding's fingerprint reads)."""

from __future__ import annotations

from gpudrv_check.core.scope import (
    CLUSTER_SCOPED_KINDS,
    DEFAULT_NAMESPACE,
    effective_namespace,
    is_cluster_scoped,
)

__all__ = ["CLUSTER_SCOPED_KINDS", "DEFAULT_NAMESPACE", "effective_namespace", "is_cluster_scoped"]
