"""GPU001-GPU003 on small repos: which node, which label, which line."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config, parse_config
from tests.conftest import MATRIX, gpu_node, write


def findings(root: Path, rule: str, config: Config | None = None):
    run = check(root, config or Config())
    return [f for f in run.findings if f.rule == rule]


def test_gpu001_missing_image_located_at_the_kernel_label(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "nodes/ok.yaml", gpu_node("ok"))
    write(tmp_path, "nodes/new.yaml", gpu_node("new", kernel="6.8.0-52-generic"))
    [f] = findings(tmp_path, "GPU001")
    assert f.object.name == "new"
    assert (f.location.file, f.location.line, f.location.column) == ("nodes/new.yaml", 9, 5)
    assert "550-6.8.0-52-generic-ubuntu22.04" in f.message
    assert "`550,6.8.0-52-generic,ubuntu22.04`" in f.hint


def test_gpu001_ignores_nodes_whose_driver_is_not_managed(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(
        tmp_path,
        "n.yaml",
        gpu_node("host-driver", kernel="6.8.0-52-generic").replace(
            "  labels:\n", '  labels:\n    nvidia.com/gpu.deploy.driver: "false"\n'
        ),
    )
    write(
        tmp_path,
        "m.yaml",
        gpu_node("no-operands", kernel="6.8.0-52-generic").replace(
            "  labels:\n", '  labels:\n    nvidia.com/gpu.deploy.operands: "false"\n'
        ),
    )
    write(
        tmp_path,
        "c.yaml",
        gpu_node("cpu", kernel="6.8.0-52-generic").replace(
            'nvidia.com/gpu.present: "true"', 'nvidia.com/gpu.present: "false"'
        ),
    )
    assert findings(tmp_path, "GPU001") == []


def test_gpu001_follows_the_operator_os_tag_rule(tmp_path: Path):
    write(
        tmp_path,
        "support-matrix.csv",
        "driver_branch,kernel,os_tag\n550,5.14.0-427.13.1.el9_4.x86_64,rhel9.4\n",
    )
    write(
        tmp_path,
        "n.yaml",
        gpu_node("r", kernel="5.14.0-427.13.1.el9_4.x86_64", os_id="rhel", version="9.4"),
    )
    old = parse_config({"operator": {"version": "v25.10.0"}}, "c.yaml")
    assert findings(tmp_path, "GPU001", old) == []
    [f] = findings(tmp_path, "GPU001", Config())  # newest operator: rhel9
    assert "550-5.14.0-427.13.1.el9_4.x86_64-rhel9" in f.message


def test_gpu002_names_the_missing_label(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    text = gpu_node("node-x").replace(
        "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic\n", ""
    )
    write(tmp_path, "n.yaml", text)
    [f] = findings(tmp_path, "GPU002")
    assert "feature.node.kubernetes.io/kernel-version.full" in f.message
    assert (f.location.line, f.location.column) == (5, 3)  # the labels mapping
    assert findings(tmp_path, "GPU001") == []


def test_gpu003_same_kernel_different_os(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX + "550,5.15.0-119-generic,ubuntu24.04\n")
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b", version="24.04"))
    found = findings(tmp_path, "GPU003")
    assert [(f.object.name, f.location.file, f.location.line) for f in found] == [
        ("a", "a.yaml", 11),
        ("b", "b.yaml", 11),
    ]
    assert "different OS versions found for the same kernel version" in found[0].message


def test_label_keys_can_be_configured(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    text = gpu_node("node-x").replace("nvidia.com/cuda.driver-version.major", "example.com/driver")
    write(tmp_path, "n.yaml", text)
    assert findings(tmp_path, "GPU002")  # default keys: branch unknown
    config = parse_config({"labels": {"driver_branch": "example.com/driver"}}, "c.yaml")
    assert findings(tmp_path, "GPU002", config) == []
