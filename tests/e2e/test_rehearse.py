"""`gpudrv-check rehearse` on the lab, through the installed CLI (model/rehearsal.py).

The lab after step 4 (lab-node-3 joined, its image built) and step 7's image for lab-node-1,
upgraded to 550.127.05 by the GPU Operator's controller from a Flux HelmRelease with
`autoUpgrade: true, maxParallelUpgrades: 1`. The default flow deletes only GPU pods
(gpu-operator main.go gpuPodSpecFilter), so the trainer here asks for a GPU, as a trainer does;
the lab's own trainer asks for none and the controller never touches it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import helm_release, run_cli
from tests.upgrade.conftest import where

TARGET = "550.127.05"
HELMRELEASE = helm_release(
    "v25.3.0",
    "  values:\n    driver:\n      upgradePolicy:\n        autoUpgrade: true\n"
    "        maxParallelUpgrades: 1\n",
)
GPU_LIMIT = (
    "        image: nvcr.io/nvidia/pytorch:24.07-py3\n"
    "        resources:\n          limits:\n            nvidia.com/gpu: 1\n"
)
NODES = ["lab-node-0", "lab-node-1", "lab-node-2", "lab-node-3"]
STEPS = [
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
]


@pytest.fixture
def lab(lab_repo: Path) -> Path:
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    with open(lab_repo / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n550,5.15.0-107-generic,ubuntu22.04\n")
    (lab_repo / "k8s" / "gpu-operator.yaml").write_text(HELMRELEASE)
    trainer = lab_repo / "k8s" / "trainer.yaml"
    text = trainer.read_text()
    trainer.write_text(text.replace("        image: nvcr.io/nvidia/pytorch:24.07-py3\n", GPU_LIMIT))
    return lab_repo


def rehearse(root: Path, *extra: str) -> tuple[int, dict]:
    result = run_cli("rehearse", str(root), "--driver", TARGET, "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_the_trainer_pdb_stalls_the_whole_upgrade(lab: Path) -> None:
    code, out = rehearse(lab)
    assert code == 1 and out["status"] == "stalled"
    assert (out["admitted"], out["upgradesAvailable"], out["maxUnavailable"]) == (
        ["lab-node-0"],
        1,
        1,  # 25% of 4 managed nodes
    )
    first, *rest = out["stalls"]
    line, column = where(lab, "k8s/pdb.yaml", "minAvailable")
    assert first["node"] == "lab-node-0" and first["state"] == "upgrade-failed"
    assert "trainer-pdb allows 0 disruptions" in first["reason"]
    assert "podDeletion.timeoutSeconds 300" in first["reason"]
    assert first["location"] == f"k8s/pdb.yaml:{line}:{column}"
    # maxParallelUpgrades 1 and a failed node holding the slot: nobody else starts
    assert [(s["node"], s["state"]) for s in rest] == [(n, "upgrade-required") for n in NODES[1:]]
    assert all("maxParallelUpgrades 1" in s["reason"] for s in rest)
    blocks = [b for w in out["waves"] for b in w["blocks"]]
    assert [b["by"] for b in blocks] == ["PodDisruptionBudget gpu-drv/trainer-pdb"]


def test_after_min_available_3_the_nodes_go_one_by_one(lab: Path) -> None:
    pdb = lab / "k8s" / "pdb.yaml"
    pdb.write_text(pdb.read_text().replace("minAvailable: 4", "minAvailable: 3"))
    code, out = rehearse(lab)
    assert code == 0 and out["status"] == "complete" and out["stalls"] == []
    waves = out["waves"]
    assert [m["to"] for m in waves[0]["nodes"]] == ["upgrade-required"] * 4
    # then each node walks the seven steps alone, in name order
    expected = [(node, step) for node in NODES for step in STEPS]
    walked = [(m["node"], m["to"]) for w in waves[1:] for m in w["nodes"]]
    assert walked == expected
    evictions = [e for w in waves for e in w["evictions"]]
    # one trainer replica per node; anti-affinity leaves it Pending until uncordon
    assert [(e["node"], e["to"]) for e in evictions] == [(n, None) for n in NODES]


def test_the_lab_trainer_without_a_gpu_is_never_evicted(lab: Path) -> None:
    trainer = lab / "k8s" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace(GPU_LIMIT, "        image: x\n"))
    code, out = rehearse(lab)
    assert code == 0
    assert [e for w in out["waves"] for e in w["evictions"]] == []


def test_a_missing_image_stalls_in_pod_restart(lab: Path) -> None:
    matrix = lab / "support-matrix.csv"
    matrix.write_text(matrix.read_text().replace("550,5.15.0-107-generic,ubuntu22.04\n", ""))
    pdb = lab / "k8s" / "pdb.yaml"
    pdb.write_text(pdb.read_text().replace("minAvailable: 4", "minAvailable: 3"))
    code, out = rehearse(lab)
    assert code == 1
    stalled = {s["node"]: s for s in out["stalls"]}
    assert stalled["lab-node-1"]["state"] == "pod-restart-required"
    assert stalled["lab-node-1"]["location"].startswith("support-matrix.csv:")
    assert any("lack" in note and "lab-node-1" in note for note in out["notes"])
    assert "lab-node-0" not in stalled


@pytest.mark.slow
def test_text_and_markdown(lab: Path) -> None:
    text = run_cli("rehearse", str(lab), "--driver", TARGET)
    assert text.returncode == 1
    assert "lab-node-0  upgrade-failed" in text.stdout
    assert "… and 2 more node(s) in upgrade-required alike" in text.stdout
    md = run_cli("rehearse", str(lab), "--driver", TARGET, "--format", "markdown")
    assert md.returncode == 1
    assert "1. **reconcile 2** (t = 0 s): lab-node-0 → cordon-required" in md.stdout


@pytest.mark.slow
def test_usage_errors(lab: Path) -> None:
    both = run_cli("rehearse", str(lab), "--driver", TARGET, "--to-matrix")
    # exit 2 alone would pass for any usage error: the message names the two options
    assert both.returncode == 2 and "--to-matrix: not allowed with argument --driver" in both.stderr
    bad = run_cli("rehearse", str(lab), "--driver", "550")
    assert bad.returncode == 2 and "full driver version" in bad.stderr
    none = run_cli("rehearse", str(lab))
    assert none.returncode == 2 and "--driver VERSION, --to-matrix" in none.stderr
    assert all("Traceback" not in r.stderr for r in (both, bad, none))
