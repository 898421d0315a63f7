"""`gpudrv-check report`: KEY=value facts, state counts in the controller's order."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_main, write
from tests.upgrade.conftest import gpu_cluster


def test_state_counts_in_flow_order_and_unknown_last(tmp_path: Path):
    state = "nvidia.com/gpu-driver-upgrade-state"
    gpu_cluster(
        tmp_path,
        5,
        {
            "gpu-0": {state: "upgrade-done"},
            "gpu-1": {state: "drain-required"},
            "gpu-2": {state: "upgrade-done"},
            "gpu-3": {state: "weird.state"},
        },
    )
    write(tmp_path, "cpu.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-0\n")
    result = run_main("report", str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "NODES=5\n"
        "SKEW=0\n"
        "MATRIX_ROWS=1\n"
        "UPGRADE_STATE_DRAIN_REQUIRED=1\n"
        "UPGRADE_STATE_UPGRADE_DONE=2\n"
        "UPGRADE_STATE_WEIRD_STATE=1\n"
    )


def test_skew_counts_missing_images_and_missing_labels(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    write(
        tmp_path,
        "more.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: bare\n  labels:\n"
        '    nvidia.com/gpu.present: "true"\n',
    )
    write(tmp_path, "support-matrix.csv", "driver_branch,kernel,os_tag\n# none built yet\n\n")
    result = run_main("report", str(tmp_path))
    assert result.stdout == "NODES=2\nSKEW=2\nMATRIX_ROWS=0\n"
    assert run_main("audit", str(tmp_path)).stdout.count("MISSING") == 2


def test_without_a_matrix_and_for_an_unlabelled_node(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    result = run_main("report", str(tmp_path), "--matrix", "none", "--node", "gpu-0")
    assert result.stdout == (
        "NODES=1\nNODE=gpu-0\nTAG=550-5.15.0-119-generic-ubuntu22.04\nUPGRADE_STATE=\n"
    )


def test_unknown_node_is_a_usage_error(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    result = run_main("report", str(tmp_path), "--node", "gpu-7")
    assert result.returncode == 2 and "no node 'gpu-7'" in result.stderr
