"""GPU011 against NVIDIA's floors and the labels a node carries: the CUDA 11.x minor version
compatibility floor is a full version (docs.nvidia.com/deploy/cuda-compatibility, Table 1 and
its footnote: 450.80.02), a GPU node whose driver no label says is not judged (so not every
node is "older"), and an affinity expression is suggested only on a label every kept node
carries (kube-scheduler nodeaffinity: Gt on a missing label matches nothing)."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.conftest import write


def _node(name: str, driver: dict[str, str]) -> str:
    labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true", **driver}
    text = "".join(f"    {k}: '{v}'\n" for k, v in labels.items())
    return (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n{text}"
        "status:\n  allocatable: {nvidia.com/gpu: '8'}\n---\n"
    )


def _full(version: str) -> dict[str, str]:
    return {"nvidia.com/cuda.driver-version.full": version}


def _parts(version: str) -> dict[str, str]:
    major, minor, rev = version.split(".")
    return {
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
    }


def _gpu011(root: Path, nodes: str, image: str) -> Finding:
    write(root, "nodes.yaml", nodes)
    write(
        root,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n"
        f"  containers: [{{name: c, image: '{image}', "
        "resources: {limits: {nvidia.com/gpu: 1}}}]\n",
    )
    [finding] = [f for f in check(root, Config(), "none").findings if f.rule == "GPU011"]
    return finding


def test_cuda_11_needs_450_80_02_under_minor_version_compatibility(tmp_path: Path):
    f = _gpu011(tmp_path, _node("n", _parts("450.51.06")), "nvidia/cuda:11.8.0-base-ubuntu22.04")
    assert f.severity is Severity.ERROR
    assert "which needs driver 450.80.02 or newer (minor version compatibility" in f.message
    assert "every node it can land on is older: n (450.51.06)" in f.message


def test_a_gpu_node_without_driver_labels_is_not_taken_for_older(tmp_path: Path):
    nodes = _node("n535", _parts("535.183.01")) + _node("nolabel", {})
    f = _gpu011(tmp_path, nodes, "nvidia/cuda:13.0.0-runtime-ubuntu22.04")
    assert f.severity is Severity.WARNING
    assert "1 of the 2 nodes it can land on is older: n535 (535.183.01)" in f.message
    assert f.hint.startswith(
        "No node it can land on is known to run it (nolabel carries no driver label"
    )


def test_no_major_label_no_gt_expression(tmp_path: Path):
    nodes = _node("old", _full("535.183.01")) + _node("new", _full("580.65.06"))
    f = _gpu011(tmp_path, nodes, "nvidia/cuda:13.0.0-runtime-ubuntu22.04")
    assert '{key: kubernetes.io/hostname, operator: NotIn, values: ["old"]}' in f.hint
    assert "driver-version.major" not in f.hint
