"""`rehearse` edge cases, each following the k8s-operator-libs function named in the test.

Small repos of GPU nodes with a ClusterPolicy; the cases change one thing each.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import MATRIX, cluster_policy, run_cli


def node(name: str, extra_labels: str = "", spec: str = "{}", status: str = '"True"') -> str:
    return f"""\
- apiVersion: v1
  kind: Node
  metadata:
    name: {name}
    labels:
      kubernetes.io/hostname: {name}
      nvidia.com/gpu.present: "true"
      nvidia.com/cuda.driver.major: "550"
      nvidia.com/cuda.driver.minor: "90"
      nvidia.com/cuda.driver.rev: "07"
      feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic
      feature.node.kubernetes.io/system-os_release.ID: ubuntu
      feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
{extra_labels}  spec: {spec}
  status:
    conditions:
    - type: Ready
      status: {status}
"""


def policy(body: str) -> str:
    return cluster_policy("  driver:\n    upgradePolicy:\n" + body)


DEFAULT = "      autoUpgrade: true\n      podDeletion: {}\n"


def repo(tmp_path: Path, nodes: list[str], body: str = DEFAULT, extra: str = "") -> Path:
    root = tmp_path / "repo"
    (root / "k8s").mkdir(parents=True)
    (root / "support-matrix.csv").write_text(MATRIX)
    (root / "k8s" / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes)
    )
    (root / "k8s" / "cp.yaml").write_text(policy(body))
    if extra:
        (root / "k8s" / "apps.yaml").write_text(extra)
    return root


def rehearse(root: Path) -> tuple[int, dict]:
    result = run_cli("rehearse", str(root), "--driver", "550.127.05", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def stall_of(out: dict, name: str) -> dict:
    return next(s for s in out["stalls"] if s["node"] == name)


def test_no_pod_deletion_on_a_clusterpolicy_stops_every_node(tmp_path: Path) -> None:
    # pod_manager.go SchedulePodEviction: "pod deletion spec should not be empty"
    code, out = rehearse(repo(tmp_path, [node("a")], "      autoUpgrade: true\n"))
    assert code == 1
    assert stall_of(out, "a")["state"] == "pod-deletion-required"
    assert "pod deletion spec should not be empty" in stall_of(out, "a")["reason"]


def test_a_quoted_max_unavailable_fails_every_reconcile(tmp_path: Path) -> None:
    # ProcessUpgradeRequiredNodes: GetScaledValueFromIntOrPercent fails on "5"
    root = repo(tmp_path, [node("a")], DEFAULT + '      maxUnavailable: "5"\n')
    code, out = rehearse(root)
    assert code == 1 and out["waves"] == []
    assert stall_of(out, "a")["location"] == "k8s/cp.yaml:10:7"


def test_wait_for_completion_on_a_deployment_waits_for_ever(tmp_path: Path) -> None:
    # ScheduleCheckOnPodCompletion: a Running pod with timeoutSeconds 0 never lets go
    app = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: x\n"
        "spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n"
        "    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n"
        "      - name: w\n        image: nginx\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    body = DEFAULT + "      waitForCompletion:\n        podSelector: app=web\n"
    code, out = rehearse(repo(tmp_path, [node("a")], body, app))
    assert code == 1
    stall = stall_of(out, "a")
    assert stall["state"] == "wait-for-jobs-required"
    assert "timeoutSeconds 0 waits for ever" in stall["reason"]


def test_no_validator_on_the_node_waits_for_ever(tmp_path: Path) -> None:
    # validation_manager.go Validate: no validation pod found -> not done, no timeout
    labels = '      nvidia.com/gpu.deploy.operator-validator: "false"\n'
    code, out = rehearse(repo(tmp_path, [node("a", labels)]))
    assert code == 1
    assert stall_of(out, "a")["state"] == "validation-required"
    assert "no operator-validator pod" in stall_of(out, "a")["reason"]


def test_a_not_ready_node_uses_the_budget_and_its_driver_pod_never_starts(tmp_path: Path) -> None:
    # GetCurrentUnavailableNodes counts it; maxUnavailable 25% of 2 = 1 is used up
    nodes = [node("a"), node("b", status='"False"')]
    code, out = rehearse(repo(tmp_path, nodes))
    assert code == 1
    assert out["admitted"] == []
    assert {s["node"]: s["state"] for s in out["stalls"]} == {
        "a": "upgrade-required",
        "b": "upgrade-required",
    }


def test_a_cordoned_node_starts_without_a_slot_and_stays_cordoned(tmp_path: Path) -> None:
    # ProcessUpgradeRequiredNodes: an unschedulable node goes ahead; the initial-state
    # annotation makes ProcessValidationRequiredNodes skip the uncordon
    nodes = [node("a"), node("b"), node("c"), node("d", spec="{unschedulable: true}")]
    code, out = rehearse(repo(tmp_path, nodes, DEFAULT + '      maxUnavailable: "50%"\n'))
    assert code == 0
    assert out["admitted"] == ["a", "d"]
    walked_d = [m["to"] for w in out["waves"] for m in w["nodes"] if m["node"] == "d"]
    assert walked_d[-2:] == ["validation-required", "upgrade-done"]


def test_the_skip_label_only_for_true(tmp_path: Path) -> None:
    nodes = [
        node("a", '      nvidia.com/gpu-driver-upgrade.skip: "true"\n'),
        node("b", '      nvidia.com/gpu-driver-upgrade.skip: "yes"\n'),
    ]
    code, out = rehearse(repo(tmp_path, nodes, DEFAULT + "      maxParallelUpgrades: 0\n"))
    assert code == 0
    moved = {m["node"] for w in out["waves"] for m in w["nodes"] if m["to"] == "upgrade-done"}
    assert moved == {"b"}


def test_drain_after_a_failed_pod_deletion(tmp_path: Path) -> None:
    # updateNodeToDrainOrFailed: drain.enable sends the node to drain-required; the drain
    # evicts what drain.podSelector (+ the skip selector) matches
    bare = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\n  namespace: x\n"
        "spec:\n  containers:\n  - name: s\n    image: cuda\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    body = DEFAULT + "      drain:\n        enable: true\n        force: true\n"
    code, out = rehearse(repo(tmp_path, [node("a")], body, bare))
    assert code == 0
    walked = [m["to"] for w in out["waves"] for m in w["nodes"]]
    assert walked[:5] == [
        "upgrade-required",
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
    ]
    assert [(e["pod"], e["to"]) for w in out["waves"] for e in w["evictions"]] == [
        ("Pod/x/solo#0", None)
    ]


def test_requestor_mode_states_are_left_to_the_maintenance_operator(tmp_path: Path) -> None:
    # upgrade_requestor.go: node-maintenance-required is moved on by the maintenance operator;
    # GetTotalManagedNodes does not count it, so the other node still gets its slot
    labels = "      nvidia.com/gpu-driver-upgrade-state: node-maintenance-required\n"
    code, out = rehearse(repo(tmp_path, [node("a"), node("b", labels)], DEFAULT))
    assert code == 1
    assert out["admitted"] == ["a"]
    assert [s["node"] for s in out["stalls"]] == ["b"]
    assert "requestor mode" in out["stalls"][0]["reason"]
