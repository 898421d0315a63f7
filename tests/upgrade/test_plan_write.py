"""`plan --write`: exact bytes after the edit, and every refusal leaving the bytes as they were."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudrv_check.edit.matrix_row import append_row
from gpudrv_check.edit.node_labels import guess_indent, rewrite_labels
from gpudrv_check.edit.safe_write import (
    EditError,
    FileEdit,
    apply_edits,
    digest,
    read_unchanged,
    replace_atomically,
    resolve_inside,
)
from tests.conftest import run_main

HEADER = "driver_branch,kernel,os_tag\n"
OLD_ROW = "535,5.15.0-107-generic,ubuntu22.04\n"
NEW_ROW = "550,5.15.0-107-generic,ubuntu22.04"

NODE = (
    "# exported with kubectl get node gpu-1 -o yaml\r\n"
    "apiVersion: v1\r\n"
    "kind: Node\r\n"
    "metadata:\r\n"
    "  name: gpu-1   # rack 4\r\n"
    "  labels:\r\n"
    "    # written by GPU Feature Discovery\r\n"
    "    nvidia.com/cuda.driver-version.major: '535'  # branch\r\n"
    "    nvidia.com/cuda.driver-version.full: 535.183.06\r\n"
    '    nvidia.com/gpu.present: "true"\r\n'
    "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-107-generic\r\n"
    "    feature.node.kubernetes.io/system-os_release.ID: ubuntu\r\n"
    '    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"\r\n'
    "spec:\r\n"
    "  taints:\r\n"
    "  - key: nvidia.com/gpu\r\n"
    "    effect: NoSchedule\r\n"
)

INVENTORY = """\
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
    - name: gpu-0
      labels: {nvidia.com/gpu.present: "true", nvidia.com/cuda.driver.major: "535"}
    - name: gpu-1
      labels:
          nvidia.com/gpu.present: "true"
          nvidia.com/cuda.driver.major: "535"      # before the upgrade
          nvidia.com/cuda.driver.minor: "183"
          nvidia.com/cuda.driver.rev: "06"
          feature.node.kubernetes.io/kernel-version.full: 5.15.0-107-generic
          feature.node.kubernetes.io/system-os_release.ID: ubuntu
          feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
"""


def repo(tmp_path: Path, rel: str, text: str, matrix: str = HEADER + OLD_ROW) -> Path:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_bytes(text.encode())
    (tmp_path / "support-matrix.csv").write_bytes(matrix.encode())
    return tmp_path


def write_plan(root: Path, node: str = "gpu-1", *extra: str):
    return run_main("plan", node, "--driver", "550.90.07", str(root), "--write", *extra)


def test_single_node_crlf_comments_and_quotes(tmp_path: Path):
    root = repo(tmp_path, "nodes/gpu-1.yaml", NODE)
    result = write_plan(root)
    assert result.returncode == 0, result.stdout + result.stderr
    expected = NODE.replace("'535'  # branch", "'550'  # branch").replace(
        "full: 535.183.06", "full: 550.90.07"
    )
    assert (root / "nodes/gpu-1.yaml").read_bytes() == expected.encode()
    assert (root / "support-matrix.csv").read_bytes() == (
        HEADER + OLD_ROW + NEW_ROW + "\n"
    ).encode()
    assert sorted(os.listdir(root / "nodes")) == ["gpu-1.yaml"]  # no temporary file left


def test_node_inventory_entry(tmp_path: Path):
    root = repo(tmp_path, "inventory.yaml", INVENTORY)
    result = write_plan(root)
    assert result.returncode == 0, result.stdout + result.stderr
    expected = (
        INVENTORY.replace('major: "535"      # before', 'major: "550"      # before')
        .replace('minor: "183"', 'minor: "90"')
        .replace('rev: "06"', 'rev: "07"')
    )
    assert (root / "inventory.yaml").read_text() == expected
    # gpu-0 (flow-style labels, same old values) is untouched
    assert '{nvidia.com/gpu.present: "true", nvidia.com/cuda.driver.major: "535"}' in expected


def test_a_layout_ruamel_would_change_is_refused(tmp_path: Path):
    text = NODE.replace("\r\n", "\n").replace("spec:\n", "spec:\n  podCIDRs: [ 10.0.0.0/24 ]\n")
    root = repo(tmp_path, "nodes.yaml", text)
    before = {p: p.read_bytes() for p in root.iterdir()}
    result = write_plan(root)
    assert result.returncode == 2
    assert "would also change this line ('podCIDRs: [ 10.0.0.0/24 ]'" in result.stderr
    assert "Nothing was written" in result.stderr
    assert "4. relabel: ready" in result.stdout  # the plan still says what to change by hand
    assert {p: p.read_bytes() for p in root.iterdir()} == before


def test_matrix_outside_the_repo_is_refused(tmp_path: Path):
    root = repo(tmp_path / "repo", "nodes.yaml", NODE)
    outside = tmp_path / "elsewhere.csv"
    outside.write_text(HEADER + OLD_ROW)
    node_bytes = (root / "nodes.yaml").read_bytes()
    result = write_plan(root, "gpu-1", "--matrix", str(outside))
    assert result.returncode == 2
    assert "outside the repo root" in result.stderr
    assert outside.read_text() == HEADER + OLD_ROW
    assert (root / "nodes.yaml").read_bytes() == node_bytes


def test_a_matrix_symlink_inside_the_repo_is_written_through(tmp_path: Path):
    root = repo(tmp_path, "nodes.yaml", NODE)
    (root / "data").mkdir()
    os.replace(root / "support-matrix.csv", root / "data" / "matrix.csv")
    (root / "support-matrix.csv").symlink_to(Path("data") / "matrix.csv")
    result = write_plan(root)
    assert result.returncode == 0, result.stderr
    assert (root / "support-matrix.csv").is_symlink()
    assert (root / "data" / "matrix.csv").read_text() == HEADER + OLD_ROW + NEW_ROW + "\n"


def test_a_matrix_symlink_leaving_the_repo_is_refused(tmp_path: Path):
    root = repo(tmp_path / "repo", "nodes.yaml", NODE)
    outside = tmp_path / "shared.csv"
    outside.write_text(HEADER + OLD_ROW)
    (root / "support-matrix.csv").unlink()
    (root / "support-matrix.csv").symlink_to(outside)
    # the loader refuses it already: config paths stay inside the repo
    result = write_plan(root)
    assert result.returncode == 2 and "leaves the repo root" in result.stderr
    assert outside.read_text() == HEADER + OLD_ROW


@pytest.mark.parametrize(
    ("original", "header", "expected"),
    [
        (
            HEADER + OLD_ROW,
            ["driver_branch", "kernel", "os_tag"],
            HEADER + OLD_ROW + NEW_ROW + "\n",
        ),
        (
            HEADER + OLD_ROW.rstrip("\n"),
            ["driver_branch", "kernel", "os_tag"],
            HEADER + OLD_ROW + NEW_ROW + "\n",
        ),
        (
            "\ufeffdriver_branch,kernel,os_tag\r\n535,k,u\r\n",
            ["driver_branch", "kernel", "os_tag"],
            "\ufeffdriver_branch,kernel,os_tag\r\n535,k,u\r\n" + NEW_ROW + "\r\n",
        ),
        (
            "# built images\nos_tag,kernel,driver_branch,notes\n",
            ["os_tag", "kernel", "driver_branch", "notes"],
            "# built images\nos_tag,kernel,driver_branch,notes\n"
            "ubuntu22.04,5.15.0-107-generic,550,\n",
        ),
    ],
)
def test_append_row(original: str, header: list[str], expected: str):
    got = append_row(original.encode(), header, "550", "5.15.0-107-generic", "ubuntu22.04")
    assert got == expected.encode()


def test_append_row_refuses_a_matrix_without_header():
    with pytest.raises(EditError):
        append_row(b"", [], "550", "k", "u")


@pytest.mark.parametrize(
    ("text", "indent"),
    [
        ("items:\n- a: 1\n  b:\n    c: 2\n", (2, 0)),
        ("spec:\n    taints:\n      - key: a\n", (4, 2)),
        ("nodes:\n  - name: x\n    labels:\n      a: b\n", (2, 2)),
        ("a: 1\n", (2, 0)),
    ],
)
def test_guess_indent(text: str, indent: tuple[int, int]):
    assert guess_indent(text) == indent


LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: a
    labels:
      nvidia.com/cuda.driver.major: "535"
- apiVersion: v1
  kind: Node
  metadata:
    name: b
    labels:
      nvidia.com/cuda.driver.major: 535
"""


def test_rewrite_labels_in_a_list_item():
    out = rewrite_labels(
        LIST.encode(),
        "nodes.yaml",
        0,
        ("items", 1, "metadata", "labels"),
        ("items", 1, "metadata", "name"),
        "b",
        {"nvidia.com/cuda.driver.major": "550"},
    )
    # a label written as a YAML number comes back as the string the API server needs
    assert out.decode() == LIST.replace("major: 535\n", 'major: "550"\n')


@pytest.mark.parametrize(
    ("path", "name", "changes", "text"),
    [
        (
            ("items", 1, "metadata", "labels"),
            "a",
            {"nvidia.com/cuda.driver.major": "550"},
            "no longer",
        ),
        (
            ("items", 1, "metadata", "labels"),
            "b",
            {"nvidia.com/cuda.driver.rev": "07"},
            "has no label",
        ),
        (("items", 5, "metadata", "labels"), "b", {}, "not found"),
    ],
)
def test_rewrite_labels_refusals(path, name, changes, text):
    with pytest.raises(EditError, match=text):
        rewrite_labels(
            LIST.encode(), "nodes.yaml", 0, path, ("items", 1, "metadata", "name"), name, changes
        )


def test_read_unchanged_refuses_a_changed_file(tmp_path: Path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"one")
    read_unchanged(tmp_path, "m.csv", digest(b"one"))
    with pytest.raises(EditError, match="changed since it was read"):
        read_unchanged(tmp_path, "m.csv", digest(b"two"))


def test_read_unchanged_says_why_a_file_cannot_be_read(tmp_path: Path):
    """An OSError (here: over the 1 GiB limit, a sparse file) is an EditError, which
    `plan --write` reports, not an internal error."""
    with open(tmp_path / "m.csv", "wb") as handle:
        handle.truncate((1 << 30) + 1)
    with pytest.raises(EditError, match=r"m\.csv: cannot read it: .*over the limit"):
        read_unchanged(tmp_path, "m.csv", digest(b"one"))


def test_resolve_inside(tmp_path: Path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "outside.csv").write_text("x")
    (tmp_path / "repo" / "link.csv").symlink_to(tmp_path / "outside.csv")
    with pytest.raises(EditError, match="outside the repo root"):
        resolve_inside(tmp_path / "repo", "link.csv")
    with pytest.raises(EditError, match="outside the repo root"):
        resolve_inside(tmp_path / "repo", "../outside.csv")
    with pytest.raises(EditError, match="outside the repo root"):
        resolve_inside(tmp_path / "repo", str(tmp_path / "outside.csv"))


def test_replace_atomically_refuses_when_the_file_changed_meanwhile(tmp_path: Path):
    path = tmp_path / "f.yaml"
    path.write_bytes(b"theirs")
    with pytest.raises(EditError, match="changed while it was being rewritten"):
        replace_atomically(path, b"ours", b"new")
    assert path.read_bytes() == b"theirs"
    assert os.listdir(tmp_path) == ["f.yaml"]


def test_replace_atomically_keeps_the_mode(tmp_path: Path):
    path = tmp_path / "f.yaml"
    path.write_bytes(b"old")
    path.chmod(0o640)
    replace_atomically(path, b"old", b"new")
    assert path.read_bytes() == b"new" and (path.stat().st_mode & 0o777) == 0o640


def test_a_failure_midway_restores_the_files_already_written(tmp_path: Path):
    first = tmp_path / "a.csv"
    second = tmp_path / "b.yaml"
    first.write_bytes(b"a-old")
    second.write_bytes(b"b-changed-by-someone")
    edits = [
        FileEdit("a.csv", first, b"a-old", b"a-new", "a"),
        FileEdit("b.yaml", second, b"b-old", b"b-new", "b"),
    ]
    with pytest.raises(EditError):
        apply_edits(edits)
    assert first.read_bytes() == b"a-old"
    assert second.read_bytes() == b"b-changed-by-someone"
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "b.yaml"]
