"""GPU025 upgrade-policy-invalid: the driver upgrade policy stops or changes the upgrade.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.k8s.selector_string import parse_selector
from gpudrv_check.model.operator import OperatorConfig
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.upgrade_flow import POLICY_PATH, policy_source
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy, upgrade_policy_findings
from gpudrv_check.nvidia.upgrade_controller import NEVER_COMPLETE_KINDS
from gpudrv_check.rules.context import Context

ID = "GPU025"

_HINTS: dict[tuple[str, ...], str] = {
    (): "Add `podDeletion: {timeoutSeconds: 300}` (or the fields you need) to upgradePolicy.",
}


def _endless_wait_selector(config: OperatorConfig) -> str | None:
    """waitForCompletion.podSelector when the controller waits on it without a timeout."""
    policy = effective_upgrade_policy(config.get(*POLICY_PATH), policy_source(config))
    wait = policy["waitForCompletion"]
    selector = str(wait.get("podSelector") or "")
    if policy.get("autoUpgrade") is not True or not selector or wait.get("timeoutSeconds"):
        return None
    return selector


def reads_all_namespaces(repo: Repo) -> bool:
    """Whether this run's check reads the workloads of every namespace (its `reads:` entry
    with `when:`): only to see which pods an endless waitForCompletion selector matches."""
    return any(_endless_wait_selector(config) for config in repo.operator_configs)


def _waits_for_ever(ctx: Context, config: OperatorConfig) -> Finding | None:
    """waitForCompletion.podSelector over pods that never finish, with timeoutSeconds 0
    (pod_manager.go ScheduleCheckOnPodCompletion: Running or Pending pods keep it waiting)."""
    selector = _endless_wait_selector(config)
    if selector is None:
        return None
    matcher = parse_selector(selector)
    if matcher is None:
        return None
    disruption = ctx.repo.disruption
    for workload in ctx.repo.workloads:
        if workload.kind not in NEVER_COMPLETE_KINDS or not matcher(workload.pod_labels):
            continue
        if not disruption.pods(workload).gpu_names:
            continue
        path = (*POLICY_PATH, "waitForCompletion", "podSelector")
        return ctx.config_finding(
            ID,
            config,
            path,
            f"{'.'.join(path)} {selector!r} matches the pods of {workload.kind} "
            f"{workload.namespace}/{workload.name or '?'}, which never complete, and "
            "waitForCompletion.timeoutSeconds is 0: the first such GPU node waits in "
            "wait-for-jobs-required for ever, and with it every node behind it",
            hint="Select only Job pods, or set waitForCompletion.timeoutSeconds.",
            severity=Severity.ERROR,
        )
    return None


def check(ctx: Context) -> Iterator[Finding]:
    for config in ctx.repo.operator_configs:
        forever = _waits_for_ever(ctx, config)
        if forever is not None:
            yield forever
        raw = config.get(*POLICY_PATH)
        for problem in upgrade_policy_findings(raw, policy_source(config)):
            path = (*POLICY_PATH, *problem.path)
            yield ctx.config_finding(
                ID,
                config,
                path,
                f"{'.'.join(path)}: {problem.message}",
                hint=problem.hint or _HINTS.get(problem.path),
                severity=Severity.ERROR if problem.severity == "error" else Severity.WARNING,
            )
