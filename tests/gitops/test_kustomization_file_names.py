"""A kustomization file named `Kustomization` (no suffix) is read like kustomization.yaml:
kustomize recognises the three names (api/konfig/general.go RecognizedKustomizationFileNames),
so its patches are patches and its namespace applies, in a working tree and at a revision."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MATRIX, run_main, write
from tests.gitops.conftest import commit, git
from tests.gitops.test_kustomization_namespace import JOB, NODES

PATCH = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
spec:
  template:
    spec:
      nodeSelector: {pool: big}
"""


def _repo(root: Path) -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "nodes.yaml", NODES)
    write(root, "app/Kustomization", "resources:\n- job.yaml\npatches:\n- path: gpu-patch.yaml\n")
    write(root, "app/gpu-patch.yaml", PATCH)
    write(root, "app/job.yaml", JOB.format(gpus=1))


def _concise(*args: str) -> str:
    done = run_main("check", *args, "--no-cache", "--format", "concise")
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_a_patch_listed_in_a_kustomization_named_kustomization_is_a_patch(tmp_path):
    _repo(tmp_path)
    # the patch is said once, at its first line; the Job is checked from job.yaml alone (no
    # "also in app/gpu-patch.yaml", no Pending pod from a partial object's nodeSelector)
    assert _concise(str(tmp_path)) == (
        "app/gpu-patch.yaml:1:1: warning GPU009 Kustomize patch (listed in app/Kustomization:4 "
        "patches): a partial object, not checkable on its own\n"
        "4 files, 2 objects read; 0 errors, 1 warning\n"
    )


def test_at_a_revision_too(git_repo: Path):
    _repo(git_repo)
    commit(git_repo, "app")
    out = _concise(str(git_repo), "--rev", "HEAD")
    assert out.startswith(
        "app/gpu-patch.yaml:1:1: warning GPU009 Kustomize patch (listed in app/Kustomization:4"
    )
    assert "app/Kustomization" in git(git_repo, "ls-files")


def test_its_namespace_applies(tmp_path):
    _repo(tmp_path)
    (tmp_path / "app" / "gpu-patch.yaml").unlink()
    write(tmp_path, "app/Kustomization", "namespace: team-a\nresources:\n- job.yaml\n")
    write(tmp_path, "app/job.yaml", JOB.format(gpus=16))
    assert _concise(str(tmp_path)).startswith(
        "app/job.yaml:13:20: error GPU010 Job team-a/trainer:"
    )
