"""GPU023 upgrade-drain-unscoped: the driver upgrade policy drains without a pod selector.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.upgrade_flow import POLICY_PATH, policy_source
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy
from gpudrv_check.rules.context import Context

ID = "GPU023"


def check(ctx: Context) -> Iterator[Finding]:
    for config in ctx.repo.operator_configs:
        source = policy_source(config)
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
        yield ctx.config_finding(
            ID,
            config,
            path,
            f"{where}.drain.enable is true without drain.podSelector: when deleting the GPU "
            "pods is not enough, the driver upgrade drains the node and evicts every pod on "
            f"it, not only GPU workloads{inactive}",
        )

    yield from _nvidiadriver_policies(ctx)


def _nvidiadriver_policies(ctx: Context) -> Iterator[Finding]:
    from gpudrv_check.model.driver import operator_version
    from gpudrv_check.model.driver_plan import nvidiadriver_manifests
    from gpudrv_check.nvidia.nvidiadriver import has_owner_assignment

    if not has_owner_assignment(operator_version(ctx.repo)):
        return  # before v26.7 the ClusterPolicy's driver.upgradePolicy drives every CR
    for cr in nvidiadriver_manifests(ctx.repo.manifests):
        raw = cr.get("spec", "upgradePolicy")
        if raw is None:
            continue
        drain = effective_upgrade_policy(raw)["drain"]
        if drain.get("enable") is not True or drain.get("podSelector"):
            continue
        path = ("spec", "upgradePolicy", "drain", "enable")
        yield ctx.finding(
            ID,
            cr,
            path,
            f"NVIDIADriver {cr.name}: spec.upgradePolicy.drain.enable is true without "
            "drain.podSelector: when deleting the GPU pods is not enough, the upgrade of the "
            "nodes it owns drains them and evicts every pod, not only GPU workloads",
        )
