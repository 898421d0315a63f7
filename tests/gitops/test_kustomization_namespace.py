"""A kustomization's `namespace:` without `--kustomize`: the objects it builds are in that
namespace (kustomize api/filters/namespace/namespace.go Filter, with the field specs of
api/konfig/builtinpluginconsts/namespace.go: add or replace `metadata/namespace` on every kind
but the cluster-wide ones; an overlay transforms its bases' output, so the outermost wins)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpudrv_check.read.kustomization import applied_namespaces, in_namespaces
from gpudrv_check.read.manifests import read_repo
from gpudrv_check.read.tree import WorkingTree
from gpudrv_check.read.yaml_docs import parse_text
from tests.conftest import MATRIX, run_main, write

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: t
        image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
"""


NODES = """\
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: gpu-0
  labels:
    feature.node.kubernetes.io/kernel-version.full: "5.15.0-119-generic"
    feature.node.kubernetes.io/system-os_release.ID: "ubuntu"
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    kubernetes.io/hostname: "gpu-0"
    nvidia.com/cuda.driver.major: "550"
    nvidia.com/gpu.present: "true"
  allocatable:
    nvidia.com/gpu: "8"
"""


def _kz(text: str) -> object:
    return parse_text(text).docs[0].data


def _team_repo(root: Path) -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "nodes.yaml", NODES)
    for team, gpus in (("team-a", 1), ("team-b", 16)):
        write(
            root, f"apps/{team}/kustomization.yaml", f"namespace: {team}\nresources:\n- job.yaml\n"
        )
        write(root, f"apps/{team}/job.yaml", JOB.format(gpus=gpus))


def _concise(root: Path, *extra: str) -> list[str]:
    done = run_main("check", str(root), "--no-cache", "--format", "concise", *extra)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def test_the_same_file_name_in_two_namespaced_kustomizations_is_two_objects(tmp_path):
    _team_repo(tmp_path)
    lines = _concise(tmp_path)
    assert not any("GPU009" in line for line in lines)  # no "also in ... not checked"
    [pending] = [line for line in lines if "GPU010" in line]
    # located in the file the object is written in, at the GPU request
    assert pending.startswith("apps/team-b/job.yaml:13:20: error GPU010 Job team-b/trainer:")


def test_the_outermost_namespace_wins_and_cluster_scoped_kinds_keep_none():
    docs = {
        "base/kustomization.yaml": _kz("namespace: base\nresources: [job.yaml]\n"),
        "ov/kustomization.yaml": _kz("namespace: ov\nresources: [../base]\n"),
        "plain/kustomization.yaml": _kz("resources: [../base/other.yaml, job.yaml]\n"),
    }
    listed = {"base/job.yaml", "base/other.yaml", "plain/job.yaml"}
    # base is built by ov (the root): ov's namespace replaces base's; plain sets none
    assert applied_namespaces(docs, listed) == {"base/job.yaml": ("ov",)}
    assert in_namespaces("Job", "own", ("ov",)) == ["ov"]
    assert in_namespaces("ClusterRole", None, ("ov",)) == [None]
    assert in_namespaces("Job", "x", (None, "ov")) == ["x", "ov"]


def test_a_base_two_overlays_put_in_two_namespaces_is_one_object_per_namespace(tmp_path):
    write(tmp_path, "base/kustomization.yaml", "resources: [job.yaml]\n")
    write(tmp_path, "base/job.yaml", JOB.format(gpus=1))
    for env in ("dev", "prod"):
        write(tmp_path, f"{env}/kustomization.yaml", f"namespace: {env}\nresources: [../base]\n")
    source = WorkingTree(tmp_path)
    content = read_repo(source, source.list_manifests([]).files, 1 << 20)
    jobs = [m for m in content.manifests if m.kind == "Job"]
    assert [(m.file, m.namespace) for m in jobs] == [
        ("base/job.yaml", "dev"),
        ("base/job.yaml", "prod"),
    ]
    assert jobs[0].data is jobs[1].data  # the same document: lines and columns of the base
    assert jobs[1].location(("spec",)).line == 5


def test_the_repro_is_what_kustomize_build_says(tmp_path):
    """The same finding, at the same place, as `--kustomize` (when a kustomize is on PATH)."""
    from gpudrv_check.read.kustomize import kustomize_command

    _team_repo(tmp_path)
    plain = [line for line in _concise(tmp_path) if "GPU010" in line]
    if kustomize_command() is None:
        return
    rendered = [line for line in _concise(tmp_path, "--kustomize") if "GPU010" in line]
    assert [line.split(" (as rendered")[0] for line in rendered] == plain


def test_json_names_the_applied_namespace(tmp_path):
    _team_repo(tmp_path)
    done = run_main("check", str(tmp_path), "--no-cache", "--format", "json")
    found = json.loads(done.stdout)["findings"]
    [pending] = [f for f in found if f["rule"] == "GPU010"]
    assert pending["object"]["namespace"] == "team-b"
    assert (pending["location"]["file"], pending["location"]["line"]) == (
        "apps/team-b/job.yaml",
        13,
    )
    # without team-b's kustomization the Job is in `default`, as written
    (tmp_path / "apps" / "team-b" / "kustomization.yaml").unlink()
    shutil.rmtree(tmp_path / "apps" / "team-a")
    done = run_main("check", str(tmp_path), "--no-cache", "--format", "json")
    [pending] = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "GPU010"]
    assert pending["object"].get("namespace") in (None, "")
