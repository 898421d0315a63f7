"""Which pods a budget covers and which ones GPU024 speaks of, as the disruption controller, the
eviction API and kubectl drain see them: a budget is in the namespace it is applied in (a
kustomization's `namespace:`: disruption.go getPodsForPdb lists `pdb.Namespace`), and two
budgets matter only for pods a drain evicts and that run (pkg/drain daemonSetFilter and
mirrorPodFilter; eviction.go canIgnorePDB deletes a Pending pod without its budgets)."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.conftest import write

NODES = "".join(
    f"""apiVersion: v1
kind: Node
metadata:
  name: n{i}
  labels: {{kubernetes.io/hostname: n{i}, nvidia.com/gpu.present: "true"}}
---
"""
    for i in range(3)
)


def _pdb(name: str, namespace: str = "", rule: str = "minAvailable: 1") -> str:
    where = f", namespace: {namespace}" if namespace else ""
    return (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        f"metadata: {{name: {name}{where}}}\n"
        f"spec:\n  {rule}\n  selector: {{matchLabels: {{app: web}}}}\n"
    )


def _workload(kind: str, extra: str = "", namespace: str = "") -> str:
    where = f", namespace: {namespace}" if namespace else ""
    replicas = "" if kind == "DaemonSet" else "  replicas: 2\n"
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: web{where}}}\nspec:\n{replicas}"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        f"    spec:\n{extra}      containers: [{{name: c, image: registry.example/app:1}}]\n"
    )


def _rules(root: Path) -> list[str]:
    found = check(root, Config(), "none").findings
    return sorted(f.rule for f in found if f.rule in ("GPU020", "GPU024"))


def test_a_budget_is_in_the_namespace_its_kustomization_applies(tmp_path: Path):
    write(tmp_path, "nodes.yaml", NODES)
    write(
        tmp_path,
        "app/kustomization.yaml",
        "kind: Kustomization\nnamespace: team\nresources: [deploy.yaml, pdb.yaml, pdb2.yaml]\n",
    )
    write(tmp_path, "app/deploy.yaml", _workload("Deployment"))
    write(tmp_path, "app/pdb.yaml", _pdb("web", rule="minAvailable: 2"))  # 0 disruptions
    write(tmp_path, "app/pdb2.yaml", _pdb("web-extra", namespace="elsewhere"))  # moved too
    assert _rules(tmp_path) == ["GPU020", "GPU024"]


def test_two_budgets_over_pods_no_drain_evicts_are_no_gpu024(tmp_path: Path):
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pdb.yaml", _pdb("a", "team") + "---\n" + _pdb("b", "team"))
    write(tmp_path, "w.yaml", _workload("DaemonSet", namespace="team"))
    assert "GPU024" not in _rules(tmp_path)
    # the same budgets over a Deployment's pods: the eviction API answers 500
    write(tmp_path, "w.yaml", _workload("Deployment", namespace="team"))
    assert "GPU024" in _rules(tmp_path)
    # its pods can land on no node: Pending, deleted without a budget asked
    pinned = "      nodeSelector: {kubernetes.io/hostname: nowhere}\n"
    write(tmp_path, "w.yaml", _workload("Deployment", pinned, namespace="team"))
    assert "GPU024" not in _rules(tmp_path)
