"""Operand chains under the operator (controllers/state_manager.go, assets/*/..._daemonset.yaml).

Only the operator-validator's toolkit validation writes /run/nvidia/validations/toolkit-ready
(cmd/nvidia-validator/main.go `toolkitStatusFile`); the device plugin, GFD, DCGM, DCGM Exporter,
the MIG manager and the MPS control daemon wait for that file in their init containers, so with
the validator off a node they wait forever although the toolkit runs.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import cluster_policy, write
from tests.operands.build import findings, node, placement, states

CLUSTERPOLICY = cluster_policy("  dcgm: {enabled: true}\n")


def test_validator_off_a_node_leaves_its_toolkit_ready_dependents_waiting(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "n.yaml", node("gpu-a", {"operator-validator": "false"}))
    p = placement(tmp_path)
    assert states(p, "gpu-a")["container-toolkit"] == "yes"
    assert states(p, "gpu-a")["operator-validator"].startswith("no")
    [chain] = [b for b in p.breaks["gpu-a"] if b.missing == "operator-validator"]
    assert chain.running == ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm")
    assert chain.waits  # operator pods: their init containers wait for toolkit-ready
    assert [f.object.name for f in findings(tmp_path, "GPU030")] == ["gpu-a"]


def test_mps_control_daemon_on_mps_capable_device_plugin_nodes(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "a.yaml", node("mps", {"nvidia.com/mps.capable": "true"}))
    write(tmp_path, "b.yaml", node("plain"))
    p = placement(tmp_path)
    assert states(p, "mps")["mps-control-daemon"] == "yes"
    assert states(p, "plain")["mps-control-daemon"].startswith("no")
    [ds] = p.daemonsets_of("mps-control-daemon")
    assert (ds.name, ds.desired) == ("nvidia-device-plugin-mps-control-daemon", ["mps"])


def test_no_mps_column_without_an_mps_capable_node(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "b.yaml", node("plain"))
    assert "mps-control-daemon" not in placement(tmp_path).operands


def test_precompiled_cluster_policy_runs_one_driver_daemonset_per_kernel(tmp_path: Path):
    # object_controls.go precompiledDriverDaemonsets: one per kernelVersionMap entry, named
    # nvidia-driver-daemonset-<sanitized kernel>-<ID+VERSION_ID>, selecting kernel-version.full
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + "  driver: {usePrecompiled: true, version: '550'}\n")
    kernel = "feature.node.kubernetes.io/kernel-version.full"
    os_labels = {
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    }
    write(tmp_path, "a.yaml", node("a", {kernel: "5.15.0-119-generic", **os_labels}))
    write(tmp_path, "b.yaml", node("b", {kernel: "5.15.0-107-generic", **os_labels}))
    p = placement(tmp_path)
    assert [(ds.name, ds.desired) for ds in p.daemonsets_of("driver")] == [
        ("nvidia-driver-daemonset-5.15.0-107-generic-ubuntu22.04", ["b"]),
        ("nvidia-driver-daemonset-5.15.0-119-generic-ubuntu22.04", ["a"]),
    ]


def test_no_owner_means_no_driver_and_says_why(tmp_path: Path):
    # AssignOwners fails on two matching CRs: no pool, so the toolkit waits for a driver forever
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + "  driver: {useNvidiaDriverCRD: true}\n")
    write(tmp_path, "a.yaml", node("gpu-a"))
    for name in ("x", "y"):
        write(
            tmp_path,
            f"{name}.yaml",
            f"apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {{name: {name}}}\n"
            "spec: {repository: r.io/nv, image: driver, version: '550.90.07'}\n",
        )
    p = placement(tmp_path)
    [cause] = p.cells["gpu-a"]["driver"].causes
    assert cause.detail == "no NVIDIADriver owns it: the owner assignment fails (GPU015)"
    assert cause.location.file == "x.yaml"
    assert [b.missing for b in p.breaks["gpu-a"]][0] == "driver"


def test_nvidiadriver_pools_run_with_driver_enabled_false(tmp_path: Path):
    # nvidiadriver_controller.go Reconcile checks useNvidiaDriverCRD, not driver.enabled (v26.7)
    driver = "  driver: {enabled: false, useNvidiaDriverCRD: true}\n"
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + driver)
    os_release = "feature.node.kubernetes.io/system-os_release"
    write(
        tmp_path,
        "a.yaml",
        node("gpu-a", {f"{os_release}.ID": "ubuntu", f"{os_release}.VERSION_ID": "22.04"}),
    )
    write(
        tmp_path,
        "gpu.yaml",
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: gpu}\n"
        "spec: {repository: r.io/nv, image: driver, version: '550.90.07'}\n",
    )
    p = placement(tmp_path)
    assert p.cells["gpu-a"]["driver"].daemonsets == ("nvidia-gpu-driver-gpu-ubuntu22.04",)
    assert "gpu-a" not in p.breaks
