"""Lab step 5 through the installed CLI: `place` and the placement findings of `check`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli, write

NOT_HELPFUL = (
    "no new claims to deallocate, preemption: 0/{n} nodes are available: {n} Preemption is not "
    "helpful for scheduling."
)

PLACE_LAB = """\
Pod/gpu-drv/cuda12-job  k8s/cuda12-job.yaml:5:3
  lands on 1 of 3 nodes: lab-node-0
  CUDA 12.5.1 (nvcr.io/nvidia/pytorch:24.07-py3) needs driver 555.42.06, from branch 525 with limits: limited on lab-node-0
Pod/gpu-drv/cuda13-job  k8s/cuda13-job.yaml:5:3
  lands on no node: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.
  - the affinity term requires nvidia.com/cuda.driver.major Gt 560, which removes lab-node-0, lab-node-1, lab-node-2; highest in inventory is 550 on lab-node-0, lab-node-2
  CUDA 12.8.1 (nvcr.io/nvidia/pytorch:25.03-py3) needs driver 570.124.06, from branch 525 with limits
Deployment/gpu-drv/trainer  k8s/trainer.yaml:5:3
  lands on 3 of 3 nodes: lab-node-0, lab-node-1, lab-node-2
  CUDA 12.5.1 (nvcr.io/nvidia/pytorch:24.07-py3) needs driver 555.42.06, from branch 525 with limits: limited on lab-node-0, lab-node-1, lab-node-2
3 workload(s) on 3 node(s): 2 placed, 1 with no node
"""  # noqa: E501


@pytest.mark.slow
def test_place_on_the_lab(lab_repo: Path) -> None:
    result = run_cli("place", str(lab_repo))
    assert (result.returncode, result.stdout, result.stderr) == (1, PLACE_LAB, "")


@pytest.mark.slow
def test_place_json_gives_the_lab_expectations(lab_repo: Path) -> None:
    result = run_cli("place", str(lab_repo), "--format", "json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    by_name = {w["workload"]: w for w in doc["workloads"]}
    assert by_name["Pod/gpu-drv/cuda12-job"]["nodes"] == ["lab-node-0"]
    assert by_name["Deployment/gpu-drv/trainer"]["nodes"] == [
        "lab-node-0",
        "lab-node-1",
        "lab-node-2",
    ]
    pending = by_name["Pod/gpu-drv/cuda13-job"]
    assert (pending["status"], pending["nodes"]) == ("pending", [])
    assert pending["message"] == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        + NOT_HELPFUL.format(n=3)
    )
    assert pending["why"] == [
        "the affinity term requires nvidia.com/cuda.driver.major Gt 560, which removes "
        "lab-node-0, lab-node-1, lab-node-2; highest in inventory is 550 on lab-node-0, lab-node-2"
    ]
    assert pending["constraint"] == {"file": "k8s/cuda13-job.yaml", "line": 16, "column": 11}
    assert by_name["Pod/gpu-drv/cuda12-job"]["cuda"][0]["minor_version_compatibility"] == {
        "lab-node-0": "550.90.07"
    }
    assert doc["summary"] == {
        "workloads": 3,
        "placed": 2,
        "pending": 1,
        "rejected": 0,
        "exit_code": 1,
    }
    assert run_cli("place", str(lab_repo), "--format", "json").stdout == result.stdout


@pytest.mark.slow
def test_place_one_workload_with_every_verdict(lab_repo: Path) -> None:
    result = run_cli("place", str(lab_repo), "--workload", "Pod/gpu-drv/cuda12-job")
    assert result.returncode == 0
    assert result.stdout.splitlines()[-4:] == [
        "    lab-node-0: fits",
        "    lab-node-1: node(s) didn't match Pod's node affinity/selector",
        "    lab-node-2: node(s) didn't match Pod's node affinity/selector",
        "1 workload(s) on 3 node(s): 1 placed, 0 with no node",
    ]
    doc = json.loads(
        run_cli(
            "place", str(lab_repo), "--workload", "deployment/gpu-drv/trainer", "--format", "json"
        ).stdout
    )
    assert [v["fits"] for v in doc["workloads"][0]["verdicts"]] == [True, True, True]


@pytest.mark.slow
def test_place_usage_errors(lab_repo: Path, tmp_path: Path) -> None:
    bad = run_cli("place", str(lab_repo), "--workload", "trainer")
    assert bad.returncode == 2 and "expected KIND/NAMESPACE/NAME" in bad.stderr
    missing = run_cli("place", str(lab_repo), "--workload", "Pod/gpu-drv/nope")
    assert missing.returncode == 2
    assert (
        "no workload Pod/gpu-drv/nope" in missing.stderr
        and "Pod/gpu-drv/cuda12-job" in missing.stderr
    )
    write(tmp_path, "empty/pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    no_nodes = run_cli("place", str(tmp_path / "empty"))
    assert no_nodes.returncode == 2 and "no nodes" in no_nodes.stderr
    assert "Traceback" not in bad.stderr + missing.stderr + no_nodes.stderr


def test_check_reports_cuda13_job_at_its_affinity_term(lab_repo: Path) -> None:
    result = run_cli("check", str(lab_repo), "--format", "concise")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert (
        "k8s/cuda13-job.yaml:16:11: error GPU010 Pod gpu-drv/cuda13-job stays Pending: 0/3 nodes "
        "are available: 3 node(s) didn't match Pod's node affinity/selector. "
        + NOT_HELPFUL.format(n=3)
        + " Why: the affinity term requires nvidia.com/cuda.driver.major Gt 560, which removes "
        "lab-node-0, lab-node-1, lab-node-2; highest in inventory is 550 on lab-node-0, "
        "lab-node-2."
    ) in lines
    # 24.07 (CUDA 12.5.1) on 550/535 runs under minor version compatibility: info, not an error
    infos = [line for line in lines if " info GPU011 " in line]
    assert [line.split(":")[0] for line in infos] == ["k8s/cuda12-job.yaml", "k8s/trainer.yaml"]
    # with three nodes the fourth trainer replica is Pending (GPU021), so the budget allows 0
    # evictions (GPU020): the lab's step 6 finding, one step early
    errors = sorted(line.split(" ")[2] for line in lines if " error GPU" in line)
    assert errors == ["GPU010", "GPU020", "GPU021"]
    assert lines[-1] == "6 files, 8 objects read; 3 errors, 0 warnings, 2 info"


def test_step_4_node_joins_the_placement(lab_repo: Path) -> None:
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    result = run_cli("place", str(lab_repo), "--format", "json")
    by_name = {w["workload"]: w for w in json.loads(result.stdout)["workloads"]}
    assert by_name["Pod/gpu-drv/cuda12-job"]["nodes"] == ["lab-node-0"]  # 24.04 on lab-node-3
    assert by_name["Deployment/gpu-drv/trainer"]["nodes"][-1] == "lab-node-3"
    assert by_name["Pod/gpu-drv/cuda13-job"]["message"].startswith(
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
    )
    assert by_name["Pod/gpu-drv/cuda13-job"]["why"][0].endswith(
        "highest in inventory is 550 on lab-node-0, lab-node-2, lab-node-3"
    )


@pytest.mark.slow
def test_fixing_the_affinity_clears_gpu010(lab_repo: Path) -> None:
    job = lab_repo / "k8s" / "cuda13-job.yaml"
    job.write_text(job.read_text().replace('values: ["560"]', 'values: ["549"]'))
    result = run_cli("place", str(lab_repo), "--workload", "Pod/gpu-drv/cuda13-job")
    assert result.returncode == 0
    assert "lands on 2 of 3 nodes: lab-node-0, lab-node-2" in result.stdout
    assert " GPU010 " not in run_cli("check", str(lab_repo)).stdout


@pytest.mark.slow
def test_cuda_table_extension_from_the_config(lab_repo: Path) -> None:
    config = lab_repo / ".gpudrv-check.yaml"
    config.write_text(
        config.read_text()
        + 'cuda:\n  min_driver: {"12.5.1": "550.0"}\n'  # pretend 12.5.1 were fine on 550
    )
    result = run_cli("check", str(lab_repo), "--format", "concise")
    infos = [line for line in result.stdout.splitlines() if " info GPU011 " in line]
    assert [line.split(":")[0] for line in infos] == ["k8s/trainer.yaml"]  # lab-node-1: 535
    config.write_text(config.read_text() + "  imagez: []\n")
    broken = run_cli("check", str(lab_repo))
    assert broken.returncode == 2
    assert ".gpudrv-check.yaml:8:3: cuda: unknown key 'imagez'" in broken.stderr  # at the key


def _console_block(readme: Path, command: str) -> str:
    text = readme.read_text()
    start = text.index(f"$ {command}\n") + len(f"$ {command}\n")
    return text[start : text.index("```", start)]


@pytest.mark.slow
def test_readme_examples_are_the_real_output() -> None:
    from tests.conftest import EXAMPLES, ROOT

    for readme, args in [
        (EXAMPLES / "lab" / "README.md", ["place", "examples/lab"]),
        (
            ROOT / "README.md",
            ["place", "examples/lab", "--workload", "Pod/gpu-drv/cuda13-job"],
        ),
    ]:
        result = run_cli(*args, cwd=ROOT)
        assert result.stdout == _console_block(readme, "gpudrv-check " + " ".join(args))
