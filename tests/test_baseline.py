"""Baselines and fingerprints: identity is rule, object and key path, never the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Location, ObjectRef, Severity, unique_fingerprints
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import load_config
from tests.conftest import gpu_node, run_main, write

EMPTY_MATRIX = "driver_branch,kernel,os_tag\n"


def _finding(**kw) -> Finding:
    base = dict(
        rule="GPU001",
        severity=Severity.ERROR,
        message="m",
        location=Location(file="a.yaml", line=3, column=5),
        object=ObjectRef(kind="Node", name="n"),
        path=["metadata", "labels", "k"],
    )
    base.update(kw)
    return Finding(**base)


@pytest.mark.parametrize(
    ("change", "same"),
    [
        ({"location": Location(file="a.yaml", line=30, column=1)}, True),  # lines shifted
        ({"location": Location(file="moved/b.yaml", line=3, column=5)}, True),  # file moved
        ({"message": "reworded"}, True),  # the key path identifies it
        ({"severity": Severity.WARNING}, True),
        ({"rule": "GPU002"}, False),
        ({"object": ObjectRef(kind="Node", name="other")}, False),
        ({"object": ObjectRef(kind="Pod", name="n", namespace="x")}, False),
        ({"path": ["metadata", "labels", "j"]}, False),
        # the namespace an object lives in: omitted is `default` (review: writing it out made
        # a pull request's old finding new and dropped it from a baseline)
        ({"object": ObjectRef(kind="Pod", name="n", namespace="default")}, False),
    ],
)
def test_fingerprint_identity(change, same):
    assert (_finding().fingerprint() == _finding(**change).fingerprint()) is same


def test_objectless_findings_use_file_and_message_not_line():
    a = _finding(object=None, path=[], message="YAML syntax error")
    moved = a.copy_with(location=Location(file="a.yaml", line=9, column=1))
    other_file = a.copy_with(location=Location(file="b.yaml", line=3, column=5))
    assert a.fingerprint() == moved.fingerprint() != other_file.fingerprint()


def test_the_namespace_is_the_one_the_object_lives_in():
    omitted = _finding(object=ObjectRef(kind="Pod", name="p"), path=[])
    written = _finding(object=ObjectRef(kind="Pod", name="p", namespace="default"), path=[])
    assert omitted.fingerprint() == written.fingerprint()
    assert omitted.fingerprint(1) != written.fingerprint(1)  # as version 1 baselines have them
    node = _finding(object=ObjectRef(kind="Node", name="n", namespace=None))
    assert node.fingerprint() == node.fingerprint(1)  # cluster-scoped: no namespace either way


def test_a_message_fingerprint_leaves_its_numbers_out():
    """A YAML error names its line: a line added above it is no new error (review)."""
    at = _finding(object=None, path=[], message="quoted scalar that starts at line 7, column 6")
    moved = at.copy_with(message="quoted scalar that starts at line 8, column 6")
    assert at.fingerprint() == moved.fingerprint()
    assert at.fingerprint(1) != moved.fingerprint(1)
    other = at.copy_with(message="did not find expected key at line 7, column 6")
    assert at.fingerprint() != other.fingerprint()


def test_a_version_1_baseline_is_matched_by_its_own_fingerprints(tmp_path):
    """Baselines written before the fingerprint named the namespace an object lives in keep
    accepting what they accepted; a new one is written as version 2."""
    root = _repo(tmp_path / "repo")
    write(root, "apps/pod.yaml", _PENDING_POD)  # no namespace: `default`
    new = tmp_path / "new.json"
    first = run_main("check", str(root), "--no-cache", "--write-baseline", str(new))
    assert first.returncode == 0, first.stderr
    doc = json.loads(new.read_text())
    assert doc["version"] == 2 and "GPU010" in {e["rule"] for e in doc["findings"]}
    found = check(root, load_config(root)).findings
    assert any(f.rule == "GPU010" and f.fingerprint(1) != f.fingerprint() for f in found)
    old = {"version": 1, "findings": [{"fingerprint": f.fingerprint(1)} for f in found]}
    (tmp_path / "v1.json").write_text(json.dumps(old))
    again = run_main("check", str(root), "--no-cache", "--baseline", str(tmp_path / "v1.json"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"0 errors, 0 warnings; {len(found)} suppressed" in again.stdout


_PENDING_POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  nodeSelector:
    no: such
  containers:
  - name: c
    image: busybox
    resources:
      limits:
        nvidia.com/gpu: 1
"""


def test_unique_fingerprints_number_repeats():
    a = _finding()
    prints = unique_fingerprints([a, a, a])
    assert prints[0] == a.fingerprint() and len(set(prints)) == 3


INVENTORY = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
{nodes}
"""
ENTRY = """\
- name: {name}
  labels:
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver-version.major: "550"
    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
"""


def _prints(root: Path) -> dict[str, str]:
    run = check(root, load_config(root))
    return {str(f.object): f.fingerprint() for f in run.findings}


def test_inventory_fingerprints_survive_inserting_a_node_above(tmp_path):
    write(tmp_path, "support-matrix.csv", EMPTY_MATRIX)
    write(tmp_path, "inv.yaml", INVENTORY.format(nodes=ENTRY.format(name="b")))
    before = _prints(tmp_path)
    write(
        tmp_path,
        "inv.yaml",
        INVENTORY.format(nodes=ENTRY.format(name="a") + ENTRY.format(name="b")),
    )
    after = _prints(tmp_path)
    assert before["Node/b"] == after["Node/b"]
    # and the same node written as a Node object has the same identity
    write(tmp_path, "inv.yaml", "")
    write(tmp_path, "b.yaml", gpu_node("b"))
    assert _prints(tmp_path)["Node/b"] == before["Node/b"]


def _repo(tmp_path: Path) -> Path:
    write(tmp_path, "support-matrix.csv", EMPTY_MATRIX)
    write(tmp_path, "nodes/gpu-1.yaml", gpu_node("gpu-1"))
    write(tmp_path, "nodes/gpu-2.yaml", gpu_node("gpu-2"))
    return tmp_path


@pytest.mark.slow
def test_baseline_end_to_end(tmp_path):
    root = _repo(tmp_path / "repo")
    baseline = tmp_path / "baseline.json"
    wrote = run_main("check", str(root), "--write-baseline", str(baseline))
    assert wrote.returncode == 0, wrote.stderr
    assert "wrote 2 finding(s)" in wrote.stderr
    assert wrote.stdout.rstrip().endswith(
        f"0 errors, 0 warnings; 2 suppressed (baseline {baseline})"
    )
    doc = json.loads(baseline.read_text())
    assert [e["object"] for e in doc["findings"]] == ["Node/gpu-1", "Node/gpu-2"]

    # unchanged repo: nothing new
    same = run_main("check", str(root), "--baseline", str(baseline))
    assert same.returncode == 0 and "error GPU" not in same.stdout

    # lines shift (a comment and a label above the offending key): still known
    node = (root / "nodes/gpu-1.yaml").read_text()
    (root / "nodes/gpu-1.yaml").write_text(
        "# moved down\n\n" + node.replace("  labels:\n", "  labels:\n    team: ml\n")
    )
    shifted = run_main("check", str(root), "--baseline", str(baseline), "--format", "json")
    assert shifted.returncode == 0, shifted.stdout
    result = json.loads(shifted.stdout)
    assert result["findings"] == [] and result["summary"]["suppressed_by"] == {"baseline": 2}

    # a new node with a missing image: only it is reported, and it fails
    write(root, "nodes/gpu-3.yaml", gpu_node("gpu-3"))
    new = run_main("check", str(root), "--baseline", str(baseline), "--format", "concise")
    assert new.returncode == 1
    assert "nodes/gpu-3.yaml:9:5: error GPU001 node gpu-3" in new.stdout
    assert "gpu-1" not in new.stdout and "gpu-2" not in new.stdout


@pytest.mark.slow
def test_baseline_is_deterministic_and_bad_baselines_are_usage_errors(tmp_path):
    root = _repo(tmp_path / "repo")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run_main("check", str(root), "--write-baseline", str(a))
    run_main("check", str(root), "--write-baseline", str(b))
    assert a.read_bytes() == b.read_bytes()
    missing = run_main("check", str(root), "--baseline", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "baseline not found" in missing.stderr
    (tmp_path / "bad.json").write_text("{\n  nope\n")
    bad = run_main("check", str(root), "--baseline", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "bad.json:2:3: baseline is not JSON" in bad.stderr


BAD_BASELINES = [
    pytest.param(
        '{"version": 1, "findings": [' + "[" * 5000 + "]" * 5000 + "]}",
        ":1:155: not a gpudrv-check baseline: it nests too deep",  # the 129th bracket
        id="deep",
    ),
    pytest.param('{"version": 3, "findings": []}', ": unsupported baseline version 3", id="v3"),
    pytest.param(
        '{"version": true, "findings": []}', ": unsupported baseline version true", id="t"
    ),
    pytest.param('{"version": 1.0, "findings": []}', ": unsupported baseline version 1.0", id="f"),
    pytest.param(
        '{"version": 1, "findings": [{"fingerprint": 1}]}', ": baseline entry findings[0]", id="fp"
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_BASELINES)
def test_a_malformed_baseline_is_a_usage_error_with_its_location(tmp_path, text, message):
    """Review bm: a deeply nested baseline was an internal RecursionError; a version `true`
    or `1.0` was read as version 1."""
    root = _repo(tmp_path / "repo")
    (tmp_path / "b.json").write_text(text)
    result = run_main("check", str(root), "--no-cache", "--baseline", str(tmp_path / "b.json"))
    assert result.returncode == 2, result.stderr
    assert f"b.json{message}" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "no-cache"])
def test_a_committed_baseline_is_not_read_as_a_manifest(tmp_path, monkeypatch, cache):
    """Review b1: a baseline inside the repo over max_file_bytes was a GPU000, and any
    baseline inside it was counted as a file read."""
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "max_file_bytes: 4096\n")
    monkeypatch.chdir(root)
    flags = () if cache else ("--no-cache",)
    cache_dir = ("--cache-dir", str(tmp_path / "cache"))
    wrote = run_main("check", ".", *cache_dir, "--write-baseline", "base.json")
    assert wrote.returncode == 0, wrote.stderr
    with (root / "base.json").open("a") as out:
        out.write(" " * 5000)  # over max_file_bytes, still the same JSON
    for _ in range(2):  # the second run answers from the result cache
        result = run_main(
            "check", ".", *cache_dir, *flags, "--baseline", "base.json", "--format", "concise"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "GPU000" not in result.stdout
        assert result.stdout.splitlines()[-1].startswith("2 files, 2 objects read; 0 errors")
