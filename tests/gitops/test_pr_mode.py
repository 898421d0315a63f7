"""`--base REV`: a two-commit repo; exactly the findings the change introduces are reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import MATRIX, gpu_node, run_main, write
from tests.gitops.conftest import commit, git

OLD_KERNEL = "5.4.0-200-generic"  # legacy's kernel: never built (an old, known finding)
NEW_KERNEL = "6.8.0-52-generic"


def inventory(*entries: tuple[str, str]) -> str:
    lines = ["apiVersion: gpudrv-check.io/v1alpha1", "kind: NodeInventory", "nodes:"]
    for name, kernel in entries:
        lines += [
            f"- name: {name}",
            "  labels:",
            '    nvidia.com/gpu.present: "true"',
            '    nvidia.com/cuda.driver-version.major: "550"',
            f"    feature.node.kubernetes.io/kernel-version.full: {kernel}",
            "    feature.node.kubernetes.io/system-os_release.ID: ubuntu",
            '    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"',
        ]
    return "\n".join(lines) + "\n"


RACK = "  labels:\n    example.com/rack: 7\n"


@pytest.fixture
def pr_repo(git_repo: Path) -> tuple[Path, str]:
    """Base: four old findings. Head: one new node, and edits that move every old finding."""
    root = git_repo
    write(root, "support-matrix.csv", MATRIX + MATRIX.splitlines()[1] + "\n")  # duplicate row
    write(root, "nodes/a.yaml", gpu_node("a").replace("  labels:\n", RACK))  # GPU007
    write(root, "nodes/legacy.yaml", gpu_node("legacy", kernel=OLD_KERNEL))  # GPU001
    write(root, "inventory.yaml", inventory(("inv-old", OLD_KERNEL)))  # GPU001
    base = commit(root, "base")

    # head: a row inserted above the duplicate, a label above the GPU007 one, a file moved,
    # an inventory entry inserted above the old one -- and one new node with no image
    write(
        root,
        "support-matrix.csv",
        "driver_branch,kernel,os_tag\n535,5.15.0-107-generic,ubuntu22.04\n"
        + "\n".join(MATRIX.splitlines()[1:] * 2)
        + "\n",
    )
    write(
        root,
        "nodes/a.yaml",
        gpu_node("a").replace(
            "  labels:\n", "  labels:\n    zone: a\n" + RACK[len("  labels:\n") :]
        ),
    )
    (root / "old").mkdir()
    shutil.move(root / "nodes" / "legacy.yaml", root / "old" / "legacy.yaml")
    write(root, "inventory.yaml", inventory(("inv-new", NEW_KERNEL), ("inv-old", OLD_KERNEL)))
    commit(root, "head")
    return root, base


def _json(result) -> dict:
    return json.loads(result.stdout)


@pytest.mark.slow
def test_pr_mode_reports_exactly_the_new_finding(pr_repo: tuple[Path, str]):
    root, base = pr_repo
    full = _json(run_main("check", str(root), "--format", "json"))
    assert len(full["findings"]) == 5  # four old ones, moved, and the new one

    result = run_main("check", str(root), "--base", base, "--format", "json")
    assert result.returncode == 1, result.stderr
    doc = _json(result)
    got = [
        (f["rule"], f["object"]["name"], f["location"]["file"], f["location"]["line"])
        for f in doc["findings"]
    ]
    assert got == [("GPU001", "inv-new", "inventory.yaml", 8)]
    summary = doc["summary"]
    assert (summary["new"], summary["fixed"], summary["unchanged"]) == (1, 0, 4)
    assert summary["base"] == base and summary["errors"] == 1 and summary["exit_code"] == 1


def test_pr_mode_text_summary_and_gate(pr_repo: tuple[Path, str]):
    root, base = pr_repo
    result = run_main("check", str(root), "--base", base, "--format", "concise")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "inventory.yaml:8:5: error GPU001 node inv-new needs driver image "
        f"550-{NEW_KERNEL}-ubuntu22.04"
    )
    assert lines[-1] == f"1 new, 0 fixed, 4 unchanged (base {base})"
    assert "legacy" not in result.stdout and "GPU006" not in result.stdout


def test_a_change_that_only_fixes_passes_and_counts_the_fix(pr_repo: tuple[Path, str]):
    root, _ = pr_repo
    with open(root / "support-matrix.csv", "a") as matrix:
        matrix.write(f"550,{NEW_KERNEL},ubuntu22.04\n550,{OLD_KERNEL},ubuntu22.04\n")
    commit(root, "images built")
    result = run_main("check", str(root), "--base", "HEAD~1")
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1] == "0 new, 3 fixed, 2 unchanged (base HEAD~1)"


@pytest.mark.slow
def test_head_can_be_a_revision_too(pr_repo: tuple[Path, str]):
    root, base = pr_repo
    # a dirty working tree does not matter when the head is --rev
    write(root, "nodes/dirty.yaml", gpu_node("dirty", kernel="9.9.9-1-generic"))
    result = run_main("check", str(root), "--rev", "HEAD", "--base", base, "--format", "json")
    names = [f["object"]["name"] for f in _json(result)["findings"]]
    assert names == ["inv-new"]
    same = run_main("check", str(root), "--rev", base, "--base", base)
    assert same.returncode == 0 and same.stdout.splitlines()[-1].startswith("0 new, 0 fixed, 4")


def test_pr_mode_in_a_subdirectory_and_a_branch_name(git_repo: Path):
    root = git_repo / "clusters" / "prod"
    write(root, "support-matrix.csv", MATRIX)
    write(root, "n.yaml", gpu_node("a"))
    commit(git_repo, "base")
    git(git_repo, "checkout", "-q", "-b", "feature")
    write(root, "m.yaml", gpu_node("b", kernel=NEW_KERNEL))
    result = run_main("check", str(root), "--base", "main", "--format", "concise")
    assert result.returncode == 1
    assert result.stdout.startswith("m.yaml:9:5: error GPU001 node b needs driver image")
    assert result.stdout.splitlines()[-1] == "1 new, 0 fixed, 0 unchanged (base main)"


def test_base_needs_a_git_repository(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    result = run_main("check", str(tmp_path), "--base", "main")
    assert result.returncode == 2
    assert "is not inside a git repository" in result.stderr


def test_pr_mode_json_follows_the_output_schema(pr_repo: tuple[Path, str]):
    import jsonschema

    from tests.conftest import ROOT

    root, base = pr_repo
    doc = _json(run_main("check", str(root), "--base", base, "--format", "json"))
    schema = json.loads((ROOT / "schemas" / "output.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert set(schema["properties"]["summary"]["properties"]) >= {"base", "new", "fixed"}


def test_a_base_without_the_matrix_is_checked_without_it(git_repo: Path):
    """Since issue 13 a check runs without the default matrix (one warning): the base is
    checked, its warning is fixed at the head, and the head's new finding is new."""
    root = git_repo / "clusters" / "prod"
    write(root, "n.yaml", gpu_node("a"))
    base = commit(git_repo, "base")
    write(root, "support-matrix.csv", MATRIX)
    write(root, "m.yaml", gpu_node("b", kernel=NEW_KERNEL))
    result = run_main("check", str(root), "--base", base)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == f"1 new, 1 fixed, 0 unchanged (base {base})"
    assert "cannot be checked" not in result.stderr


@pytest.mark.parametrize("what", ["new-directory"])
def test_a_base_that_cannot_be_checked_counts_everything_as_new(git_repo: Path, what: str):
    write(git_repo, "README.md", "a GitOps repo\n")
    root = git_repo / "clusters" / "prod"
    base = commit(git_repo, "base")
    write(root, "support-matrix.csv", MATRIX)
    write(root, "m.yaml", gpu_node("b", kernel=NEW_KERNEL))
    result = run_main("check", str(root), "--base", base)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == f"1 new, 0 fixed, 0 unchanged (base {base})"
    assert result.stderr.startswith(f"gpudrv-check: warning: the base {base} cannot be checked (")
    assert result.stderr.endswith("); every finding counts as new\n")


def test_findings_a_baseline_accepts_are_not_counted_fixed(git_repo: Path, tmp_path: Path):
    """With --baseline beside --base, the findings the baseline accepts at the head are still
    there: the base's findings they match are not fixed (review: a change that touched one
    comment counted every baselined finding as fixed)."""
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "nodes/a.yaml", gpu_node("a", kernel=NEW_KERNEL))
    write(git_repo, "nodes/b.yaml", gpu_node("b", kernel=NEW_KERNEL))
    commit(git_repo, "two nodes without images")
    baseline = tmp_path / "baseline.json"
    wrote = run_main("check", str(git_repo), "--no-cache", "--write-baseline", str(baseline))
    assert wrote.returncode == 0, wrote.stderr
    with open(git_repo / "nodes" / "a.yaml", "a") as fh:
        fh.write("# touched\n")
    commit(git_repo, "a comment")
    result = run_main(
        "check", str(git_repo), "--base", "HEAD~1", "--baseline", str(baseline), "--format", "json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = _json(result)["summary"]
    assert (summary["new"], summary["fixed"], summary["unchanged"]) == (0, 0, 0)
    assert summary["suppressed"] == 2
