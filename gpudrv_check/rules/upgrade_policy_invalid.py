"""GPU025 upgrade-policy-invalid: the driver upgrade policy stops or changes the upgrade.

Read as the GPU Operator's upgrade controller reads `driver.upgradePolicy` (ClusterPolicy
`spec.driver.upgradePolicy`, or the gpu-operator chart values), while `autoUpgrade` is on:

- `maxUnavailable` must be an integer or a percentage string: `"5"` (a quoted number) fails
  `GetScaledValueFromIntOrPercent` in k8s-operator-libs `ProcessUpgradeRequiredNodes` on
  every reconcile, and no node is ever upgraded (error).
- A ClusterPolicy whose upgradePolicy has no `podDeletion`: the first node reaching
  pod-deletion-required makes every reconcile fail with "pod deletion spec should not be
  empty" (pod_manager.go `SchedulePodEviction`); the chart always renders `podDeletion` from
  `gpuPodDeletion`, so this is a hand-written ClusterPolicy's problem (error).
- `maxUnavailable: 0` in chart values is rendered as 25% (`| default "25%"` treats 0 as
  empty); in a ClusterPolicy it admits no node that is not cordoned already (warning).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.model.finding import Finding, Severity
from gpudrv_check.model.upgrade_flow import POLICY_PATH, policy_source
from gpudrv_check.nvidia.upgrade import upgrade_policy_findings
from gpudrv_check.rules.context import Context

ID = "GPU025"

_HINTS = {
    ("maxUnavailable",): "Write maxUnavailable as an integer (`2`) or a percentage string "
    '(`"25%"`).',
    (): "Add `podDeletion: {timeoutSeconds: 300}` (or the fields you need) to upgradePolicy.",
}


def check(ctx: Context) -> Iterator[Finding]:
    for config in ctx.repo.operator_configs:
        raw = config.get(*POLICY_PATH)
        for problem in upgrade_policy_findings(raw, policy_source(config)):
            path = (*POLICY_PATH, *problem.path)
            yield ctx.finding(
                ID,
                config.manifest,
                (*config.values_path, *path),
                f"{'.'.join(path)}: {problem.message}",
                hint=_HINTS.get(problem.path),
                severity=Severity.ERROR if problem.severity == "error" else Severity.WARNING,
                location=config.location(path),
            )
