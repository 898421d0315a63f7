"""GPU022 driver-upgrade-state: a node's driver upgrade state is unknown or failed, or skipped.

The GPU Operator's upgrade controller records where each node stands in the node label
`nvidia.com/gpu-driver-upgrade-state`; its value tells in one line where an upgrade stopped.
The states, in order (NVIDIA/k8s-operator-libs pkg/upgrade/consts.go): upgrade-required,
cordon-required, wait-for-jobs-required, pod-deletion-required, drain-required,
node-maintenance-required, post-maintenance-required, pod-restart-required,
validation-required, uncordon-required, upgrade-done, and upgrade-failed.

- A value that is not one of these (a typo, a state of another operator) is an error: nothing
  reads it, and whoever wrote it expects something to happen.
- `upgrade-failed` is an error: pod deletion, drain or validation failed on that node and it
  needs a look (its driver pod, and the budgets of the pods on it).
- A node labelled `nvidia.com/gpu-driver-upgrade.skip=true` is noted (info): the controller
  leaves its driver as it is. The controller compares the value with exactly `true`; any
  other value is ignored, which is reported as a warning.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.model.finding import Finding, Severity
from gpudrv_check.nvidia.upgrade import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_FAILED,
    UPGRADE_STATE_LABEL,
    UPGRADE_STATES,
    is_known_state,
)
from gpudrv_check.rules.context import Context

ID = "GPU022"


def check(ctx: Context) -> Iterator[Finding]:
    for node in ctx.repo.nodes:
        state = node.labels.get(UPGRADE_STATE_LABEL)
        path = node.label_path(UPGRADE_STATE_LABEL)
        if state is not None and not is_known_state(state):
            yield ctx.finding(
                ID,
                node,
                path,
                f"node {node.name} has {UPGRADE_STATE_LABEL}={state}, which is not a state the "
                "GPU Operator's upgrade controller writes; nothing acts on it",
                hint=f"Use one of {', '.join(UPGRADE_STATES)}, or remove the label and let the "
                "controller set it.",
                severity=Severity.ERROR,
                location=node.label_location(UPGRADE_STATE_LABEL),
            )
        elif state == UPGRADE_STATE_FAILED:
            yield ctx.finding(
                ID,
                node,
                path,
                f"the driver upgrade failed on node {node.name} ({UPGRADE_STATE_LABEL}="
                f"{state}): pod deletion, drain or validation did not complete there",
                hint="Check the node's driver pod and the PodDisruptionBudgets of the pods on it "
                "(`gpudrv-check plan NODE --driver VERSION` lists them); the controller moves "
                "the node on once its driver pod runs the new driver and is Ready.",
                severity=Severity.ERROR,
                location=node.label_location(UPGRADE_STATE_LABEL),
            )
        skip = node.labels.get(UPGRADE_SKIP_LABEL)
        if skip is None:
            continue
        skip_path = node.label_path(UPGRADE_SKIP_LABEL)
        if skip == "true":
            yield ctx.finding(
                ID,
                node,
                skip_path,
                f"node {node.name} is excluded from automatic driver upgrades "
                f"({UPGRADE_SKIP_LABEL}=true); its driver stays as it is until the label is "
                "removed",
                hint="Remove the label when the node may be upgraded again.",
                severity=Severity.INFO,
                location=node.label_location(UPGRADE_SKIP_LABEL),
            )
        else:
            yield ctx.finding(
                ID,
                node,
                skip_path,
                f"node {node.name} has {UPGRADE_SKIP_LABEL}={skip!s}, but the upgrade "
                "controller skips a node only for the exact value true; this node is upgraded",
                hint=f'Write `{UPGRADE_SKIP_LABEL}: "true"` to skip it, or remove the label.',
                severity=Severity.WARNING,
                location=node.label_location(UPGRADE_SKIP_LABEL),
            )
