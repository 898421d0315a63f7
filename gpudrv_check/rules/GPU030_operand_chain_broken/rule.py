"""GPU030 operand-chain-broken: an operand runs on a node while one it depends on does not.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.operands import (
    DEVICE_PLUGIN,
    DRIVER,
    TOOLKIT,
    ChainBreak,
    remedy,
)
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, clauses

ID = "GPU030"


def _and(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def consequence(chain: ChainBreak) -> str:
    running, missing = chain.running, chain.missing
    if chain.waits:
        return (
            f"the operator's {_and(running)} pod{'s' if len(running) > 1 else ''} wait in "
            f"init containers for {missing} and never start"
        )
    if missing == TOOLKIT and DEVICE_PLUGIN in running:
        return (
            "the device plugin advertises nvidia.com/gpu there, so pods are scheduled onto the "
            "node and never see a GPU, and nothing reports an error"
        )
    if missing == DRIVER:
        return "without the kernel module there is no /dev/nvidia* for them to use"
    if missing == TOOLKIT:
        return "without the NVIDIA container runtime they cannot reach the GPUs"
    if missing == DEVICE_PLUGIN:
        return "the validator's device plugin check never passes"
    return f"they need {missing}"


def check(ctx: Context) -> Iterator[Finding]:
    placement = ctx.repo.operand_placement
    for node in placement.rows:
        for chain in placement.breaks.get(node.name, []):
            # the first few causes, then a count: one per DaemonSet of a pooled operand made
            # a message longer than a finding holds, cut before its consequence (MAX_MESSAGE)
            causes = chain.causes
            shown = [c.cited() for c in causes[:MAX_NAMES]]
            why = clauses(shown, "reason", total=len(causes)) or "no reason found"
            message = (
                f"node {node.name} runs {_and(chain.running)} without {chain.missing}: {why}; "
                f"{consequence(chain)}"
            )
            cause = chain.causes[0] if chain.causes else None
            hint = remedy(cause, chain.missing, node.name) if cause else None
            if hint is not None:
                hint += f", or take {_and(chain.running)} off the node as well."
            if chain.missing == DRIVER:
                hint = (hint or "") + (
                    " If the driver is installed on the host, record it with "
                    "nvidia.com/gpu.deploy.driver=false."
                )
            yield ctx.finding(
                ID,
                cause.about if cause else node,
                cause.path if cause else node.name_path,
                message,
                hint=hint.strip() if hint else None,
                location=cause.location if cause else None,
                obj=node.ref,
            )
