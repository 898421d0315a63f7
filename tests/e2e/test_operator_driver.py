"""The lab under the GPU Operator's own configuration, through the installed CLI.

examples/lab/steps/operator holds the two setups of the issue, copied into a private copy of the
lab here:

- A: one ClusterPolicy driver, precompiled, `version: "550"` (controllers/object_controls.go
  `resolveDriverTag`: the version comes from the spec; controllers/state_manager.go
  `getGPUNodeOSInfo`: one OS tag for the cluster);
- B: `useNvidiaDriverCRD` with two NVIDIADriver CRs, 550 `default: true` and 535 for
  lab-node-1 (internal/nvidiadriver `AssignOwners`, internal/state/nodepool.go `getNodePools`),
  which reports what the lab reports without any operator configuration.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import cluster_policy, gpu_node, run_cli, write

STEPS = Path("steps") / "operator"
NODES = ("lab-node-0", "lab-node-1", "lab-node-2")


def _with(lab: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(lab / STEPS / name, lab / "k8s" / name)
    return lab


def _findings(stdout: str) -> list[str]:
    """The finding lines of `check` output (the summary line counts the files read)."""
    return stdout.splitlines()[:-1]


@pytest.mark.slow
def test_cluster_policy_550_upgrades_lab_node_1_to_an_image_not_in_the_matrix(lab_repo: Path):
    repo = _with(lab_repo, "clusterpolicy-550.yaml")
    audit = run_cli("audit", str(repo))
    assert audit.returncode == 1
    assert audit.stdout == (
        "lab-node-0 OS-CONFLICT ubuntu22.04,ubuntu24.04\n"
        "lab-node-1 MISSING 550-5.15.0-107-generic-ubuntu22.04 "
        "registry.example/nvidia/driver:550-5.15.0-107-generic-ubuntu22.04\n"
        "lab-node-1 OS-CONFLICT ubuntu22.04,ubuntu24.04\n"
        "lab-node-2 OS-CONFLICT ubuntu22.04,ubuntu24.04\n"
    )
    tag = run_cli("tag", "lab-node-1", str(repo))
    assert (tag.returncode, tag.stdout) == (0, "550-5.15.0-107-generic-ubuntu22.04\n")
    assert "which may be ubuntu24.04 (GPU013)" in tag.stderr

    check = run_cli("check", str(repo), "--format", "concise")
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    [gpu001] = [line for line in lines if " GPU001 " in line]
    assert gpu001 == (
        "k8s/nodes.yaml:39:7: error GPU001 node lab-node-1 will get driver branch 550 from the "
        "ClusterPolicy cluster-policy (it runs 535.183.06 now), so it needs driver image "
        "registry.example/nvidia/driver:550-5.15.0-107-generic-ubuntu22.04, which is not in the "
        "support matrix (support-matrix.csv); its driver pod would fail to pull and its GPUs "
        "vanish"
    )
    [gpu013] = [line for line in lines if " GPU013 " in line]
    assert gpu013.startswith("k8s/clusterpolicy-550.yaml:7:3: error GPU013 the ClusterPolicy")
    assert "ubuntu22.04 (lab-node-0, lab-node-1); ubuntu24.04 (lab-node-2)" in gpu013
    [gpu016] = [line for line in lines if " GPU016 " in line]
    assert gpu016.startswith("k8s/clusterpolicy-550.yaml:11:5: info GPU016")
    assert "lab-node-1 (runs 535.183.06)" in gpu016


@pytest.mark.slow
def test_two_nvidiadrivers_report_what_the_lab_reports(lab_repo: Path, tmp_path: Path):
    plain = tmp_path / "plain"
    shutil.copytree(lab_repo, plain)
    repo = _with(
        lab_repo, "clusterpolicy-crd.yaml", "nvidiadriver-550.yaml", "nvidiadriver-535.yaml"
    )
    for command in (("audit",), *(("tag", node) for node in NODES)):
        ours, lab = run_cli(*command, str(repo)), run_cli(*command, str(plain))
        assert (ours.returncode, ours.stdout, ours.stderr) == (lab.returncode, lab.stdout, "")
    assert run_cli("audit", str(repo)).stdout == "OK\n"
    ours, lab = run_cli("check", str(repo)), run_cli("check", str(plain))
    assert ours.returncode == lab.returncode == 1
    assert _findings(ours.stdout) == _findings(lab.stdout)


def test_operands_show_one_driver_daemonset_per_pool(lab_repo: Path):
    repo = _with(
        lab_repo, "clusterpolicy-crd.yaml", "nvidiadriver-550.yaml", "nvidiadriver-535.yaml"
    )
    result = run_cli("operands", str(repo))
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    pools = [row[0] for row in rows if len(row) > 1 and row[1] == "driver" and "/" in row[0]]
    assert pools == [
        "gpu-operator/nvidia-gpu-driver-branch-535-ubuntu22.04-5.15.0-107-generic",
        "gpu-operator/nvidia-gpu-driver-default-ubuntu22.04-5.15.0-119-generic",
        "gpu-operator/nvidia-gpu-driver-default-ubuntu24.04-6.8.0-45-generic",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("crs", [("nvidiadriver-535.yaml",), ()])
def test_without_a_default_cr_unowned_nodes_get_no_driver(lab_repo: Path, crs):
    repo = _with(lab_repo, "clusterpolicy-crd.yaml", *crs)
    audit = run_cli("audit", str(repo))
    # nothing to audit on nodes no NVIDIADriver owns: the operator installs no driver there
    assert (audit.returncode, audit.stdout) == (0, "OK\n")
    result = run_cli("operands", str(repo))
    assert ("lab-node-1  yes" in result.stdout) is bool(crs)


def test_verbose_says_how_gpus_and_drivers_are_decided(lab_repo: Path):
    repo = _with(
        lab_repo, "clusterpolicy-crd.yaml", "nvidiadriver-550.yaml", "nvidiadriver-535.yaml"
    )
    result = run_cli("check", "-v", str(repo))
    # once per run: the lab's nodes carry no NFD PCI label, so gpu.present is read as written
    assert result.stderr.count("gpus    nvidia.com/gpu.present as written") == 1
    assert "driver  NVIDIADriver CRs, 3 pool(s)\n" in result.stderr


@pytest.mark.slow
def test_audit_os_conflict_names_os_tags_with_a_dash_whole(tmp_path: Path):
    write(
        tmp_path,
        "support-matrix.csv",
        "driver_branch,kernel,os_tag\n"
        "550,5.15.0-119-generic,ubuntu22.04\n550,5.15.0-119-generic,sles15-SP6\n",
    )
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b", os_id="sles", version="15-SP6"))
    write(tmp_path, "cp.yaml", cluster_policy('  driver:\n    version: "550"\n'))
    audit = run_cli("audit", str(tmp_path), "--matrix", str(tmp_path / "support-matrix.csv"))
    assert (audit.returncode, audit.stdout) == (
        1,
        "a OS-CONFLICT sles15-SP6,ubuntu22.04\nb OS-CONFLICT sles15-SP6,ubuntu22.04\n",
    )
