"""The node inventory, from Node objects and from the compact NodeInventory file."""

from __future__ import annotations

from gpudrv_check.model.inventory import build_inventory
from gpudrv_check.read.manifests import parse_manifest_bytes


def manifests(text: str, rel: str = "nodes.yaml"):
    result = parse_manifest_bytes(rel, text.encode())
    assert result.problems == []
    return result.manifests


NODE_LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: a
    labels:
      nvidia.com/gpu.present: "true"
      nvidia.com/cuda.driver.major: 550
  spec:
    unschedulable: true
    taints:
    - key: nvidia.com/gpu
      value: present
      effect: NoSchedule
  status:
    capacity:
      nvidia.com/gpu: "8"
    allocatable:
      nvidia.com/gpu: 4
"""


def test_node_objects_inside_a_list():
    nodes, findings = build_inventory(manifests(NODE_LIST))
    [node] = nodes
    assert node.name == "a" and node.is_gpu and node.unschedulable
    assert node.labels["nvidia.com/cuda.driver.major"] == "550"
    assert node.taints == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert node.capacity == {"nvidia.com/gpu": "8"} and node.allocatable == {"nvidia.com/gpu": "4"}
    # the unquoted 550 is read as the string Kubernetes would store, with a warning at the key
    [warning] = findings
    assert warning.rule == "GPU007"
    assert (warning.location.line, warning.location.column) == (10, 7)
    assert node.label_location("nvidia.com/cuda.driver.major").line == 10


INVENTORY = """\
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: gpu-1
  labels:
    nvidia.com/gpu.present: "true"
  taints:
  - {key: nvidia.com/gpu, effect: NoSchedule}
- name: gpu-2
  labels: {nvidia.com/gpu.present: "true"}
  capacity: {nvidia.com/gpu: 8}
"""


def test_compact_inventory():
    nodes, findings = build_inventory(manifests(INVENTORY, "inventory.yaml"))
    assert findings == []
    assert [n.name for n in nodes] == ["gpu-1", "gpu-2"]
    assert nodes[0].taints == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert nodes[1].capacity == {"nvidia.com/gpu": "8"}
    assert nodes[1].label_location("nvidia.com/gpu.present").line == 10


def test_inventory_schema_errors_point_at_the_key():
    text = INVENTORY.replace(
        "  taints:\n  - {key: nvidia.com/gpu, effect: NoSchedule}\n",
        "  taints:\n  - {key: nvidia.com/gpu, effect: Sometimes}\n  colour: red\n",
    )
    nodes, findings = build_inventory(manifests(text, "inventory.yaml"))
    assert [n.name for n in nodes] == ["gpu-2"]  # the broken entry is dropped, the other kept
    got = sorted((f.rule, f.location.line, f.location.column) for f in findings)
    assert got == [("GPU005", 8, 27), ("GPU005", 9, 3)]  # the enum value, the unknown key


def test_duplicate_node_names_are_an_error_at_the_second():
    text = NODE_LIST + "---\n" + INVENTORY.replace("gpu-1", "a")
    nodes, findings = build_inventory(manifests(text))
    assert [n.name for n in nodes] == ["a", "gpu-2"]
    dup = [f for f in findings if f.rule == "GPU004"]
    assert len(dup) == 1
    assert dup[0].location.line == 26  # `- name: a` in the second document
    assert "nodes.yaml:7:5" in dup[0].message


def test_wrong_types_are_findings_not_exceptions():
    text = """\
apiVersion: v1
kind: Node
metadata:
  name: bad
  labels: [a, b]
spec:
  unschedulable: "yes"
  taints: {}
"""
    nodes, findings = build_inventory(manifests(text))
    assert [n.name for n in nodes] == ["bad"]
    got = sorted((f.rule, f.location.line) for f in findings)
    assert got == [("GPU040", 5), ("GPU040", 7), ("GPU040", 8)]


def test_the_same_node_copied_into_another_file_is_one_node():
    """Issue 13: copies (two cluster folders, an export next to an inventory) are no GPU004;
    a copy that says something else is still one, at the second definition."""
    same = manifests(INVENTORY, "east/inventory.yaml") + manifests(INVENTORY, "west/inventory.yaml")
    nodes, findings = build_inventory(same)
    assert [n.name for n in nodes] == ["gpu-1", "gpu-2"]
    assert [f.rule for f in findings if f.rule == "GPU004"] == []
    other = INVENTORY.replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 4")
    assert other != INVENTORY
    differ = manifests(INVENTORY, "east/inventory.yaml") + manifests(other, "west/inventory.yaml")
    nodes, findings = build_inventory(differ)
    dup = [f for f in findings if f.rule == "GPU004"]
    assert [f.location.file for f in dup] == ["west/inventory.yaml"]
