"""A small repo that yields an error, a warning, a suppressed finding and a custom policy
finding, with a ClusterPolicy and upgrade-state labels for the markdown sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import gpu_node, write

POLICY = """
id: ACME001
name: gpu-node-zone
severity: info
message: GPU node {name} has no zone
match: {kinds: [Node], labelSelector: {matchLabels: {nvidia.com/gpu.present: "true"}}}
assert:
  properties:
    metadata:
      properties:
        labels: {required: [topology.kubernetes.io/zone]}
"""


@pytest.fixture
def ci_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(
        root,
        "support-matrix.csv",
        "driver_branch,kernel,os_tag\n550,5.15.0-119-generic,ubuntu22.04\n",
    )
    write(root, ".gpudrv-check.yaml", "policies: [policies/zone.yaml]\n")
    write(root, "policies/zone.yaml", POLICY)
    # GPU001: a kernel the matrix lacks; upgrade state in progress
    write(
        root,
        "nodes/gpu-1.yaml",
        gpu_node("gpu-1", kernel="5.15.0-120-generic").replace(
            "  labels:\n",
            "  labels:\n    nvidia.com/gpu-driver-upgrade-state: pod-deletion-required\n"
            "    topology.kubernetes.io/zone: a\n",
        ),
    )
    # GPU007 (warning): an unquoted label value; a file name that needs escaping
    write(
        root,
        "nodes/odd, name%.yaml",
        gpu_node("gpu-2")
        .replace('"550"', "550")
        .replace("  labels:\n", "  labels:\n    topology.kubernetes.io/zone: b\n"),
    )
    # suppressed by annotation
    write(
        root,
        "nodes/gpu-3.yaml",
        gpu_node("gpu-3", kernel="6.8.0-45-generic").replace(
            "  name: gpu-3\n",
            '  name: gpu-3\n  annotations: {gpudrv-check.io/ignore: "GPU001 # pinned"}\n',
        ),
    )
    write(
        root,
        "operator/clusterpolicy.yaml",
        """
        apiVersion: nvidia.com/v1
        kind: ClusterPolicy
        metadata: {name: cluster-policy}
        spec:
          driver: {enabled: true, usePrecompiled: true}
          dcgm: {enabled: false}
        """,
    )
    return root
