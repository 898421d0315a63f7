"""`gpudrv-check operands` and the examples/operands walkthrough, through the installed CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_main, write
from tests.operands.build import all_labels, lab_daemonsets, node

TABLE_ROWS = [
    ["NODE", "driver", "container-toolkit", "device-plugin", "gpu-feature-discovery"],
    ["gpu-node-0", "yes", "yes", "yes", "yes", "yes", "ok"],
    ["gpu-node-1", "pre-installed", "yes", "yes", "yes", "yes", "ok"],
    ["gpu-node-2", "yes", "no (label)", "yes", "yes", "yes", "broken"],
]
TABLE_ROWS[0] += ["dcgm-exporter", "CHAIN"]
WIDTHS = [10, 13, 17, 13, 21, 13, 6]
TABLE = "".join(
    "  ".join(c.ljust(w) for c, w in zip(row, WIDTHS, strict=True)).rstrip() + "\n"
    for row in TABLE_ROWS
)


@pytest.fixture
def operands_repo(tmp_path: Path) -> Path:
    dest = tmp_path / "operands"
    shutil.copytree(EXAMPLES / "operands", dest)
    return dest


def test_example_table_and_exit_code(operands_repo: Path):
    result = run_main("operands", str(operands_repo))
    assert (result.returncode, result.stderr) == (1, "")
    out = result.stdout
    assert out.startswith(
        "operands from 5 DaemonSet(s) in the repo; node labels as written (no GPU Operator "
        "configuration in the repo)\n\n" + TABLE
    )
    assert (
        "  gpu-node-2  container-toolkit  label nvidia.com/gpu.deploy.container-toolkit missing"
    ) in out
    assert "  gpu-node-2: device-plugin, gpu-feature-discovery, dcgm-exporter run without " in out
    lines = out.splitlines()
    driver = next(line for line in lines if line.startswith("  gpu-operator/nvidia-driver-"))
    assert driver.split()[1:4] == ["driver", "2", "operands/driver.yaml:6"]
    assert driver.endswith("gpu-node-0, gpu-node-2")


def test_example_check_has_exactly_one_gpu030(operands_repo: Path):
    result = run_main("check", str(operands_repo), "--format", "json")
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert [
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in data["findings"]
    ] == [("GPU030", "k8s/nodes.yaml", 46, 5)]


@pytest.mark.slow
def test_example_fixed_by_the_missing_label(operands_repo: Path):
    nodes = operands_repo / "k8s" / "nodes.yaml"
    text = nodes.read_text()
    anchor = '      nvidia.com/gpu.deploy.driver: "true"\n      nvidia.com/gpu.deploy.device-plugin'
    assert text.count(anchor) == 1
    nodes.write_text(
        text.replace(
            anchor,
            '      nvidia.com/gpu.deploy.driver: "true"\n'
            '      nvidia.com/gpu.deploy.container-toolkit: "true"\n'
            "      nvidia.com/gpu.deploy.device-plugin",
        )
    )
    result = run_main("operands", str(operands_repo))
    assert result.returncode == 0
    assert "broken" not in result.stdout
    check = run_main("check", str(operands_repo))
    assert (check.returncode, check.stdout.splitlines()[-1]) == (
        0,
        "7 files, 10 objects read; 0 errors, 0 warnings",
    )


@pytest.mark.slow
def test_example_steps_new_node_and_tainted_node(operands_repo: Path):
    shutil.copy(operands_repo / "steps" / "node-3.yaml", operands_repo / "k8s" / "node-3.yaml")
    shutil.copy(
        operands_repo / "steps" / "node-4-tainted.yaml",
        operands_repo / "k8s" / "node-4-tainted.yaml",
    )
    result = run_main("operands", str(operands_repo), "--format", "json")
    data = json.loads(result.stdout)
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["gpu-node-3"]["chain"] == "ok"
    assert {s["state"] for s in nodes["gpu-node-3"]["operands"].values()} == {"yes"}
    assert nodes["gpu-node-4"]["chain"] == "none"
    plugin = next(d for d in data["daemonsets"] if d["operand"] == "device-plugin")
    assert plugin["desiredNumberScheduled"] == 4  # gpu-node-4 is not counted
    assert "gpu-node-4" not in plugin["nodes"]
    assert plugin["not_counted_by_taint"] == [
        {"node": "gpu-node-4", "taint": "dedicated=inference:NoSchedule"}
    ]
    reasons = nodes["gpu-node-4"]["operands"]["driver"]["reasons"]
    assert reasons == [
        {
            "kind": "taint",
            "detail": "taint dedicated=inference:NoSchedule not tolerated",
            "file": "k8s/node-4-tainted.yaml",
            "line": 20,
            "column": 5,
        }
    ]
    check = run_main("check", str(operands_repo), "--format", "json")
    rules = sorted(f["rule"] for f in json.loads(check.stdout)["findings"])
    assert rules == ["GPU030", "GPU031", "GPU032", "GPU032", "GPU032", "GPU032", "GPU032"]


@pytest.mark.slow
def test_json_is_deterministic_and_complete(operands_repo: Path):
    first = run_main("operands", str(operands_repo), "--format", "json")
    second = run_main("operands", str(operands_repo), "--format", "json")
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    assert data["mode"] == "daemonsets" and data["config"] is None
    assert data["operands"] == [
        "driver",
        "container-toolkit",
        "device-plugin",
        "gpu-feature-discovery",
        "dcgm-exporter",
    ]
    assert data["hidden_nodes"] == 1
    [broken] = [n for n in data["nodes"] if n["broken"]]
    assert broken["broken"] == [
        {
            "missing": "container-toolkit",
            "running": ["device-plugin", "gpu-feature-discovery", "dcgm-exporter"],
            "reasons": [
                {
                    "kind": "label",
                    "detail": "label nvidia.com/gpu.deploy.container-toolkit missing",
                    "file": "k8s/nodes.yaml",
                    "line": 46,
                    "column": 5,
                }
            ],
        }
    ]


def test_operator_config_table(tmp_path: Path):
    write(
        tmp_path,
        "cp.yaml",
        """\
        apiVersion: nvidia.com/v1
        kind: ClusterPolicy
        metadata:
          name: cluster-policy
        spec:
          driver: {enabled: false}
        """,
    )
    write(tmp_path, "a.yaml", node("gpu-a"))
    result = run_main("operands", str(tmp_path), "--matrix", "none")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "operands from the ClusterPolicy cluster-policy (cp.yaml:1); node labels as the "
        "operator rewrites them on GPU nodes\n"
    )
    assert "gpu-a  no (disabled)  yes " in result.stdout
    why = next(line for line in result.stdout.splitlines() if "driver.enabled" in line)
    assert why.split(maxsplit=2)[2].split("  ")[0] == (
        "disabled in the ClusterPolicy cluster-policy (driver.enabled: false)"
    )
    assert why.endswith("  cp.yaml:6")


def test_nothing_to_show(tmp_path: Path):
    write(tmp_path, "a.yaml", node("gpu-a", all_labels()))
    result = run_main("operands", str(tmp_path))
    assert (result.returncode, result.stdout) == (
        0,
        "no operand DaemonSets and no GPU Operator configuration in the repo\n",
    )


def test_operands_false_note_without_operator(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", {**all_labels(), "operands": "false"}))
    result = run_main("operands", str(tmp_path))
    assert result.returncode == 0
    assert "note: gpu-a: nvidia.com/gpu.deploy.operands=false has no effect here" in result.stdout


def test_usage_errors(tmp_path: Path):
    assert run_main("operands", str(tmp_path / "missing")).returncode == 2
    assert run_main("operands", str(tmp_path), "--format", "yaml").returncode == 2


@pytest.mark.slow
def test_example_readme_shows_the_real_output():
    readme = (EXAMPLES / "operands" / "README.md").read_text()
    root = EXAMPLES.parent
    table = run_main("operands", "examples/operands", cwd=root)
    assert table.stdout + "exit 1\n" in readme
    # the text format wraps to COLUMNS, else 100 columns: the README shows the default
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "GITHUB_ACTIONS")}
    check = run_main("check", "examples/operands", cwd=root, env=env)
    assert check.stdout in readme
