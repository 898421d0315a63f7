"""GPU024 pod-in-multiple-pdbs: a pod is covered by two PodDisruptionBudgets.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.k8s.disruption import (
    EVICTION_MULTIPLE_PDBS_MESSAGE,
    EVICTION_MULTIPLE_PDBS_STATUS,
)
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, names

ID = "GPU024"


def labels_path(kind: str, spec_path: tuple) -> tuple:
    if kind == "Pod":
        return ("metadata", "labels")
    return (*spec_path[:-1], "metadata", "labels")


def check(ctx: Context) -> Iterator[Finding]:
    disruption = ctx.repo.disruption
    for workload in ctx.repo.workloads:
        pdbs = disruption.covering(workload)
        if len(pdbs) < 2:
            continue
        pods = disruption.pods(workload)
        # only pods a drain evicts and that run: kubectl drain (and the operator's drain
        # helper) skip DaemonSet and mirror pods (pkg/drain daemonSetFilter, mirrorPodFilter),
        # and the eviction API deletes a Pending pod without asking its budgets
        # (eviction.go canIgnorePDB)
        if pods.pods == 0 or not pods.evicted_by_drain or not pods.healthy:
            continue
        # the first few by name and location, then a count: listing every budget of a label
        # that a hundred select made a message longer than a finding holds, cut before it
        # said what the API does (core/finding.py MAX_MESSAGE)
        listed = names([p.listing for p in pdbs[:MAX_NAMES]], total=len(pdbs))
        title = workload.short_title
        yield ctx.finding(
            ID,
            workload.manifest,
            workload.labels_path or labels_path(workload.kind, workload.spec_path),
            f"the pods of {title} are covered by {len(pdbs)} PodDisruptionBudgets ({listed}): "
            f"the eviction API refuses them with HTTP {EVICTION_MULTIPLE_PDBS_STATUS} "
            f'"{EVICTION_MULTIPLE_PDBS_MESSAGE}", so no drain of a node running them can '
            "finish",
            hint=f"Keep one PodDisruptionBudget for {title}: narrow the other selectors so they "
            "no longer match its pod labels, or merge the budgets.",
        )
