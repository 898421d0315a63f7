"""`clusters.NAME.inventory` is that cluster's inventory, not every cluster's (docs/clusters.md:
"a cluster's own nodes are ... those its `clusters.<name>.inventory` names").

A node named alike in two clusters is two nodes; a staging workload is placed on staging's
nodes only; `inventory import --write --cluster NAME` updates that cluster's file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_main, write

_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeSelector: {{pool: {pool}}}
  containers:
  - name: c
    image: busybox
    resources:
      limits: {{nvidia.com/gpu: "{gpus}"}}
"""

_INVENTORY = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: gpu-0
  labels: {{pool: {pool}}}
  capacity: {{nvidia.com/gpu: "{gpus}"}}
"""


def _repo(root: Path, staging_pool: str = "staging") -> Path:
    write(
        root,
        ".gpudrv-check.yaml",
        """
        clusters:
          staging:
            paths: [clusters/staging]
            inventory: [./inventory/staging-nodes.yaml]
          production:
            paths: [clusters/production]
            inventory: [inventory/production-nodes.yaml]
        """,
    )
    write(root, "clusters/staging/pod.yaml", _POD.format(name="stg", pool=staging_pool, gpus=1))
    write(root, "clusters/production/pod.yaml", _POD.format(name="prd", pool="production", gpus=8))
    write(root, "inventory/staging-nodes.yaml", _INVENTORY.format(pool="staging", gpus=1))
    write(root, "inventory/production-nodes.yaml", _INVENTORY.format(pool="production", gpus=8))
    return root


def _findings(root: Path, *args: str) -> list[tuple]:
    result = run_main(
        "check", str(root), "--no-cache", "--matrix", "none", "--format", "json", *args
    )
    assert result.returncode in (0, 1), result.stderr
    out = json.loads(result.stdout)
    return [
        (
            f["rule"],
            f.get("cluster"),
            f["location"]["file"],
            f["location"]["line"],
            f["location"]["column"],
        )
        for f in out["findings"]
    ]


def test_each_cluster_reads_only_its_own_named_inventory(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    # gpu-0 in two clusters is two nodes: no GPU004; each pod fits its own cluster's gpu-0
    assert _findings(root) == []
    summary = json.loads(run_main("check", str(root), "--no-cache", "--format", "json").stdout)[
        "summary"
    ]["clusters"]
    assert [(c["name"], c["nodes"]) for c in summary] == [("production", 1), ("staging", 1)]


def test_a_staging_workload_is_not_placed_on_production_nodes(tmp_path: Path) -> None:
    # staging's pod asks for pool=production: only production's gpu-0 has that label
    root = _repo(tmp_path, staging_pool="production")
    expected = [("GPU010", "staging", "clusters/staging/pod.yaml", 5, 18)]
    assert _findings(root, "--cluster", "staging") == expected
    place = run_main("place", str(root), "--cluster", "staging", "--matrix", "none")
    assert "pool=production removes gpu-0; inventory has pool = staging on gpu-0" in place.stdout


def test_import_write_with_cluster_updates_that_clusters_file(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    export = tmp_path / "export.json"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-9"}}
    export.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]}))
    before = (root / "inventory/production-nodes.yaml").read_text()
    result = run_main(
        "inventory", "import", str(export), "--write", "--cluster", "staging", cwd=root
    )
    assert result.returncode == 0, result.stderr
    assert "- name: gpu-9" in (root / "inventory/staging-nodes.yaml").read_text()
    assert (root / "inventory/production-nodes.yaml").read_text() == before


def test_import_write_with_cluster_ignores_node_files_every_cluster_reads(tmp_path: Path) -> None:
    # a nodes.yaml no cluster applies is every cluster's: one cluster's export is not written
    # into it (it would drop the other clusters' nodes), so staging's own file is the one
    root = _repo(tmp_path)
    write(root, "nodes.yaml", _INVENTORY.format(pool="shared", gpus=2))
    export = tmp_path / "export.json"
    export.write_text(
        json.dumps(
            {
                "kind": "List",
                "apiVersion": "v1",
                "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-9"}}],
            }
        )
    )
    result = run_main(
        "inventory", "import", str(export), "--write", "--cluster", "staging", cwd=root
    )
    assert result.returncode == 0, result.stderr
    assert "gpu-9" in (root / "inventory/staging-nodes.yaml").read_text()
    assert "gpu-9" not in (root / "nodes.yaml").read_text()


def test_one_declared_cluster_keeps_its_own_matrix_and_inventory(tmp_path: Path) -> None:
    """Review cl3, cl4: with one cluster declared the repo is one cluster, as ever, and that
    cluster's `matrix` and `inventory` were dropped silently. They are its settings now."""
    from tests.conftest import MATRIX, gpu_node

    write(
        tmp_path,
        ".gpudrv-check.yaml",
        "clusters:\n  prod:\n    paths: [k8s/]\n    matrix: prod.csv\n    inventory: [n.yaml]\n",
    )
    write(tmp_path, "support-matrix.csv", "driver_branch,kernel,os_tag\n")  # no image at all
    write(tmp_path, "prod.csv", MATRIX)
    write(tmp_path, "n.yaml", gpu_node("gpu-1"))
    write(tmp_path, "k8s/pod.yaml", _POD.format(name="p", pool="x", gpus=1))
    result = run_main("check", str(tmp_path), "--no-cache", "--format", "json")
    found = json.loads(result.stdout)["findings"]
    assert not [f for f in found if f["rule"] == "GPU001"], found  # prod.csv has its image


@pytest.mark.parametrize(
    ("clusters", "where", "message"),
    [
        ("  prod:\n    paths: [nope/]\n", "3:13", "clusters.prod.paths.0: 'nope/' not found"),
        (
            "  a:\n    paths: [k8s/]\n  b:\n    paths: [../]\n",
            "5:13",
            "clusters.b.paths.0: '../' leaves the repo root",
        ),
        (
            "  prod:\n    paths: [k8s/]\n    inventory: [missing.yaml]\n",
            "4:17",
            "clusters.prod.inventory.0: file 'missing.yaml' not found",
        ),
        (
            "  prod:\n    paths: [k8s/]\n    matrix: missing.csv\n",
            "4:5",
            "clusters.prod.matrix: file 'missing.csv' not found",
        ),
    ],
    ids=["path-missing", "path-leaves", "inventory-missing", "matrix-missing"],
)
def test_a_cluster_naming_what_is_not_there_exits_2_at_the_key(
    tmp_path: Path, clusters: str, where: str, message: str
) -> None:
    """Review cl1b, cl5b, cl3, cl4: a cluster path that does not exist or leaves the root
    checked a cluster with nothing in it, silently; a missing inventory or matrix was an
    error without a line, or (one cluster) nothing at all."""
    write(tmp_path, ".gpudrv-check.yaml", "clusters:\n" + clusters)
    write(tmp_path, "k8s/pod.yaml", _POD.format(name="p", pool="x", gpus=1))
    result = run_main("check", str(tmp_path), "--no-cache", "--matrix", "none")
    assert result.returncode == 2
    assert result.stderr == f"gpudrv-check: error: .gpudrv-check.yaml:{where}: {message}" + (
        "; config paths stay inside the repo\n" if "leaves" in message else "\n"
    )
