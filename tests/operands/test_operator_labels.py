"""Deploy labels as the operator rewrites them, read through `operand_placement` per release.

Each row cites the upstream function it pins (NVIDIA/gpu-operator at the release tag); the
expected cells are ours, worked out from that code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import load
from gpudrv_check.model.operands import OperandPlacement, remedy
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


CPU_NODE = node("cpu-a", {"container-toolkit": "true", "device-plugin": "true"}, gpu=False)
CPU_CAUSE = (
    "the operator removes every nvidia.com/gpu.deploy.* label from a node without "
    "nvidia.com/gpu.present=true"
)


@pytest.mark.parametrize(
    ("version", "toolkit", "device_plugin", "broken"),
    [
        # v25.10.0 / v26.3.0 state_manager.go labelGPUNodes: only nodes with gpu.present=true
        # go through updateGPUStateLabels; the others keep their deploy labels as written
        ("25.10.0", "yes", "yes", ["driver", "operator-validator"]),
        ("26.3.0", "yes", "yes", ["driver", "operator-validator"]),
        # v26.7.0 nodelabeling_controller.go updateGPUStateLabels: !hasCommonGPULabel ->
        # removeAllGPUStateLabels, so nothing runs on the CPU node and no chain breaks there
        ("26.7.0", "no (not-gpu)", "no (not-gpu)", []),
    ],
)
def test_deploy_labels_on_a_node_without_gpu_present(
    tmp_path: Path, version: str, toolkit: str, device_plugin: str, broken: list[str]
):
    write(tmp_path, "cp.yaml", cluster_policy("  daemonsets: {}\n"))
    write(tmp_path, "g.yaml", node("gpu-a"))
    write(tmp_path, "c.yaml", CPU_NODE)
    p = placement_at(tmp_path, version)
    assert states(p, "cpu-a")["container-toolkit"] == toolkit
    assert states(p, "cpu-a")["device-plugin"] == device_plugin
    assert [b.missing for b in p.breaks.get("cpu-a", [])] == broken
    assert states(p, "gpu-a")["device-plugin"] == "yes"


def test_v26_7_says_where_the_removed_label_is_and_what_to_do(tmp_path: Path):
    write(tmp_path, "cp.yaml", cluster_policy("  daemonsets: {}\n"))
    write(tmp_path, "c.yaml", CPU_NODE)
    p = placement_at(tmp_path, "26.7.0")
    [cause] = p.cells["cpu-a"]["device-plugin"].causes
    assert cause.detail == f"label nvidia.com/gpu.deploy.device-plugin removed: {CPU_CAUSE}"
    assert (cause.location.file, cause.location.line, cause.location.column) == ("c.yaml", 8, 5)
    hint = remedy(cause, "device-plugin", "cpu-a")
    assert hint is not None and hint.startswith("Leave cpu-a without operands if it has no")
    assert "pci-10de.present=true" in hint
    # a label never written: the same reason, at the node's labels
    [missing] = p.cells["cpu-a"]["driver"].causes
    assert missing.detail == f"label nvidia.com/gpu.deploy.driver missing: {CPU_CAUSE}"


def test_before_v26_7_a_missing_label_on_a_cpu_node_is_the_admins(tmp_path: Path):
    # labelGPUNodes leaves the node alone: labelling it by hand is what would deploy there
    write(tmp_path, "cp.yaml", cluster_policy("  daemonsets: {}\n"))
    write(tmp_path, "c.yaml", CPU_NODE)
    [cause] = placement_at(tmp_path, "26.3.0").cells["cpu-a"]["driver"].causes
    assert cause.kind == "label"
    assert cause.detail.endswith("the operator labels only nodes with nvidia.com/gpu.present=true")


STALE_NODES = (
    node("gpu-a", {"feature.node.kubernetes.io/pci-10de.present": "true"}),
    node(
        "gone-a",
        {
            "feature.node.kubernetes.io/pci-1234.present": "true",
            "driver": "true",
            "container-toolkit": "true",
            "device-plugin": "true",
            "operator-validator": "true",
        },
    ),
)
STALE_CAUSE = (
    "gone-a has nvidia.com/gpu.present=true but no NVIDIA PCI label from NFD "
    "(feature.node.kubernetes.io/pci-10de.present), so the operator sets it to false and "
    "removes every nvidia.com/gpu.deploy.* label"
)


@pytest.mark.parametrize(
    "version",
    [
        # v25.10.0 / v26.3.0 state_manager.go labelGPUNodes: hasCommonGPULabel && !hasGPULabels
        # -> gpu.present=false and removeAllGPUStateLabels
        "25.10.0",
        "26.3.0",
        # v26.7.0 nodelabeling_controller.go reconcileCommonGPULabel sets false, then
        # updateGPUStateLabels removes every state label (!hasCommonGPULabel)
        "26.7.0",
    ],
)
def test_stale_gpu_present_loses_every_deploy_label(tmp_path: Path, version: str):
    write(tmp_path, "cp.yaml", cluster_policy("  daemonsets: {}\n"))
    write(tmp_path, "n.yaml", "---\n".join(STALE_NODES))
    p = placement_at(tmp_path, version)
    assert p.labels["gone-a"]["nvidia.com/gpu.present"] == "false"
    assert set(states(p, "gone-a").values()) == {"no (not-gpu)"}
    assert "gone-a" not in p.breaks
    [ds] = p.daemonsets_of("driver")
    assert ds.desired == ["gpu-a"]
    [cause] = p.cells["gone-a"]["driver"].causes
    assert cause.detail == f"label nvidia.com/gpu.deploy.driver removed: {STALE_CAUSE}"
    assert (cause.location.file, cause.location.line) == ("n.yaml", 19)
    # an operand whose label was never written: at the stale gpu.present
    [gfd] = p.cells["gone-a"]["gpu-feature-discovery"].causes
    assert gfd.detail.startswith("label nvidia.com/gpu.deploy.gpu-feature-discovery missing:")
    assert (gfd.location.file, gfd.location.line) == ("n.yaml", 17)


CC_POLICY = cluster_policy(
    "  sandboxWorkloads: {enabled: true, defaultWorkload: vm-passthrough}\n"
    "  sandboxDevicePlugin: {enabled: true}\n"
    "  vfioManager: {enabled: true}\n"
    "  ccManager: {enabled: true}\n"
)


@pytest.mark.parametrize(
    ("version", "capable", "cell"),
    [
        # v25.10.0 assets/state-cc-manager/0500_daemonset.yaml selects the deploy label and
        # nvidia.com/cc.capable: "true"
        ("25.10.0", None, "no (selector)"),
        ("25.10.0", "true", "yes"),
    ],
)
def test_the_cc_manager_of_v25_10_selects_capable_nodes(
    tmp_path: Path, version: str, capable: str | None, cell: str
):
    labels = {**PASSTHROUGH, **({"nvidia.com/cc.capable": capable} if capable else {})}
    write(tmp_path, "cp.yaml", CC_POLICY)
    write(tmp_path, "n.yaml", node("pt-a", labels))
    assert states(placement_at(tmp_path, version), "pt-a")["cc-manager"] == cell


@pytest.mark.parametrize(("release", "on"), [((25, 10), False), ((26, 3), True), (None, True)])
def test_the_charts_cc_manager_default_per_release(release, on):
    """deployments/gpu-operator/values.yaml ccManager.enabled: false in v25.10.0, true from
    v26.3.0 (chart values without the key take it)."""
    from gpudrv_check.nvidia.operands import HELM, operands_from_operator_config

    version = None if release is None else f"v{release[0]}.{release[1]}.0"
    # mode kata: from v26.3 cc-manager is a Kata operand (isStateEnabled); v25.10 has no mode
    values = {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}
    enabled = operands_from_operator_config(values, HELM, version)
    assert enabled["cc-manager"] is on


VGPU_POLICY = cluster_policy(
    "  sandboxWorkloads: {enabled: true, defaultWorkload: vm-vgpu}\n"
    "  vgpuManager: {enabled: true}\n"
    "  vgpuDeviceManager: {enabled: true}\n"
    "  sandboxDevicePlugin: {enabled: true}\n"
)


@pytest.mark.parametrize(
    ("version", "cell"),
    [
        # assets/state-vgpu-device-manager/0600_daemonset.yaml has no tolerations before v26.7
        # and applyCommonDaemonsetConfig adds none when daemonsets.tolerations is empty
        ("25.10.0", "no (taint)"),
        ("26.3.0", "no (taint)"),
        ("26.7.0", "yes"),  # the asset tolerates nvidia.com/gpu:NoSchedule
    ],
)
def test_the_vgpu_device_manager_before_v26_7_tolerates_no_gpu_taint(
    tmp_path: Path, version: str, cell: str
):
    write(tmp_path, "cp.yaml", VGPU_POLICY)
    write(
        tmp_path,
        "n.yaml",
        node(
            "vgpu-a",
            {"nvidia.com/gpu.workload.config": "vm-vgpu"},
            "taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n",
        ),
    )
    assert states(placement_at(tmp_path, version), "vgpu-a")["vgpu-device-manager"] == cell
    # daemonsets.tolerations replaces every asset's: with it, every release tolerates
    write(
        tmp_path,
        "cp.yaml",
        VGPU_POLICY + "  daemonsets:\n    tolerations:\n"
        "    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n",
    )
    assert states(placement_at(tmp_path, version), "vgpu-a")["vgpu-device-manager"] == "yes"


def test_gpu032_says_the_vgpu_device_manager_carries_no_toleration(tmp_path: Path):
    write(tmp_path, "cp.yaml", VGPU_POLICY)
    write(
        tmp_path,
        "n.yaml",
        node(
            "vgpu-a",
            {"nvidia.com/gpu.workload.config": "vm-vgpu"},
            "taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n",
        ),
    )
    config = Config(matrix=None, operator=OperatorSettings(version="26.3.0"))
    [f] = [f for f in load_and_check(tmp_path, config) if f.rule == "GPU032"]
    assert "vgpu-device-manager carries no toleration in this operator release" in f.message
    assert f.hint == (
        "Add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} to "
        "daemonsets.tolerations (the list is given to every operand DaemonSet)."
    )


def load_and_check(root: Path, config: Config) -> list:
    from gpudrv_check.engine.run import check

    return check(root, config, "none").findings
