"""Items of a typed List written without apiVersion and kind are of the list's type, as
apimachinery's unstructured decoding reads them (k8s.io/apimachinery
pkg/apis/meta/v1/unstructured/helpers.go decodeToList, UnstructuredList.UnmarshalJSON: an item
with neither gets the list's apiVersion and its kind without `List`). `kubectl get --raw
/api/v1/nodes` prints such a NodeList."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import MATRIX, run_main, write


def _node(name: str, **extra) -> dict:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/cuda.driver-version.major": "550",
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-999-generic",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    }
    return {"metadata": {"name": name, "labels": labels}, **extra}


@pytest.mark.parametrize(
    ("list_kind", "item", "read"),
    [
        ("NodeList", {}, ("v1", "Node")),  # neither: the list's type
        ("NodeList", {"apiVersion": "", "kind": ""}, ("v1", "Node")),  # empty strings alike
        ("NodeList", {"kind": "Node", "apiVersion": "v1"}, ("v1", "Node")),  # as written
        ("NodeList", {"kind": "Node"}, None),  # one of them: not inferred, not an object
        ("NodeList", {"apiVersion": "v1"}, None),
        ("List", {}, None),  # a plain List names no item kind
    ],
)
def test_an_item_without_type_is_of_the_lists_type(list_kind, item, read):
    document = {"apiVersion": "v1", "kind": list_kind, "items": [{**_node("a"), **item}]}
    result = parse_manifest_bytes("nodes.json", json.dumps(document).encode())
    found = [(m.api_version, m.kind) for m in result.manifests]
    assert found == ([read] if read else [])
    if read is None:
        assert [s.reason for s in result.skipped] == ["List item without apiVersion/kind"]


def test_a_raw_node_list_is_audited(tmp_path: Path):
    """The NodeList's node needs an image the matrix lacks: before, its items were skipped and
    `audit` said OK with no node at all."""
    document = {"kind": "NodeList", "apiVersion": "v1", "items": [_node("gpu-a")]}
    write(tmp_path, "nodes.json", json.dumps(document, indent=2))
    write(tmp_path, "support-matrix.csv", MATRIX)
    audit = run_main("audit", str(tmp_path))
    assert audit.returncode == 1
    assert "gpu-a MISSING 550-5.15.0-999-generic-ubuntu22.04" in audit.stdout
