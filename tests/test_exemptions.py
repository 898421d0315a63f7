"""Exemptions: the ignore annotation and config `exemptions:`; suppressed findings are counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudrv_check.engine.exemptions import parse_ignore
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import ConfigError, load_config
from gpudrv_check.read.policy import catalog
from tests.conftest import gpu_node, run_main, write

MATRIX = "driver_branch,kernel,os_tag\n"  # empty: every GPU node is GPU001


@pytest.mark.parametrize(
    ("value", "rules", "reason"),
    [
        ("GPU001", {"GPU001"}, None),
        ("GPU001,GPU002", {"GPU001", "GPU002"}, None),
        ("gpu001, driver-tag-label-missing", {"GPU001", "GPU002"}, None),
        (
            "GPU001 GPU003 # kernel pinned by vendor",
            {"GPU001", "GPU003"},
            "kernel pinned by vendor",
        ),
        ("GPU001#no space", {"GPU001"}, "no space"),
        ("GPU999, nonsense", set(), None),  # unknown names suppress nothing
        ("# only a reason", set(), "only a reason"),
        ("", set(), None),
    ],
)
def test_parse_ignore(value, rules, reason):
    ignore = parse_ignore(value, catalog())
    assert (set(ignore.rules), ignore.reason) == (rules, reason)


def _repo(tmp_path: Path) -> Path:
    write(tmp_path, "support-matrix.csv", MATRIX)
    annotated = gpu_node("gpu-1").replace(
        "metadata:\n  name: gpu-1\n",
        "metadata:\n  name: gpu-1\n  annotations:\n"
        '    gpudrv-check.io/ignore: "GPU001 # image built next sprint"\n',
    )
    write(tmp_path, "nodes/gpu-1.yaml", annotated)
    write(tmp_path, "nodes/gpu-2.yaml", gpu_node("gpu-2"))
    write(
        tmp_path,
        "inventory.yaml",
        """
        apiVersion: gpudrv-check.io/v1alpha1
        kind: NodeInventory
        nodes:
        - name: gpu-3
          annotations: {gpudrv-check.io/ignore: driver-image-missing}
          labels:
            nvidia.com/gpu.present: "true"
            nvidia.com/cuda.driver-version.major: "550"
            feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic
            feature.node.kubernetes.io/system-os_release.ID: ubuntu
            feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
        """,
    )
    return tmp_path


def test_annotation_suppresses_only_the_named_rule_on_that_object(tmp_path):
    root = _repo(tmp_path)
    run = check(root, load_config(root))
    assert [str(f.object) for f in run.findings if f.rule == "GPU001"] == ["Node/gpu-2"]
    suppressed = {str(f.object): f.suppressed_by for f in run.suppressed}
    assert suppressed == {
        "Node/gpu-1": "annotation gpudrv-check.io/ignore: image built next sprint",
        "Node/gpu-3": "annotation gpudrv-check.io/ignore",
    }


@pytest.mark.slow
def test_annotation_exemption_end_to_end(tmp_path):
    root = _repo(tmp_path)
    text = run_main("check", str(root))
    assert text.returncode == 1  # gpu-2 still fails
    assert "gpu-1" not in text.stdout and "gpu-3" not in text.stdout
    assert text.stdout.rstrip().endswith("1 error, 0 warnings; 2 suppressed")
    doc = json.loads(run_main("check", str(root), "--format", "json").stdout)
    assert doc["summary"]["suppressed"] == 2
    assert doc["summary"]["suppressed_by"] == {"annotation": 2}
    assert [f["object"]["name"] for f in doc["suppressed"]] == ["gpu-3", "gpu-1"]
    # everything exempted: exit 0
    write(root, "nodes/gpu-2.yaml", "")
    assert run_main("check", str(root)).returncode == 0


CONFIG_EXEMPTIONS = """
matrix: support-matrix.csv
exemptions:
  - rule: GPU001
    kind: Node
    name: "gpu-[12]"
    reason: vendor-managed pool
  - rule: [GPU009]
    file: "charts/*"
"""


@pytest.mark.slow
def test_config_exemption_end_to_end(tmp_path):
    root = _repo(tmp_path)
    write(root, ".gpudrv-check.yaml", CONFIG_EXEMPTIONS)
    write(root, "charts/x/templates/a.yaml", "kind: {{ .Values.kind }}\n")
    write(root, "charts/x/Chart.yaml", "name: x\n")
    result = run_main("check", str(root), "--format", "json")
    assert result.returncode == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["findings"] == []
    by = sorted((f["rule"], f["location"]["file"], f["suppressed_by"]) for f in doc["suppressed"])
    assert by == [
        ("GPU001", "inventory.yaml", "annotation gpudrv-check.io/ignore"),
        (
            "GPU001",
            "nodes/gpu-1.yaml",
            "annotation gpudrv-check.io/ignore: image built next sprint",
        ),
        ("GPU001", "nodes/gpu-2.yaml", "config exemptions[0]: vendor-managed pool"),
        ("GPU009", "charts/x/Chart.yaml", "config exemptions[1]"),  # one per chart (issue 13)
    ]
    assert doc["summary"]["suppressed_by"] == {"annotation": 2, "config": 2}


@pytest.mark.parametrize(
    ("exemption", "where"),
    [
        ("  - rule: GPU999\n", (3, 5)),
        ("  - rule: [GPU001, nope]\n", (3, 20)),
        ("  - rule: GPU001\n    kinds: Node\n", (4, 5)),
    ],
)
def test_bad_config_exemption_is_an_error_at_its_line(tmp_path, exemption, where):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: null\nexemptions:\n" + exemption)
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert (err.value.file, err.value.line, err.value.column) == (".gpudrv-check.yaml", *where)


def test_namespace_glob_and_cluster_scoped_objects(tmp_path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "nodes.yaml", gpu_node("gpu-1"))
    write(
        tmp_path,
        ".gpudrv-check.yaml",
        "exemptions:\n  - {rule: '*', namespace: '*'}\n",  # a namespace never matches a Node
    )
    run = check(tmp_path, load_config(tmp_path))
    assert [f.rule for f in run.findings] == ["GPU001"] and run.suppressed == []


@pytest.mark.slow
def test_verbose_lists_suppressed_findings_and_why(tmp_path):
    root = _repo(tmp_path)
    result = run_main("check", str(root), "-v")
    assert "suppressed nodes/gpu-1.yaml:11:5: GPU001 node gpu-1 needs driver image" in result.stderr
    assert "(annotation gpudrv-check.io/ignore: image built next sprint)" in result.stderr


def test_an_exemption_naming_no_rule_exits_2_at_its_rule_key(tmp_path):
    """Review e_empty: `rule: []` suppressed nothing and passed; README says an exemption naming
    no rule is a usage error at its line."""
    write(
        tmp_path, ".gpudrv-check.yaml", "matrix: null\nexemptions:\n  - rule: []\n    kind: Pod\n"
    )
    result = run_main("check", str(tmp_path), "--no-cache")
    assert result.returncode == 2
    assert result.stderr == (
        "gpudrv-check: error: .gpudrv-check.yaml:3:5: exemptions.0.rule: must not be empty\n"
    )


_DUPLICATE = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: pdb
  namespace: ml{annotation}
spec:
  minAvailable: 1
  minAvailable: 1
  selector:
    matchLabels:
      app: x
"""


def test_a_duplicate_key_is_a_problem_of_its_object_at_its_key(tmp_path):
    """GPU008 names the object it is written in and the key (review): the object's annotation
    and an exemption by kind and name reach it, and moving the file keeps its fingerprint."""
    write(tmp_path, "support-matrix.csv", "driver_branch,kernel,os_tag\n")
    write(tmp_path, "a/pdb.yaml", _DUPLICATE.format(annotation=""))
    first = check(tmp_path, load_config(tmp_path))
    [found] = [f for f in first.findings if f.rule == "GPU008"]
    assert str(found.object) == "PodDisruptionBudget/ml/pdb"
    assert found.path == ["spec", "minAvailable"] and found.location.line == 8
    (tmp_path / "a" / "pdb.yaml").rename(tmp_path / "moved.yaml")
    [moved] = [f for f in check(tmp_path, load_config(tmp_path)).findings if f.rule == "GPU008"]
    assert moved.fingerprint() == found.fingerprint() and moved.location.file == "moved.yaml"
    annotated = '\n  annotations:\n    gpudrv-check.io/ignore: "GPU008 # known"'
    write(tmp_path, "moved.yaml", _DUPLICATE.format(annotation=annotated))
    run = check(tmp_path, load_config(tmp_path))
    assert not [f for f in run.findings if f.rule == "GPU008"]
    assert [f.rule for f in run.suppressed] == ["GPU008"]
    write(tmp_path, "moved.yaml", _DUPLICATE.format(annotation=""))
    write(
        tmp_path,
        ".gpudrv-check.yaml",
        "matrix: support-matrix.csv\n"
        "exemptions:\n  - {rule: GPU008, kind: PodDisruptionBudget, name: pdb, reason: r}\n",
    )
    run = check(tmp_path, load_config(tmp_path))
    assert [f.rule for f in run.suppressed] == ["GPU008"]


def test_a_duplicate_key_in_a_part_not_built_names_its_object(tmp_path):
    """In a container's `env` (skimmed: not built) the key is not kept, the object is."""
    write(tmp_path, "support-matrix.csv", "driver_branch,kernel,os_tag\n")
    write(
        tmp_path,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
        "  - name: c\n    image: busybox\n    env:\n    - name: A\n      value: x\n"
        "      value: y\n",
    )
    [found] = [f for f in check(tmp_path, load_config(tmp_path)).findings if f.rule == "GPU008"]
    assert str(found.object) == "Pod/p" and found.location.line == 12
