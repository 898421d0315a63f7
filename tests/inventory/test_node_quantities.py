"""A node's quantities as the API server and the kubelet write them (docs/inventory.md).

- the kubelet's device manager writes a device count as `resource.NewQuantity(n, DecimalSI)`
  (kubernetes pkg/kubelet/cm/devicemanager `GetCapacity`): 2000 time-sliced replicas are `2k`;
- the API server refuses a Node whose quantities do not parse (apimachinery resource
  `ParseQuantity`), or that pkg/apis/core/validation `ValidateNodeResources` →
  `ValidateResourceQuantityValue` refuses (negative; not whole for `pods` and extended
  resources), whose name is no DNS subdomain (`ValidateNodeName`), or whose labels
  `ValidateLabels` refuses: GPU040 in a `kind: Node`, GPU005 in a NodeInventory entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpudrv_check.model.inventory import build_inventory
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import run_main, write

_TIME_SLICED = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-ts-1
    labels: {nvidia.com/gpu.present: "true"}
  status:
    capacity: {cpu: "96", nvidia.com/gpu: 2k}
    allocatable: {cpu: "95", nvidia.com/gpu: 2k}
"""

_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: infer, namespace: default}}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      limits: {{nvidia.com/gpu: "{gpus}"}}
"""


def _findings(root: Path) -> list[tuple]:
    result = run_main("check", str(root), "--no-cache", "--matrix", "none", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return [
        (
            f["rule"],
            f["location"]["file"],
            f["location"]["line"],
            f["location"]["column"],
            f["message"],
        )
        for f in json.loads(result.stdout)["findings"]
        if f["rule"] not in ("GPU002", "GPU011")  # no driver labels, no CUDA image: not here
    ]


def test_a_decimal_si_gpu_count_is_the_count_it_says(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", _TIME_SLICED)
    write(tmp_path, "pod.yaml", _POD.format(gpus=1))
    assert _findings(tmp_path) == []  # no GPU012: the node offers 2000 GPUs
    write(tmp_path, "pod.yaml", _POD.format(gpus=2001))
    [(rule, file, line, column, message)] = _findings(tmp_path)
    assert (rule, file, line, column) == ("GPU010", "pod.yaml", 9, 16)
    assert message.endswith(
        "each pod requests 2001 nvidia.com/gpu; the most any node offers is 2000 (on gpu-ts-1)."
    )


_BAD_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: GPU_2
  labels:
    bad key: x
    pool: has space
    nvidia.com/gpu.present: "true"
status:
  capacity: {nvidia.com/gpu: abc, cpu: "1.5.3", memory: 1.5, pods: "110"}
  allocatable: {nvidia.com/gpu: "8.5", cpu: "-64", pods: 1k, example.com/fpga: 500m}
"""


def _read(text: str, rel: str):
    nodes, findings = build_inventory(parse_manifest_bytes(rel, text.encode()).manifests)
    where = [(f.rule, f.location.line, f.location.column, f.message) for f in findings]
    return nodes, where, {f.location.line * 100 + f.location.column: f.hint for f in findings}


def test_a_node_object_with_values_the_api_server_refuses_is_gpu040() -> None:
    nodes, found, fixes = _read(_BAD_NODE, "nodes.yaml")
    subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric"
    regex = "quantities must match the regular expression"
    expected = [
        ("GPU040", 4, 3, f'metadata.name: Invalid value: "GPU_2": {subdomain}'),
        ("GPU040", 6, 5, 'metadata.labels: Invalid value: "bad key": name part must consist'),
        ("GPU040", 7, 5, 'metadata.labels: Invalid value: "has space": a valid label value'),
        ("GPU040", 10, 14, f'status.capacity.nvidia.com/gpu: Invalid value: "abc": {regex}'),
        ("GPU040", 10, 35, f'status.capacity.cpu: Invalid value: "1.5.3": {regex}'),
        ("GPU040", 11, 17, 'status.allocatable.nvidia.com/gpu: Invalid value: "8.5": must be an'),
        ("GPU040", 11, 40, 'status.allocatable.cpu: Invalid value: "-64": must be greater than'),
        ("GPU040", 11, 62, 'status.allocatable.example.com/fpga: Invalid value: "500m": must'),
    ]
    assert [(rule, line, col) for rule, line, col, _ in found] == [e[:3] for e in expected]
    for (*_, message), (*_, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message
    assert fixes[403].endswith("(e.g. `gpu-2`).")
    assert fixes[605].startswith("Write the label key as [prefix/]name")
    assert fixes[705].startswith("Write the label value as at most 63")
    assert fixes[1014].startswith("Write a Kubernetes quantity")
    assert fixes[1117] == "Write a whole number of nvidia.com/gpu, e.g. `8`."
    assert fixes[1140] == "Write the amount the node has, 0 or more."
    # the refused quantities are not counted; the name and the labels are read as written
    [node] = nodes
    assert node.name == "GPU_2" and node.labels["pool"] == "has space"
    assert node.capacity == {"memory": "1.5", "pods": "110"}
    assert node.allocatable == {"pods": "1k"}  # 1000 pods: a whole number, taken


def test_the_same_values_in_a_node_inventory_entry_are_gpu005() -> None:
    text = """\
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: gpu-1
  labels: {pool: "has space"}
  taints: [{key: "a b", effect: NoSchedule}]
  capacity: {nvidia.com/gpu: "-1", cpu: "64"}
"""
    nodes, found, _ = _read(text, "inventory/nodes.yaml")
    assert [(rule, line, col, message.split(": ")[0]) for rule, line, col, message in found] == [
        ("GPU005", 5, 12, "nodes[0].labels"),
        ("GPU005", 6, 13, "nodes[0].taints[0].key"),
        ("GPU005", 7, 14, "nodes[0].capacity.nvidia.com/gpu"),
    ]
    [node] = nodes
    assert node.taints == [] and node.capacity == {"cpu": "64"}


def test_a_refused_gpu_count_offers_no_gpu_and_says_why(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", _TIME_SLICED.replace("2k", '"-1"'))
    write(tmp_path, "pod.yaml", _POD.format(gpus=1))
    found = [(rule, file, line, column) for rule, file, line, column, _ in _findings(tmp_path)]
    assert found == [
        ("GPU040", "nodes.yaml", 10, 27),
        ("GPU040", "nodes.yaml", 11, 30),
        ("GPU010", "pod.yaml", 9, 16),  # a GPU node that offers none: Insufficient
    ]
