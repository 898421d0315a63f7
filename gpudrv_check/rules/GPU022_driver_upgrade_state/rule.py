"""GPU022 driver-upgrade-state: a node's driver upgrade state is unknown or failed, or skipped.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity, quoted
from gpudrv_check.model.node import Node
from gpudrv_check.nvidia.upgrade import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_FAILED,
    UPGRADE_STATE_LABEL,
    UPGRADE_STATES,
    is_known_state,
)
from gpudrv_check.rules.context import Context

ID = "GPU022"


def _cleared_reason(ctx: Context) -> str | None:
    """Why the upgrade controller removes every upgrade-state label, or None."""
    from gpudrv_check.model.upgrade_flow import CONTROLLER, policy_source, upgrade_flow
    from gpudrv_check.nvidia.operands import sandbox_workloads_enabled

    flow = upgrade_flow(ctx.repo)
    config = flow.config
    if config is None or flow.kind == CONTROLLER:
        return None
    if sandbox_workloads_enabled(config.values, policy_source(config)):
        # the controller clears the labels whatever autoUpgrade says
        return f"sandboxWorkloads.enabled is true in {config.describe()}"
    return f"driver.upgradePolicy.autoUpgrade is off in {config.describe()}"


def _cleared(ctx: Context, node: Node, state: str, reason: str) -> Finding:
    return ctx.finding(
        ID,
        node,
        node.label_path(UPGRADE_STATE_LABEL),
        f"node {node.name} has {UPGRADE_STATE_LABEL}={quoted(state)}, which the upgrade "
        f"controller removes ({reason}; upgrade_controller.go removeNodeUpgradeStateLabels): it "
        "records nothing",
        hint="Remove the label from the inventory"
        + (
            ", or turn sandboxWorkloads.enabled off if the controller should upgrade this node "
            "(with sandbox workloads on, it clears the labels whatever autoUpgrade says)."
            if reason.startswith("sandboxWorkloads")
            else ", or turn autoUpgrade on if the controller should upgrade this node."
        ),
        severity=Severity.INFO,
        location=node.label_location(UPGRADE_STATE_LABEL),
    )


def check(ctx: Context) -> Iterator[Finding]:
    # a label value is repo text of any length: messages quote it (`quoted`, cut to about 120
    # characters), the empty one included (`''`)
    cleared = _cleared_reason(ctx)
    for node in ctx.repo.nodes:
        state = node.labels.get(UPGRADE_STATE_LABEL)
        path = node.label_path(UPGRADE_STATE_LABEL)
        if (
            cleared is not None
            and state is not None
            and (state == UPGRADE_STATE_FAILED or not is_known_state(state))
        ):
            yield _cleared(ctx, node, state, cleared)
        elif state is not None and not is_known_state(state):
            yield ctx.finding(
                ID,
                node,
                path,
                f"node {node.name} has {UPGRADE_STATE_LABEL}={quoted(state)}, which is not a "
                "state the GPU Operator's upgrade controller writes; nothing acts on it",
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
        if skip is None or skip == "false":  # "false": upgraded, as it reads
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
                f"node {node.name} has {UPGRADE_SKIP_LABEL}={quoted(skip)}, but the upgrade "
                "controller skips a node only for the exact value true; this node is upgraded",
                hint=f'Write `{UPGRADE_SKIP_LABEL}: "true"` to skip it, or remove the label.',
                severity=Severity.WARNING,
                location=node.label_location(UPGRADE_SKIP_LABEL),
            )
