"""Deploy labels as the operator rewrites them, read through `operand_placement` per release.

Each row cites the upstream function it pins (NVIDIA/gpu-operator at the release tag); the
expected cells are ours, worked out from that code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import load
from gpudrv_check.model.operands import OperandPlacement
from gpudrv_check.read.config import Config, OperatorSettings
from tests.conftest import cluster_policy, write
from tests.operands.build import node, states


def placement_at(root: Path, version: str) -> OperandPlacement:
    config = Config(matrix=None, operator=OperatorSettings(version=version))
    return load(root, config).repo.operand_placement


KATA_POLICY = cluster_policy(
    "  sandboxWorkloads: {enabled: true, mode: kata, defaultWorkload: vm-passthrough}\n"
    "  kataSandboxDevicePlugin: {enabled: true}\n"
    "  vfioManager: {enabled: true}\n"
)
PASSTHROUGH = {"nvidia.com/gpu.workload.config": "vm-passthrough"}


@pytest.mark.parametrize(
    ("version", "kata_label", "cell"),
    [
        # v26.3.0 controllers/state_manager.go getEffectiveStateLabels(vm-passthrough, kata):
        # the Kata device plugin's label replaces sandbox-device-plugin's
        ("26.3.0", "true", "yes"),
        # v26.7.0 nodelabeling_controller.go updateGPUStateLabels: the same function
        ("26.7.0", "true", "yes"),
        # v25.10.0 has no sandboxWorkloads.mode and no Kata device plugin (isStateEnabled)
        ("25.10.0", None, "no (disabled)"),
    ],
)
def test_kata_mode_labels_a_passthrough_node_for_the_kata_device_plugin(
    tmp_path: Path, version: str, kata_label: str | None, cell: str
):
    write(tmp_path, "cp.yaml", KATA_POLICY)
    write(tmp_path, "n.yaml", node("pt-a", PASSTHROUGH))
    p = placement_at(tmp_path, version)
    assert p.mode == "operator"  # the sources of the operand set, not the sandbox mode
    assert p.labels["pt-a"].get("nvidia.com/gpu.deploy.kata-sandbox-device-plugin") == kata_label
    assert states(p, "pt-a")["kata-sandbox-device-plugin"] == cell
    assert states(p, "pt-a")["vfio-manager"] == "yes"
    assert not p.breaks
