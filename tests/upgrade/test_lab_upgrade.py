"""The lab's steps 6-8 through the installed CLI: the budget that stops the drain, the
upgrade plan, `plan --write` producing exactly the step-7 edit, and the step-8 report.

The lab keeps lab-node-3 aside in examples/lab/steps/ (its config excludes that folder); the
steps below run on a copy that has gone through step 4 (node3 added, its matrix row built).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_main
from tests.upgrade.conftest import located, messages, where

STEP4_ROW = "550,6.8.0-52-generic,ubuntu24.04\n"
STEP7_ROW = "550,5.15.0-107-generic,ubuntu22.04\n"
NODE1_OLD = (
    '      nvidia.com/cuda.driver.major: "535"\n'
    '      nvidia.com/cuda.driver.minor: "183"\n'
    '      nvidia.com/cuda.driver.rev: "06"\n'
)
NODE1_NEW = (
    '      nvidia.com/cuda.driver.major: "550"\n'
    '      nvidia.com/cuda.driver.minor: "90"\n'
    '      nvidia.com/cuda.driver.rev: "07"\n'
)


@pytest.fixture
def lab(lab_repo: Path) -> Path:
    """The lab after step 4: lab-node-3 joined and its image recorded."""
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    with open(lab_repo / "support-matrix.csv", "a") as matrix:
        matrix.write(STEP4_ROW)
    return lab_repo


def set_budget(root: Path, value: int) -> None:
    path = root / "k8s" / "pdb.yaml"
    text = path.read_text()
    path.write_text(text.replace("minAvailable: 4", f"minAvailable: {value}"))


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_step6_budget_blocks_the_drain(lab: Path):
    line, column = where(lab, "k8s/pdb.yaml", "minAvailable")
    assert located(lab, "GPU020") == [("k8s/pdb.yaml", line, column, "error")]
    (message,) = messages(lab, "GPU020")
    assert "minAvailable 4 of 4 pods → 0 disruptions allowed" in message
    assert "Cannot evict pod as it would violate the pod's disruption budget." in message
    set_budget(lab, 3)
    assert located(lab, "GPU020") == []


@pytest.mark.slow
def test_gpu021_in_each_lab_state(lab_repo: Path, lab: Path):
    """4 replicas, one per node: 3 nodes leave one Pending (error); 4 leave no spare (warning)."""
    three = lab_repo.parent / "three"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "lab", three)
    line, column = where(three, "k8s/trainer.yaml", "topologyKey")
    assert located(three, "GPU021") == [("k8s/trainer.yaml", line, column, "error")]
    assert "1 replica stays Pending already" in messages(three, "GPU021")[0]
    assert located(lab, "GPU021") == [("k8s/trainer.yaml", line, column, "warning")]
    # on three nodes the Pending replica is never healthy, so minAvailable 3 still blocks
    set_budget(three, 3)
    assert (
        "minAvailable 3 of 4 pods, 3 healthy → 0 disruptions allowed"
        in messages(three, "GPU020")[0]
    )


def test_step7_plan_blocked_then_ready(lab: Path):
    blocked = run_main("plan", "lab-node-1", "--driver", "550.90.07", str(lab))
    assert blocked.returncode == 1, blocked.stderr
    out = blocked.stdout
    assert out.startswith("plan lab-node-1: driver 535.183.06 → 550.90.07\n")
    assert (
        "1. image: blocked - 550-5.15.0-107-generic-ubuntu22.04 is not in the support matrix" in out
    )
    assert (
        "at support-matrix.csv:6:1: build and push 550-5.15.0-107-generic-ubuntu22.04, "
        "then append `550,5.15.0-107-generic,ubuntu22.04`" in out
    )
    assert "2. headroom: blocked" in out
    assert "at k8s/pdb.yaml:8:3: set minAvailable: 3 → 1 disruption allowed" in out
    assert (
        "3. drain: ready - kubectl drain lab-node-1 --ignore-daemonsets --delete-emptydir-data "
        "--timeout=300s"
    ) in out
    assert (
        "4. relabel: ready - kubectl label node lab-node-1 --overwrite "
        "nvidia.com/cuda.driver.major=550 nvidia.com/cuda.driver.minor=90 "
        "nvidia.com/cuda.driver.rev=07"
    ) in out
    assert "at k8s/nodes.yaml:36:7" in out
    assert "5. uncordon: ready - kubectl uncordon lab-node-1" in out
    assert out.endswith("blocked: steps 1, 2\n")

    with open(lab / "support-matrix.csv", "a") as matrix:
        matrix.write(STEP7_ROW)
    set_budget(lab, 3)
    ready = run_main("plan", "lab-node-1", "--driver", "550.90.07", str(lab))
    assert ready.returncode == 0, ready.stdout
    assert (
        "1. image: ready - 550-5.15.0-107-generic-ubuntu22.04 is in the support matrix"
        in ready.stdout
    )
    assert "minAvailable 3 of 4 pods → 1 disruption allowed" in ready.stdout
    # the stranded replica is noted, not blocking: the budget allows its eviction
    assert "leaves 1 replica of Deployment gpu-drv/trainer Pending until uncordon" in ready.stdout
    assert ready.stdout.endswith("ready: every step can go ahead\n")


@pytest.mark.slow
def test_step7_write_makes_exactly_the_lab_edit(lab: Path):
    set_budget(lab, 3)  # step 7 (2) is a decision about the workload: done by hand
    before = snapshot(lab)
    result = run_main("plan", "lab-node-1", "--driver", "550.90.07", str(lab), "--write")
    assert result.returncode == 0, result.stdout + result.stderr
    after = snapshot(lab)
    expected = dict(before)
    expected["support-matrix.csv"] = before["support-matrix.csv"] + STEP7_ROW.encode()
    nodes = before["k8s/nodes.yaml"].decode()
    assert nodes.count(NODE1_OLD) == 1
    expected["k8s/nodes.yaml"] = nodes.replace(NODE1_OLD, NODE1_NEW).encode()
    assert after == expected
    assert "wrote support-matrix.csv: appended `550,5.15.0-107-generic,ubuntu22.04` (line 6)" in (
        result.stdout
    )
    assert run_main("audit", str(lab)).stdout == "OK\n"
    # a second run has nothing left to write
    again = run_main("plan", "lab-node-1", "--driver", "550.90.07", str(lab), "--write")
    assert again.returncode == 0 and "wrote" not in again.stdout
    assert snapshot(lab) == expected


def test_write_refuses_while_the_budget_blocks(lab: Path):
    before = snapshot(lab)
    result = run_main("plan", "lab-node-1", "--driver", "550.90.07", str(lab), "--write")
    assert result.returncode == 1
    assert "--write refused: step 2 is blocked" in result.stderr
    assert snapshot(lab) == before


@pytest.mark.slow
def test_step8_report(lab: Path):
    with open(lab / "support-matrix.csv", "a") as matrix:
        matrix.write(STEP7_ROW)
    set_budget(lab, 3)
    nodes = lab / "k8s" / "nodes.yaml"
    text = nodes.read_text().replace(NODE1_OLD, NODE1_NEW)
    text = text.replace(
        "      kubernetes.io/hostname: lab-node-1\n",
        "      kubernetes.io/hostname: lab-node-1\n"
        "      nvidia.com/gpu-driver-upgrade-state: upgrade-done\n",
    )
    nodes.write_text(text)
    result = run_main("report", str(lab), "--node", "lab-node-1")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "NODES=4\n"
        "SKEW=0\n"
        "MATRIX_ROWS=5\n"
        "UPGRADE_STATE_UPGRADE_DONE=1\n"
        "NODE=lab-node-1\n"
        "TAG=550-5.15.0-107-generic-ubuntu22.04\n"
        "UPGRADE_STATE=upgrade-done\n"
    )
    as_json = json.loads(
        run_main("report", str(lab), "--node", "lab-node-1", "--format", "json").stdout
    )
    assert as_json == {
        "nodes": 4,
        "skew": 0,
        "matrix_rows": 5,
        "upgrade_states": {"upgrade-done": 1},
        "node": {
            "name": "lab-node-1",
            "tag": "550-5.15.0-107-generic-ubuntu22.04",
            "upgrade_state": "upgrade-done",
        },
    }
    assert located(lab, "GPU022") == []  # upgrade-done is a known state
