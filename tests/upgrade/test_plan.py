"""`gpudrv-check plan`: each step's blockers, notes and locations on small repos."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MATRIX, gpu_node, run_main, write
from tests.upgrade.conftest import deployment, gpu_cluster, gpu_node_with, pdb, where

NEW_ROW = "550,5.15.0-119-generic,ubuntu22.04"  # MATRIX already has it


def plan(root: Path, node: str = "gpu-0", *extra: str) -> tuple[int, str, str]:
    result = run_main("plan", node, "--driver", "550.90.07", str(root), *extra)
    return result.returncode, result.stdout, result.stderr


def plan_json(root: Path, node: str = "gpu-0") -> dict:
    code, out, err = plan(root, node, "--format", "json")
    doc = json.loads(out)
    assert (doc["status"] == "ready") is (code == 0), err
    return doc


def step(doc: dict, name: str) -> dict:
    return next(s for s in doc["steps"] if s["name"] == name)


def test_a_quiet_cluster_is_ready(tmp_path: Path):
    gpu_cluster(tmp_path, 2)
    doc = plan_json(tmp_path)
    assert doc["status"] == "ready" and doc["tag"] == "550-5.15.0-119-generic-ubuntu22.04"
    assert [s["status"] for s in doc["steps"]] == ["ready"] * 5
    assert (
        step(doc, "headroom")["summary"]
        == "no PodDisruptionBudget covers pods that can run on gpu-0"
    )
    assert step(doc, "relabel")["summary"] == (
        "the driver labels of gpu-0 (nvidia.com/cuda.driver-version.major) already match 550.90.07"
    )
    assert doc["written"] == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("plan", "gpu-9", "--driver", "550.90.07"), "no node 'gpu-9'"),
        (("plan", "gpu-0", "--driver", "550"), "give the full driver version, e.g. 550.90.07"),
        (("plan", "gpu-0", "--driver", "r550"), "give the full driver version"),
        (("plan", "gpu-0", "--driver", "550.90.07", "--timeout", "soon"), "a duration like 300s"),
        (("plan", "gpu-0"), "the following arguments are required: --driver"),
    ],
)
def test_usage_errors(tmp_path: Path, args: tuple, text: str):
    gpu_cluster(tmp_path, 1)
    result = run_main(*args, str(tmp_path))
    assert result.returncode == 2 and text in result.stderr and "Traceback" not in result.stderr


def test_image_step_blockers(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(
        tmp_path,
        "nodes.yaml",
        gpu_node_with(
            "host", '    nvidia.com/gpu.deploy.driver: "false"\n', kernel="5.15.0-200-generic"
        ),
    )
    doc = plan_json(tmp_path, "host")
    image = step(doc, "image")
    assert image["status"] == "blocked"
    messages = [b["message"] for b in image["blockers"]]
    assert any(
        "does not manage the driver of host (nvidia.com/gpu.deploy.driver=false)" in m
        for m in messages
    )
    line, column = where(tmp_path, "nodes.yaml", "nvidia.com/gpu.deploy.driver")
    assert f"nodes.yaml:{line}:{column}" in [b["location"] for b in image["blockers"]]
    missing = [b for b in image["blockers"] if "has not been built" in b["message"]]
    assert missing[0]["location"] == "support-matrix.csv:3:1"
    assert "append `550,5.15.0-200-generic,ubuntu22.04`" in missing[0]["change"]


def test_missing_kernel_label(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    node = gpu_node("gpu-0").replace(
        "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic\n", ""
    )
    write(tmp_path, "nodes.yaml", node)
    image = step(plan_json(tmp_path), "image")
    assert (
        "lacks label(s) feature.node.kubernetes.io/kernel-version.full"
        in image["blockers"][0]["message"]
    )


def test_operator_version_is_noted(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    write(
        tmp_path,
        "cp.yaml",
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: cp\nspec:\n"
        '  driver:\n    usePrecompiled: true\n    version: "535"\n',
    )
    image = step(plan_json(tmp_path), "image")
    line, column = where(tmp_path, "cp.yaml", "version")
    note = next(n for n in image["notes"] if "driver.version 535" in n["message"])
    assert note["location"] == f"cp.yaml:{line}:{column}"


def test_two_pdbs_block_headroom(tmp_path: Path):
    gpu_cluster(tmp_path, 3)
    write(tmp_path, "trainer.yaml", deployment("trainer", 3))
    write(
        tmp_path,
        "a.yaml",
        pdb("a", "  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: trainer\n"),
    )
    write(tmp_path, "b.yaml", pdb("b", "  maxUnavailable: 1\n  selector: {}\n"))
    headroom = step(plan_json(tmp_path), "headroom")
    assert headroom["status"] == "blocked"
    assert any("HTTP 500" in b["message"] for b in headroom["blockers"])


def test_pods_that_can_run_only_here_need_a_disruption_each(tmp_path: Path):
    gpu_cluster(tmp_path, 3, {"gpu-0": {"pool": "a100"}})
    pinned = deployment("trainer", 2, extra_spec="      nodeSelector:\n        pool: a100\n")
    write(tmp_path, "trainer.yaml", pinned)
    body = "  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: trainer\n"
    write(tmp_path, "pdb.yaml", pdb("trainer-pdb", body))
    headroom = step(plan_json(tmp_path), "headroom")
    (blocker,) = headroom["blockers"]
    assert "2 of its pods can run only on gpu-0" in blocker["message"]
    line, column = where(tmp_path, "pdb.yaml", "maxUnavailable")
    assert blocker["location"] == f"pdb.yaml:{line}:{column}"
    assert blocker["change"] == "set maxUnavailable: 2 → 2 disruptions allowed"
    # the same budget on another node is fine: nothing of the trainer runs there
    assert step(plan_json(tmp_path, "gpu-1"), "headroom")["status"] == "ready"


BARE_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: notebook\n  namespace: ml\nspec:\n"
    "  containers:\n  - name: main\n    image: busybox\n"
)


@pytest.mark.slow
def test_unmanaged_pod_blocks_the_drain_only_when_it_must_be_here(tmp_path: Path):
    gpu_cluster(tmp_path, 2)
    write(tmp_path, "pod.yaml", BARE_POD + "  nodeName: gpu-0\n")
    drain = step(plan_json(tmp_path), "drain")
    (blocker,) = drain["blockers"]
    assert (
        "cannot delete Pods that declare no controller (use --force to override)"
        in blocker["message"]
    )
    line, column = where(tmp_path, "pod.yaml", "name: notebook")
    assert blocker["location"] == f"pod.yaml:{line}:{column}"
    assert step(plan_json(tmp_path, "gpu-1"), "drain")["blockers"] == []

    write(tmp_path, "pod.yaml", BARE_POD)  # may be on either node
    drain = step(plan_json(tmp_path), "drain")
    assert drain["status"] == "ready"
    assert "may be running on gpu-0" in drain["notes"][0]["message"]


def test_relabel_rewrites_every_driver_label_the_node_has(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    extra = (
        '    nvidia.com/cuda.driver-version.minor: "183"\n'
        '    nvidia.com/cuda.driver-version.revision: "06"\n'
        '    nvidia.com/cuda.driver-version.full: "535.183.06"\n'
    )
    write(tmp_path, "nodes.yaml", gpu_node_with("gpu-0", extra, branch="535"))
    relabel = step(plan_json(tmp_path), "relabel")
    assert relabel["summary"] == (  # in the order the file lists them
        "kubectl label node gpu-0 --overwrite nvidia.com/cuda.driver-version.minor=90 "
        "nvidia.com/cuda.driver-version.revision=07 nvidia.com/cuda.driver-version.full=550.90.07 "
        "nvidia.com/cuda.driver-version.major=550"
    )
    line, column = where(tmp_path, "nodes.yaml", "nvidia.com/cuda.driver-version.major")
    assert relabel["notes"][3] == {
        "message": "nvidia.com/cuda.driver-version.major: '535' → '550'",
        "location": f"nodes.yaml:{line}:{column}",
        "change": None,
    }


def test_two_part_version_empties_the_revision(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    extra = '    nvidia.com/cuda.driver-version.revision: "06"\n'
    write(tmp_path, "nodes.yaml", gpu_node_with("gpu-0", extra, branch="535"))
    result = run_main("plan", "gpu-0", "--driver", "550.120", str(tmp_path), "--format", "json")
    relabel = step(json.loads(result.stdout), "relabel")
    assert "nvidia.com/cuda.driver-version.revision= " in relabel["summary"] + " "


@pytest.mark.slow
def test_output_is_deterministic(tmp_path: Path):
    gpu_cluster(tmp_path, 3)
    write(tmp_path, "trainer.yaml", deployment("trainer", 3))
    write(tmp_path, "pdb.yaml", pdb("p", "  minAvailable: 3\n  selector: {}\n"))
    assert plan(tmp_path)[:2] == plan(tmp_path)[:2]
