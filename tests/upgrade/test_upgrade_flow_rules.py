"""GPU020, GPU022 and GPU025 under the GPU Operator's upgrade controller (model/upgrade_flow.py).

gpu-operator main.go gpuPodSpecFilter: the default flow deletes only GPU pods, so a PDB over
non-GPU pods does not block it; controllers/upgrade_controller.go removeNodeUpgradeStateLabels:
with autoUpgrade off the controller clears the state labels; pod_manager.go
SchedulePodEviction: "pod deletion spec should not be empty".
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import cluster_policy
from tests.upgrade.conftest import findings, located, where

CLUSTERPOLICY = cluster_policy("  driver:\n    upgradePolicy:\n{policy}\n")


def _policy(root: Path, policy: str) -> None:
    (root / "k8s" / "cp.yaml").write_text(CLUSTERPOLICY.format(policy=policy))


def test_controller_flow_ignores_a_pdb_over_non_gpu_pods(lab_repo: Path) -> None:
    assert located(lab_repo, "GPU020")  # the lab's manual drain evicts the trainer
    _policy(lab_repo, "      autoUpgrade: true\n      podDeletion: {}")
    assert located(lab_repo, "GPU020") == []


def test_controller_flow_counts_gpu_pods(lab_repo: Path) -> None:
    trainer = lab_repo / "k8s" / "trainer.yaml"
    trainer.write_text(
        trainer.read_text().replace(
            "        image: nvcr.io/nvidia/pytorch:24.07-py3\n",
            "        image: nvcr.io/nvidia/pytorch:24.07-py3\n"
            "        resources:\n          limits:\n            nvidia.com/gpu: 1\n",
        )
    )
    _policy(lab_repo, "      autoUpgrade: true\n      podDeletion: {}")
    found = [f for f in findings(lab_repo) if f["rule"] == "GPU020"]
    assert len(found) == 1
    assert "upgrade controller evicts" in found[0]["message"]
    assert "upgrade-failed" in found[0]["message"]


def test_policy_findings_sit_at_the_key(lab_repo: Path) -> None:
    _policy(lab_repo, '      autoUpgrade: true\n      maxUnavailable: "5"')
    line, column = where(lab_repo, "k8s/cp.yaml", "maxUnavailable")
    policy_line, policy_column = where(lab_repo, "k8s/cp.yaml", "upgradePolicy")
    assert sorted(located(lab_repo, "GPU025")) == [
        ("k8s/cp.yaml", policy_line, policy_column, "error"),
        ("k8s/cp.yaml", line, column, "error"),
    ]


def test_labels_the_controller_clears_are_not_errors(lab_repo: Path, tmp_path: Path) -> None:
    nodes = lab_repo / "k8s" / "nodes.yaml"
    text = nodes.read_text().replace(
        "      kubernetes.io/hostname: lab-node-0\n",
        "      kubernetes.io/hostname: lab-node-0\n"
        "      nvidia.com/gpu-driver-upgrade-state: upgrade-failed\n",
        1,
    )
    nodes.write_text(text)
    other = tmp_path / "other"
    shutil.copytree(lab_repo, other)
    assert [s for *_, s in located(lab_repo, "GPU022")] == ["error"]  # no operator config
    _policy(other, "      autoUpgrade: false")
    found = [f for f in findings(other) if f["rule"] == "GPU022"]
    assert [f["severity"] for f in found] == ["info"]
    assert "removeNodeUpgradeStateLabels" in found[0]["message"]


def test_plan_counts_only_what_the_controller_evicts(lab_repo: Path) -> None:
    from tests.conftest import run_main

    before = run_main("plan", "lab-node-1", "--driver", "535.183.06", str(lab_repo))
    assert before.returncode == 1 and "2. headroom: blocked" in before.stdout
    _policy(lab_repo, "      autoUpgrade: true\n      podDeletion: {}")
    after = run_main("plan", "lab-node-1", "--driver", "535.183.06", str(lab_repo))
    assert "2. headroom: ready" in after.stdout
    assert "flow: the GPU Operator's upgrade controller" in after.stdout


def test_wait_for_completion_on_a_deployment_is_reported_at_the_selector(lab_repo: Path) -> None:
    # pod_manager.go ScheduleCheckOnPodCompletion: Running pods keep the node waiting
    _policy(
        lab_repo,
        "      autoUpgrade: true\n      podDeletion: {}\n"
        "      waitForCompletion:\n        podSelector: app=trainer",
    )
    line, column = where(lab_repo, "k8s/cp.yaml", "podSelector")
    found = [f for f in findings(lab_repo) if f["rule"] == "GPU025"]
    assert [(f["location"]["line"], f["location"]["column"]) for f in found] == [(line, column)]
    assert "Deployment gpu-drv/trainer" in found[0]["message"]
    _policy(
        lab_repo,
        "      autoUpgrade: true\n      podDeletion: {}\n"
        "      waitForCompletion:\n        podSelector: app=trainer\n        timeoutSeconds: 600",
    )
    assert located(lab_repo, "GPU025") == []
