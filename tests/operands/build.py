"""Small repos for operand placement: nodes, hand-written operand DaemonSets, operator configs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpudrv_check.engine.run import check, load
from gpudrv_check.model.operands import OperandPlacement
from gpudrv_check.read.config import Config
from tests.conftest import write

LAB_OPERANDS = (
    ("driver", "nvidia-driver-daemonset"),
    ("container-toolkit", "nvidia-container-toolkit-daemonset"),
    ("device-plugin", "nvidia-device-plugin-daemonset"),
    ("gpu-feature-discovery", "gpu-feature-discovery"),
    ("dcgm-exporter", "nvidia-dcgm-exporter"),
)


def node(name: str, labels: dict[str, str] | None = None, spec: str = "", gpu: bool = True) -> str:
    """A Node document; deploy labels given by operand name ("driver": "true")."""
    lines = [f"    kubernetes.io/hostname: {name}"]
    if gpu:
        lines.append('    nvidia.com/gpu.present: "true"')
    for key, value in (labels or {}).items():
        full = key if "/" in key else f"nvidia.com/gpu.deploy.{key}"
        lines.append(f'    {full}: "{value}"')
    body = "\n".join(lines)
    text = f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n{body}\n"
    return text + (
        "spec:\n" + textwrap.indent(textwrap.dedent(spec), "  ") if spec else "spec: {}\n"
    )


def all_labels(value: str = "true", skip: tuple[str, ...] = ()) -> dict[str, str]:
    return {op: value for op, _ in LAB_OPERANDS if op not in skip}


def daemonset(
    operand: str, name: str | None = None, extra_spec: str = "", tolerations: str | None = None
) -> str:
    """A hand-written operand DaemonSet selecting on its deploy label, as in the lab."""
    name = name or dict(LAB_OPERANDS).get(operand, operand)
    if tolerations is None:
        tolerations = (
            "      tolerations:\n"
            "      - key: nvidia.com/gpu\n"
            "        operator: Exists\n"
            "        effect: NoSchedule\n"
        )
    return (
        "apiVersion: apps/v1\n"
        "kind: DaemonSet\n"
        "metadata:\n"
        f"  name: {name}\n"
        "  namespace: gpu-operator\n"
        "spec:\n"
        "  selector:\n"
        f"    matchLabels: {{app: {name}}}\n"
        "  template:\n"
        f"    metadata: {{labels: {{app: {name}}}}}\n"
        "    spec:\n"
        "      nodeSelector:\n"
        f'        nvidia.com/gpu.deploy.{operand}: "true"\n'
        + tolerations
        + textwrap.indent(textwrap.dedent(extra_spec), "      ")
        + "      containers:\n"
        f"      - name: {operand}\n"
        "        image: registry.k8s.io/pause:3.9\n"
    )


def lab_daemonsets(root: Path, operands: tuple[str, ...] | None = None) -> None:
    for operand, name in LAB_OPERANDS:
        if operands is None or operand in operands:
            write(root, f"operands/{operand}.yaml", daemonset(operand, name))


def placement(root: Path) -> OperandPlacement:
    return load(root, Config(matrix=None)).repo.operand_placement


def findings(root: Path, rule: str):
    run = check(root, Config(matrix=None))
    return [f for f in run.findings if f.rule == rule]


def states(p: OperandPlacement, node_name: str) -> dict[str, str]:
    return {op: cell.text for op, cell in p.cells[node_name].items()}


def desired(p: OperandPlacement) -> dict[str, int]:
    return {ds.name: ds.desired_number_scheduled for ds in p.daemonsets}
