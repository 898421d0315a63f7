"""The operand matrix: which GPU Operator operands run on each GPU node, and the chain.

Read from the model's operand placement (`repo.operand_placement`, model/operands.py), the
same facts `gpudrv-check operands` prints and rule GPU030 reports: the operand DaemonSets in
the repo or derived from the operator configuration, node labels as the operator rewrites
them, node selectors, affinity and taints. Shown when there is an operand DaemonSet or an
operator configuration. A cell is ✓ (runs), `host` (the driver is pre-installed) or · (not
there: `gpudrv-check operands` says why); an operand that runs on no GPU node shown is left
out; CHAIN is `broken` when a link of the operand chain is missing on the node (GPU030).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.model.operands import MODE_NONE

if TYPE_CHECKING:
    from gpudrv_check.model.operands import Cell, OperandPlacement
    from gpudrv_check.report import Report

ORDER = 50
TITLE = "Operands per GPU node"
MAX_NODES = 100


def _mark(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.running:
        return "✓"
    return "host" if cell.preinstalled else "·"


def _runs(placement: OperandPlacement, node: str, operand: str) -> bool:
    found = placement.cells.get(node, {}).get(operand)
    return found is not None and found.running


def render(report: Report) -> str | None:
    from gpudrv_check.report.markdown import cell

    repo = report.repo
    if repo is None or not repo.gpu_nodes:
        return None
    placement = repo.operand_placement
    if placement.mode == MODE_NONE:
        return None
    rows = placement.gpu_rows[:MAX_NODES]
    # an operand that runs on none of them (switched off, say) is left out
    columns = [op for op in placement.operands if any(_runs(placement, n.name, op) for n in rows)]
    if not rows or not columns:
        return "No operand runs on any GPU node."
    lines = [
        "| node | " + " | ".join(columns) + " | chain |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for node in rows:
        cells = placement.cells.get(node.name, {})
        marks = " | ".join(_mark(cells.get(c)) for c in columns)
        lines.append(f"| {cell(node.name)} | {marks} | {placement.chain(node.name)} |")
    more = len(placement.gpu_rows) - MAX_NODES
    if more > 0:
        lines += ["", f"… and {more} more nodes."]
    return "\n".join(lines)
