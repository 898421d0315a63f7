"""GPU023 upgrade-drain-unscoped: the driver upgrade policy drains without a pod selector.

The GPU Operator upgrades a node's driver by first deleting the pods that use a GPU
(`podDeletion`). With `drain.enable: true`, when that is not enough it drains the node, and a
drain without `drain.podSelector` evicts every pod on it - web servers, databases, anything
that happened to be scheduled there - not only GPU workloads. Read from the ClusterPolicy
(`spec.driver.upgradePolicy`) or the gpu-operator chart values (`driver.upgradePolicy`, in a
Flux HelmRelease or an Argo CD Application), with the CRD defaults (`drain.enable` false,
`autoUpgrade` false; the chart turns `autoUpgrade` on). While `autoUpgrade` is off the policy
is not acted on; the finding says so, since turning it on activates the drain.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.model.finding import Finding
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy
from gpudrv_check.rules.context import Context

ID = "GPU023"
POLICY_PATH = ("driver", "upgradePolicy")


def check(ctx: Context) -> Iterator[Finding]:
    for config in ctx.repo.operator_configs:
        source = "clusterpolicy" if config.source == "clusterpolicy" else "helm"
        raw = config.get(*POLICY_PATH)
        policy = effective_upgrade_policy(raw, source)
        drain = policy["drain"]
        if drain.get("enable") is not True or drain.get("podSelector"):
            continue
        where = (
            "spec.driver.upgradePolicy" if source == "clusterpolicy" else ("driver.upgradePolicy")
        )
        inactive = (
            ""
            if policy.get("autoUpgrade") is True
            else " (not acted on while autoUpgrade is false; turning it on activates this)"
        )
        path = (*POLICY_PATH, "drain", "enable")
        yield ctx.finding(
            ID,
            config.manifest,
            (*config.values_path, *path),
            f"{where}.drain.enable is true without drain.podSelector: when deleting the GPU "
            "pods is not enough, the driver upgrade drains the node and evicts every pod on "
            f"it, not only GPU workloads{inactive}",
            location=config.location(path),
        )
