"""`plan --write` refuses labels an anchor, an alias or a merge key may share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_main

MATRIX = (
    "driver_branch,kernel,os_tag\n"
    "535,5.15.0-107-generic,ubuntu22.04\n"
    "550,5.15.0-107-generic,ubuntu22.04\n"
)
LABELS = """\
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver.major: "535"
    nvidia.com/cuda.driver.minor: "183"
    nvidia.com/cuda.driver.rev: "06"
    feature.node.kubernetes.io/kernel-version.full: 5.15.0-107-generic
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
"""
HEAD = "apiVersion: gpudrv-check.io/v1alpha1\nkind: NodeInventory\nnodes:\n- name: node-a\n"
ALIAS = f"{HEAD}  labels: &gpu\n{LABELS}- name: node-b\n  labels: *gpu\n"
MERGE = f"{HEAD}  labels: &base\n{LABELS}- name: node-b\n  labels:\n    <<: *base\n    pool: b\n"
ANCHORED_NODE = HEAD.replace("- name: node-a", "- &a\n  name: node-a") + "  labels:\n" + LABELS


def _repo(tmp_path: Path, nodes: str) -> Path:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "support-matrix.csv").write_text(MATRIX)
    (tmp_path / ".gpudrv-check.yaml").write_text(
        "matrix: support-matrix.csv\ninventory: [inventory/nodes.yaml]\n"
    )
    (tmp_path / "inventory" / "nodes.yaml").write_text(nodes)
    return tmp_path


@pytest.mark.parametrize(
    ("nodes", "node", "why"),
    [
        (ALIAS, "node-b", "has an anchor &gpu (its aliases *gpu share it)"),
        (ALIAS, "node-a", "has an anchor &gpu"),
        (MERGE, "node-b", "merges another mapping (`<<:`)"),
        (ANCHORED_NODE, "node-a", "has an anchor &a"),
    ],
)
def test_shared_labels_are_refused_and_nothing_written(
    tmp_path: Path, nodes: str, node: str, why: str
) -> None:
    repo = _repo(tmp_path, nodes)
    result = run_main("plan", node, "--driver", "550.90.07", str(repo), "--write")
    assert result.returncode == 2, result.stderr
    assert f"the labels of {node} may be shared" in result.stderr
    assert why in result.stderr and "nothing written" in result.stderr.lower()
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert (repo / "inventory" / "nodes.yaml").read_text() == nodes
    assert sorted(p.name for p in (repo / "inventory").iterdir()) == ["nodes.yaml"]


def test_unshared_labels_are_still_rewritten(tmp_path: Path) -> None:
    nodes = f"{HEAD}  labels:\n{LABELS}"
    repo = _repo(tmp_path, nodes)
    result = run_main("plan", "node-a", "--driver", "550.90.07", str(repo), "--write")
    assert result.returncode in (0, 1), result.stderr
    text = (repo / "inventory" / "nodes.yaml").read_text()
    assert 'nvidia.com/cuda.driver.major: "550"' in text


def test_a_plan_write_that_fails_names_the_file(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    nodes = f"{HEAD}  labels:\n{LABELS}"
    repo = _repo(tmp_path, nodes)

    def read_only(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "x")

    monkeypatch.setattr("gpudrv_check.edit.safe_write.replace_atomically", read_only)
    result = run_main("plan", "node-a", "--driver", "550.90.07", str(repo), "--write")
    assert result.returncode == 2, result.stderr
    assert "cannot write inventory/nodes.yaml: Permission denied" in result.stderr
    assert (repo / "inventory" / "nodes.yaml").read_text() == nodes


def test_a_version_of_non_ascii_digits_is_refused(tmp_path: Path) -> None:
    nodes = f"{HEAD}  labels:\n{LABELS}"
    repo = _repo(tmp_path, nodes)
    full_width = "\uff15\uff15\uff10.\uff19\uff10.\uff10\uff17"  # 550.90.07, full-width
    result = run_main("plan", "node-a", "--driver", full_width, str(repo), "--write")
    assert result.returncode == 2, result.stderr
    assert "give the full driver version" in result.stderr
    assert (repo / "inventory" / "nodes.yaml").read_text() == nodes
