"""Builders for placement tests: nodes and workloads from YAML text, without a repo on disk."""

from __future__ import annotations

import textwrap
from typing import Any

from gpudrv_check.core.manifest import Manifest
from gpudrv_check.model.inventory import build_inventory
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import Placement
from gpudrv_check.model.workload import Workload, build_workloads, workload_from_manifest
from gpudrv_check.read.manifests import parse_manifest_bytes

PRESENT = "nvidia.com/gpu.present"
MAJOR = "nvidia.com/cuda.driver.major"
ZONE = "zone"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def read(text: str, file: str = "t.yaml") -> tuple[list[Node], list[Workload], list]:
    """Nodes, workloads and load findings of a YAML stream."""
    result = parse_manifest_bytes(file, textwrap.dedent(text).lstrip("\n").encode())
    nodes, node_findings = build_inventory(result.manifests)
    workloads, findings = build_workloads(result.manifests)
    return nodes, workloads, result.problems + node_findings + findings


def make_node(
    name: str,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    gpus: int | None = None,
) -> Node:
    return Node(
        name=name,
        labels={"kubernetes.io/hostname": name, **(labels or {})},
        taints=taints or [],
        unschedulable=unschedulable,
        allocatable={} if gpus is None else {"nvidia.com/gpu": str(gpus)},
        manifest=Manifest("nodes.yaml", 0, {}, "v1", "Node", name, None),
    )


def make_workload(spec: dict[str, Any], kind: str = "Pod", name: str = "w") -> Workload:
    """A workload with `spec` as its pod spec (any kind: the template path is filled in)."""
    api = {"Pod": "v1", "DaemonSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1"}[kind]
    data: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": name}}
    if kind == "Pod":
        data["spec"] = spec
    else:
        data["spec"] = {"template": {"spec": spec}}
    workload, _ = workload_from_manifest(Manifest("w.yaml", 0, data, api, kind, name, "default"))
    assert workload is not None
    return workload


def eligible(nodes: list[Node], workload: Workload) -> list[str]:
    return [n.name for n in Placement(nodes).eligible(workload)]


# pod spec pieces


def expr(key: str, op: str, *values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def term(*expressions: dict[str, Any], fields: list | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expressions:
        out["matchExpressions"] = list(expressions)
    if fields is not None:
        out["matchFields"] = fields
    return out


def tolerate(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"tolerations": list(tolerations)}
