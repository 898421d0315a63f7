"""GPU031 gpu-node-missing-operands: a GPU node no operand reaches, or one missing an operand
every other GPU node runs.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.operands import (
    MIG_MANAGER,
    OPERANDS_OFF,
    TAINT,
    WORKLOAD_TYPE,
    Cause,
    mig_capable,
    remedy,
)
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, clauses

ID = "GPU031"


def _reasons(by_operand: dict[str, tuple[Cause, ...]]) -> tuple[str, Cause | None]:
    """The reasons as one sentence, and the cause to point at."""
    distinct: list[Cause] = []
    for causes in by_operand.values():
        for cause in causes:
            if cause not in distinct:
                distinct.append(cause)
    shared = [c for c in distinct if all(c in causes for causes in by_operand.values())]
    for kind in (OPERANDS_OFF, TAINT):
        for cause in shared:
            if cause.kind == kind:
                return cause.cited(), cause
    if len(distinct) == 1:
        return distinct[0].cited(), distinct[0]
    parts = [f"{operand}: {causes[0].cited()}" for operand, causes in by_operand.items() if causes]
    return "; ".join(parts), (distinct[0] if distinct else None)


def check(ctx: Context) -> Iterator[Finding]:
    placement = ctx.repo.operand_placement
    gpu_rows = [n for n in placement.gpu_rows if placement.cells.get(n.name)]
    # a node is compared with the GPU nodes of its workload type: a vm-passthrough node runs
    # other operands than a container node, by the operator's design (updateGPUStateLabels)
    kind_of = placement.workloads
    runs_on: dict[tuple[str | None, str], int] = {}  # (type, operand) -> GPU nodes running it
    peers: dict[str | None, int] = {}  # type -> GPU nodes
    for node in gpu_rows:
        kind = kind_of.get(node.name)
        peers[kind] = peers.get(kind, 0) + 1
        for operand, cell in placement.cells[node.name].items():
            runs_on[kind, operand] = runs_on.get((kind, operand), 0) + cell.running
    for node in gpu_rows:
        row = placement.cells.get(node.name, {})
        if not row:
            continue
        if not any(cell.running for cell in row.values()):
            # operands meant to be absent say nothing about why the node gets none
            by_operand = {
                op: cell.causes
                for op, cell in row.items()
                if not (cell.disabled or cell.preinstalled)
                and not (op == MIG_MANAGER and not mig_capable(node))
            }
            if not by_operand:
                continue
            text, cause = _reasons(by_operand)
            hint = remedy(cause, None, node.name) if cause else None
            yield ctx.finding(
                ID,
                cause.about if cause else node,
                cause.path if cause else node.name_path,
                f"GPU node {node.name} gets no GPU Operator operand ({', '.join(by_operand)}): "
                f"{text}",
                hint=(hint + ".") if hint else None,
                location=cause.location if cause else None,
                obj=node.ref,
            )
            continue
        kind = kind_of.get(node.name)
        others = peers[kind] - 1
        if not others:
            continue
        chain_missing = {b.missing for b in placement.breaks.get(node.name, [])}
        for operand, cell in row.items():
            if cell.running or cell.preinstalled or cell.disabled or not cell.causes:
                continue
            if operand in chain_missing or (operand == MIG_MANAGER and not mig_capable(node)):
                continue
            if runs_on.get((kind, operand), 0) < others:  # all its peers run it, not this node
                continue
            cause = cell.causes[0]
            hint = remedy(cause, operand, node.name)
            # the first few causes, then a count: one per DaemonSet of a pooled operand made
            # a message longer than a finding holds (core/finding.py MAX_MESSAGE)
            shown = [c.cited() for c in cell.causes[:MAX_NAMES]]
            yield ctx.finding(
                ID,
                cause.about,
                cause.path,
                f"GPU node {node.name} lacks {operand}, which runs on every other GPU node"
                f"{f' of its workload type, {kind}' if len(peers) > 1 and kind else ''} "
                f"({others}): {clauses(shown, 'reason', total=len(cell.causes))}",
                hint=(
                    hint + f"; if {node.name} is meant to run without {operand}, keep its label "
                    "at false and accept this warning."
                )
                if hint and cause.kind != WORKLOAD_TYPE  # its label is the operator's to set
                else hint or None,
                location=cause.location,
                obj=node.ref,
            )
