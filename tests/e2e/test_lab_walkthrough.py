"""The lab's steps 2-4 (examples/lab/README.md), run through the installed CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli, write

LAB_TAGS = {
    "lab-node-0": "550-5.15.0-119-generic-ubuntu22.04",
    "lab-node-1": "535-5.15.0-107-generic-ubuntu22.04",
    "lab-node-2": "550-6.8.0-45-generic-ubuntu24.04",
}


@pytest.mark.slow
def test_step2_tags(lab_repo: Path):
    for node, tag in LAB_TAGS.items():
        result = run_cli("tag", node, str(lab_repo))
        assert (result.returncode, result.stdout, result.stderr) == (0, tag + "\n", "")


def test_tag_of_an_unknown_node_is_a_usage_error(lab_repo: Path):
    result = run_cli("tag", "lab-node-9", str(lab_repo))
    assert result.returncode == 2
    assert "no node 'lab-node-9'" in result.stderr and "lab-node-0" in result.stderr


@pytest.mark.slow
def test_steps_3_and_4_audit_skew_and_fix(lab_repo: Path):
    ok = run_cli("audit", str(lab_repo))
    assert (ok.returncode, ok.stdout) == (0, "OK\n")

    # step 4: a node joins with kernel 6.8.0-52
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    skew = run_cli("audit", str(lab_repo))
    assert (skew.returncode, skew.stdout) == (
        1,
        "lab-node-3 MISSING 550-6.8.0-52-generic-ubuntu24.04\n",
    )

    check = run_cli("check", str(lab_repo), "--format", "concise")
    assert check.returncode == 1
    assert (
        "k8s/node3.yaml:14:5: error GPU001 node lab-node-3 needs driver image "
        "550-6.8.0-52-generic-ubuntu24.04"
    ) in check.stdout

    # the image is built: one matrix row fixes it
    with open(lab_repo / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n")
    fixed = run_cli("audit", str(lab_repo))
    assert (fixed.returncode, fixed.stdout) == (0, "OK\n")


def test_audit_lines_are_sorted_by_node(lab_repo: Path):
    text = (lab_repo / "steps" / "node3.yaml").read_text()
    write(lab_repo, "k8s/zz.yaml", text.replace("lab-node-3", "lab-node-10"))
    write(lab_repo, "k8s/aa.yaml", text)
    result = run_cli("audit", str(lab_repo))
    assert result.stdout.splitlines() == [
        "lab-node-10 MISSING 550-6.8.0-52-generic-ubuntu24.04",
        "lab-node-3 MISSING 550-6.8.0-52-generic-ubuntu24.04",
    ]


def test_broken_file_next_to_a_good_one(lab_repo: Path):
    write(lab_repo, "k8s/broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n")
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    result = run_cli("check", str(lab_repo), "--format", "json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    got = {
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in doc["findings"]
    }
    assert ("GPU000", "k8s/broken.yaml", 4, 1) in got
    assert ("GPU001", "k8s/node3.yaml", 14, 5) in got  # the rest of the repo is still checked


def test_json_output_follows_its_schema(lab_repo: Path):
    import jsonschema

    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    result = run_cli("check", str(lab_repo), "--format", "json")
    doc = json.loads(result.stdout)
    schema = json.loads((ROOT / "schemas" / "output.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["summary"]["exit_code"] == result.returncode == 1
    assert doc["summary"]["errors"] >= 1


@pytest.mark.slow
def test_output_is_deterministic(lab_repo: Path):
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    first = run_cli("check", str(lab_repo), "--format", "json").stdout
    second = run_cli("check", str(lab_repo), "--format", "json").stdout
    assert first == second


@pytest.mark.slow
def test_fail_on_levels(lab_repo: Path):
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    assert run_cli("check", str(lab_repo), "--fail-on", "never").returncode == 0
    assert run_cli("check", str(lab_repo), "--fail-on", "error").returncode == 1


def test_missing_matrix_is_a_usage_error(lab_repo: Path):
    (lab_repo / "support-matrix.csv").unlink()
    result = run_cli("audit", str(lab_repo))
    assert result.returncode == 2
    assert "support matrix not found" in result.stderr and "support-matrix.csv" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_error_exits_2_with_location(lab_repo: Path):
    write(lab_repo, ".gpudrv-check.yaml", "matrix: support-matrix.csv\nmatirx: x\n")
    result = run_cli("check", str(lab_repo))
    assert result.returncode == 2
    assert ".gpudrv-check.yaml:2:1: unknown key 'matirx'" in result.stderr


def test_verbose_lists_what_was_read_and_skipped(lab_repo: Path):
    write(lab_repo, "values.yaml", "replicaCount: 2\n")
    result = run_cli("check", str(lab_repo), "--verbose")
    assert "read    k8s/nodes.yaml: 3 object(s)" in result.stderr
    assert "skipped values.yaml#0: no apiVersion/kind" in result.stderr
    assert "skipped steps/: excluded by config" in result.stderr


def test_version_and_usage_errors():
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("gpudrv-check ")
    assert run_cli("no-such-command").returncode == 2
    assert run_cli().returncode == 2
    assert run_cli("check", "/nonexistent/path").returncode == 2


def test_python_dash_m_works(lab_repo: Path):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "gpudrv_check", "audit", str(lab_repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (0, "OK\n")
