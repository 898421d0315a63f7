"""A large fleet is never read as "no nodes": inventory files have their own size limit.

`max_inventory_bytes` (default 256 MiB) applies to the inventory files the config names and to
`--inventory FILE`; every other manifest keeps `max_file_bytes` (docs/inventory.md#size).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import EXAMPLES, run_main


def _repo(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "lab"
    shutil.copytree(EXAMPLES / "lab", repo)
    nodes = (repo / "k8s" / "nodes.yaml").read_text()
    (repo / "k8s" / "nodes.yaml").unlink()
    (repo / "inventory").mkdir()
    padding = "".join(f"# padding line {i:05d} of a large export\n" for i in range(200))
    (repo / "inventory" / "nodes.yaml").write_text(padding + nodes)  # ~9 KB
    (repo / ".gpudrv-check.yaml").write_text(config + "exclude: [steps/]\n")
    return repo


def test_a_named_inventory_over_max_file_bytes_is_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "max_file_bytes: 4000\ninventory: [inventory/nodes.yaml]\n")
    result = run_main("check", str(repo), "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert not [f for f in findings if f["rule"] == "GPU000"]
    lab = json.loads(run_main("check", str(EXAMPLES / "lab"), "--format", "json").stdout)
    # the nodes were read: the same verdicts as the lab
    assert sorted((f["rule"], f["message"]) for f in findings) == sorted(
        (f["rule"], f["message"]) for f in lab["findings"]
    )
    assert run_main("audit", str(repo)).stdout == run_main("audit", str(EXAMPLES / "lab")).stdout


def test_an_unnamed_file_over_max_file_bytes_is_still_a_finding(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "max_file_bytes: 4000\n")
    result = run_main("check", str(repo), "--format", "json")
    rules = [f["rule"] for f in json.loads(result.stdout)["findings"]]
    assert "GPU000" in rules and "GPU021" not in rules


def test_max_inventory_bytes_bounds_the_named_inventory(tmp_path: Path) -> None:
    config = "max_file_bytes: 4000\nmax_inventory_bytes: 5000\ninventory: [inventory/nodes.yaml]\n"
    repo = _repo(tmp_path, config)
    result = run_main("check", str(repo))
    assert result.returncode == 2
    assert "over max_inventory_bytes (5000)" in result.stderr
    extra = tmp_path / "extra.yaml"
    shutil.copy(repo / "inventory" / "nodes.yaml", extra)
    (repo / ".gpudrv-check.yaml").write_text(
        "max_file_bytes: 4000\nmax_inventory_bytes: 5000\nexclude: [steps/, inventory/]\n"
    )
    result = run_main("check", str(repo), "--inventory", str(extra))
    assert result.returncode == 2
    assert "over max_inventory_bytes (5000)" in result.stderr


def test_an_inventory_option_inside_the_repo_over_max_file_bytes_is_read(tmp_path: Path) -> None:
    # the walk finds the file too: it is the named inventory, read with max_inventory_bytes,
    # not a manifest over max_file_bytes (GPU000) that leaves the repo without nodes
    repo = _repo(tmp_path, "max_file_bytes: 4000\n")
    named = repo / "inventory" / "nodes.yaml"
    for given, cwd in ((str(named), None), ("inventory/nodes.yaml", repo)):
        result = run_main("check", str(repo), "--inventory", given, "--format", "json", cwd=cwd)
        findings = json.loads(result.stdout)["findings"]
        assert not [f for f in findings if f["rule"] == "GPU000"], given
        lab = json.loads(run_main("check", str(EXAMPLES / "lab"), "--format", "json").stdout)
        assert sorted((f["rule"], f["message"]) for f in findings) == sorted(
            (f["rule"], f["message"]) for f in lab["findings"]
        )


def test_a_cluster_inventory_over_max_file_bytes_is_read(tmp_path: Path) -> None:
    # clusters.NAME.inventory is a named inventory as well (docs/clusters.md)
    repo = _repo(tmp_path, "")
    (repo / ".gpudrv-check.yaml").write_text(
        "max_file_bytes: 4000\nexclude: [steps/]\nclusters:\n"
        "  lab: {paths: [k8s], inventory: [inventory/nodes.yaml]}\n"
        "  empty: {paths: [steps]}\n"  # there, but excluded: a cluster of no file
    )
    result = run_main("check", str(repo), "--cluster", "lab", "-v", "--format", "concise")
    assert "GPU000" not in result.stdout
    assert "cluster lab: " in result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("cluster lab: "))
    assert line.split("; ")[0] == "cluster lab: 5 file(s), 3 node(s)"
    assert (
        run_main("audit", str(repo), "--cluster", "lab").stdout
        == run_main("audit", str(EXAMPLES / "lab")).stdout
    )


def test_a_walked_inventory_over_a_lower_max_inventory_bytes_is_refused(tmp_path: Path) -> None:
    """The setting bounds every named inventory, walked or not (review: under max_file_bytes
    it was read as a manifest whatever max_inventory_bytes said, and refused once excluded)."""
    for walked in (True, False):
        repo = _repo(tmp_path / str(walked), "max_inventory_bytes: 100\n")
        excluded = "" if walked else ", inventory/"
        (repo / ".gpudrv-check.yaml").write_text(
            "max_inventory_bytes: 100\ninventory: [inventory/nodes.yaml]\n"
            f"exclude: [steps/{excluded}]\n"
        )
        result = run_main("check", str(repo))
        assert result.returncode == 2, result.stdout
        assert "over max_inventory_bytes (100)" in result.stderr
