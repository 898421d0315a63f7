"""GPU003 precompiled-os-conflict: GPU nodes share a kernel but differ in OS release.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.driver import driver_managed, label_keys, node_facts
from gpudrv_check.model.driver_plan import LABELS, driver_plan, os_conflict_others
from gpudrv_check.nvidia.driver_image import precompiled_os_conflicts
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU003"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if driver_plan(repo).mode != LABELS:
        yield from plan_findings(ctx, ID)
        return
    keys = label_keys(ctx.config)
    facts_by_node = {}
    for node in repo.gpu_nodes:
        if driver_managed(node):
            facts_by_node[node.name] = node_facts(node, repo)
    triples = [(name, f.kernel, f.os_release) for name, f in sorted(facts_by_node.items())]
    releases = {name: release for name, _, release in triples if release is not None}
    for conflict in precompiled_os_conflicts(triples):
        # the first few nodes on another release, then a count (driver_plan.py)
        others = os_conflict_others(conflict, releases)
        for name in conflict.nodes:
            node = repo.node_by_name[name]
            mine = releases[name]
            yield ctx.finding(
                ID,
                node,
                node.label_path(str(keys["os_version_id"])),
                f"GPU node {name} runs kernel {conflict.kernel} on {mine}, like "
                f"{others[mine]} on another OS release; the operator refuses precompiled "
                f'mode: "{conflict.message}"',
                location=node.label_location(str(keys["os_version_id"])),
            )
