"""The operand matrix: which GPU Operator operands run on each GPU node.

Shown when the repo states the operator's configuration (ClusterPolicy, HelmRelease or Argo CD
Application of the gpu-operator chart) or a GPU node carries a `nvidia.com/gpu.deploy.*` label.
A cell is ✓ when the operand's DaemonSet selects the node once the operator has relabelled it
(its deploy label is exactly "true" and the operand is enabled cluster-wide); taints are not
considered here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.nvidia.operands import (
    CLUSTERPOLICY,
    DEPLOY_LABEL_PREFIX,
    HELM,
    OPERAND_NAMES,
    default_workload,
    expected_deploy_labels,
    operands_from_operator_config,
    operands_on_node,
    sandbox_workloads_enabled,
)

if TYPE_CHECKING:
    from gpudrv_check.report import Report

ORDER = 50
TITLE = "Operands per GPU node"
MAX_NODES = 100


def render(report: Report) -> str | None:
    from gpudrv_check.report.markdown import cell

    repo = report.repo
    if repo is None or not repo.gpu_nodes:
        return None
    operator = repo.operator
    has_labels = any(
        key.startswith(DEPLOY_LABEL_PREFIX) for n in repo.gpu_nodes for key in n.labels
    )
    if operator is None and not has_labels:
        return None
    source = CLUSTERPOLICY if operator is None or operator.source == "clusterpolicy" else HELM
    values = operator.values if operator is not None else {}
    enabled = operands_from_operator_config(values, source) if operator is not None else None
    sandbox = sandbox_workloads_enabled(values, source)
    default = default_workload(values)
    rows = []
    used: set[str] = set()
    for node in sorted(repo.gpu_nodes, key=lambda n: n.name)[:MAX_NODES]:
        labels = {k: v for k, v in node.labels.items() if not k.startswith(DEPLOY_LABEL_PREFIX)}
        labels.update(expected_deploy_labels(node.labels, sandbox, default))
        on = set(operands_on_node(labels, enabled))
        used |= on
        rows.append((node.name, on))
    columns = [name for name in OPERAND_NAMES if name in used]
    if not columns:
        return "No operand runs on any GPU node."
    lines = [
        "| node | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for name, on in rows:
        marks = " | ".join("✓" if c in on else "·" for c in columns)
        lines.append(f"| {cell(name)} | {marks} |")
    more = len(repo.gpu_nodes) - MAX_NODES
    if more > 0:
        lines += ["", f"… and {more} more nodes."]
    return "\n".join(lines)
