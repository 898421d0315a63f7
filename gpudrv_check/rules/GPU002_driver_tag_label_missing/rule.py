"""GPU002 driver-tag-label-missing: a GPU node lacks a label its driver image tag needs.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.driver import driver_managed, node_tag
from gpudrv_check.model.driver_plan import LABELS, driver_plan
from gpudrv_check.nvidia.driver_image import KERNEL_VERSION_LABEL, OS_VERSION_ID_LABEL
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU002"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    plan = driver_plan(repo)
    # the nodes the operator still reads a label of although it installs no driver there
    yield from plan_findings(ctx, ID)
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
        path, hint = node.labels_path, None
        location = node.label_location(result.missing[0]) if result.missing else None
        if result.excluded_by:
            # the labels are there, with another value than the pool of the node's name selects
            message = f"GPU node {node.name} gets no driver: {result.error}"
            path = node.label_path(result.excluded_by)
            location = node.label_location(result.excluded_by)
            hint = _excluded_fix(result.excluded_by)
        if result.no_os_tag:
            # the labels are there: the release is one the operator forms no tag from
            path = node.label_path(OS_VERSION_ID_LABEL)
            location = node.label_location(OS_VERSION_ID_LABEL)
            hint = (
                "The labels are right: this operator release forms no OS tag from this OS "
                "release. Run a release it supports on the node (or the operator version that "
                "forms its tag), or keep the operator off the node's driver "
                '(nvidia.com/gpu.deploy.driver: "false" with a driver on the host).'
            )
        yield ctx.finding(
            ID,
            node,
            path,
            message,
            hint,
            location=location,
        )


def _excluded_fix(label: str) -> str:
    """How to get a node into a pool whose selector reads another value of ``label``."""
    if label == KERNEL_VERSION_LABEL:
        # getSanitizedKernelVersion drops the architecture: x86_64 and aarch64 share a name
        return (
            "The pool's name drops the CPU architecture from the kernel, so nodes whose kernels "
            "differ only in it share one pool that selects one kernel: give the nodes of each "
            "architecture their own NVIDIADriver (nodeSelector on kubernetes.io/arch)."
        )
    return (
        f"Run one {label} on the nodes of this pool, or give the nodes of each release their "
        "own NVIDIADriver (nodeSelector); from v26.7 a pool of a major-version OS tag (rocky9) "
        "selects VERSION_ID.major and takes all of them."
    )
