"""GPU002 driver-tag-label-missing: a GPU node lacks a label its driver image tag needs.

Its user documentation is `docs:` in rule.yaml, next to this file.
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
