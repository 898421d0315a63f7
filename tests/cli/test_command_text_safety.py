"""`report`, `place` and `plan` print one line per fact: a line break in repo text (a label
value, a node name) is escaped, never a forged line; `place --format json` holds no raw bidi
or line-separator character; `report` prints each key once; `audit` says which files it could
not read whole instead of answering OK about a repo `check` fails."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import MATRIX, run_main, write

NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver.major: "550"
    feature.node.kubernetes.io/kernel-version.full: "5.15.0-999-generic"
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    nvidia.com/gpu-driver-upgrade-state: {state}
status: {{allocatable: {{nvidia.com/gpu: "8"}}}}
---
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def _repo(root: Path, nodes: str) -> Path:
    write(root, "nodes.yaml", nodes)
    write(root, "support-matrix.csv", MATRIX)
    write(root, "pod.yaml", POD)
    return root


def test_a_line_break_in_a_label_value_forges_no_report_line(tmp_path: Path):
    root = _repo(tmp_path, NODE.format(name="gpu-a", state='"upgrade-done\\nNODES=99"'))
    out = run_main("report", str(root), "--node", "gpu-a").stdout
    assert "NODES=99" not in out.splitlines()
    assert "UPGRADE_STATE=upgrade-done\\x0aNODES=99" in out.splitlines()


def test_a_line_break_in_a_node_name_forges_no_place_line(tmp_path: Path):
    fake = "3 workload(s) on 9 node(s): 3 placed, 0 with no node"
    root = _repo(tmp_path, NODE.format(name=f'"gpu-a\\n{fake}"', state="upgrade-done"))
    out = run_main("place", str(root)).stdout
    assert fake not in out.splitlines()
    assert out.splitlines()[-1] == "1 workload(s) on 1 node(s): 1 placed, 0 with no node"


def test_place_json_holds_no_raw_bidi_character(tmp_path: Path):
    root = _repo(tmp_path, NODE.format(name='"gpu-\\u202ea\\u2028x"', state="upgrade-done"))
    out = run_main("place", str(root), "--format", "json").stdout
    assert "\u202e" not in out and "\u2028" not in out
    assert json.loads(out)["workloads"][0]["nodes"] == ["gpu-\u202ea\u2028x"]


def test_report_prints_each_key_once(tmp_path: Path):
    nodes = "".join(
        NODE.format(name=f"gpu-{i}", state=state)
        for i, state in enumerate(("upgrade-done", "upgrade_done", "Upgrade-Done"))
    )
    out = run_main("report", str(_repo(tmp_path, nodes))).stdout.splitlines()
    assert out.count("UPGRADE_STATE_UPGRADE_DONE=3") == 1
    assert len([line for line in out if line.startswith("UPGRADE_STATE_UPGRADE_DONE")]) == 1


def test_audit_says_which_files_it_could_not_read(tmp_path: Path):
    root = _repo(tmp_path, NODE.format(name="gpu-a", state="upgrade-done"))
    write(root, "bad.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    result = run_main("audit", str(root))
    assert "1 file(s) not read whole: bad.yaml" in result.stderr


POLICY = """apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec:
  driver: {repository: registry.example/nvidia, image: driver, version: "550.90.07"%s}
"""


def test_audit_and_report_agree_with_gpu001_without_precompiled(tmp_path: Path):
    """Without usePrecompiled the operator pulls `<version>-<os-tag>` and builds the module on
    the node: a kernel the matrix lacks is GPU001's warning (not validated), so `audit` prints
    no MISSING line (a note on stderr) and `report` counts no skew; with usePrecompiled the
    image `<branch>-<kernel>-<os-tag>` was never built: MISSING, exit 1."""
    root = _repo(tmp_path, NODE.format(name="gpu-a", state="upgrade-done"))
    write(root, "support-matrix.csv", "driver_branch,kernel,os_tag\n550,6.1.0,ubuntu22.04\n")
    write(root, "cp.yaml", POLICY % "")
    audit = run_main("audit", str(root))
    assert (audit.returncode, audit.stdout) == (0, "OK\n")
    assert "not validated, no image missing" in audit.stderr
    assert "SKEW=0" in run_main("report", str(root)).stdout.splitlines()
    write(
        root,
        "cp.yaml",
        POLICY.replace('version: "550.90.07"%s', 'version: "550", usePrecompiled: true'),
    )
    audit = run_main("audit", str(root))
    assert audit.returncode == 1 and audit.stdout.startswith(
        "gpu-a MISSING 550-5.15.0-999-generic-ubuntu22.04"
    )
    assert "SKEW=1" in run_main("report", str(root)).stdout.splitlines()


CPU_NODE = """apiVersion: v1
kind: Node
metadata: {name: cpu-1, labels: {kubernetes.io/hostname: cpu-1}}
"""


def test_place_lists_no_gpu_less_node_among_a_gpu_workloads(tmp_path: Path):
    """A node with no allocatable and no GPU holds none of NVIDIA's resources: `place` lists
    it apart (JSON `no_nvidia`), as the capacity simulation keeps the pods off it."""
    nodes = NODE.format(name="gpu-a", state="upgrade-done") + CPU_NODE
    root = _repo(tmp_path, nodes)
    out = run_main("place", str(root)).stdout.splitlines()
    assert "  lands on 1 of 2 nodes: gpu-a" in out
    assert any(line.startswith("  no NVIDIA resources on cpu-1") for line in out)
    doc = json.loads(run_main("place", str(root), "--format", "json").stdout)
    [entry] = doc["workloads"]
    assert (entry["nodes"], entry["no_nvidia"]) == (["gpu-a"], ["cpu-1"])
