"""GPU002 driver-tag-label-missing: a GPU node lacks a label its driver image tag needs.

The driver branch comes from `nvidia.com/cuda.driver-version.major` (or the deprecated
`nvidia.com/cuda.driver.major`), the kernel from `feature.node.kubernetes.io/kernel-version.full`,
the OS from `feature.node.kubernetes.io/system-os_release.ID` and `.VERSION_ID`. Keys can be
changed under `labels:` in the config.

Only where the operator installs the node's driver and needs the label: not on nodes with
`nvidia.com/gpu.deploy.driver=false` or `gpu.deploy.operands=false`, not on sandbox-workload
nodes, not when `driver.enabled` is false, not on nodes no NVIDIADriver owns; the driver
branch label only when no version is configured (the configured version wins). With
NVIDIADriver CRs a node missing its pool's labels is in no pool, so no driver DaemonSet
selects it (`internal/state/nodepool.go` `getNodePools`).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.driver import driver_managed, node_tag
from gpudrv_check.model.driver_plan import LABELS, driver_plan
from gpudrv_check.rules.context import Context

ID = "GPU002"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    plan = driver_plan(repo)
    for node in sorted(repo.gpu_nodes, key=lambda n: n.name):
        planned = plan.nodes.get(node.name)
        if plan.mode == LABELS and not driver_managed(node):
            continue
        if plan.mode != LABELS and (planned is None or not planned.managed):
            continue
        result = node_tag(node, repo)
        if result.ok:
            continue
        if result.missing:
            names = ", ".join(result.missing)
            label = "label" if len(result.missing) == 1 else "labels"
            message = (
                f"GPU node {node.name} has no {names} {label}, so its driver image tag cannot "
                "be computed"
            )
        else:
            message = f"GPU node {node.name}: driver image tag cannot be computed: {result.error}"
        yield ctx.finding(
            ID,
            node,
            node.labels_path,
            message,
            location=node.label_location(result.missing[0]) if result.missing else None,
        )
