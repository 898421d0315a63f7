"""`--kustomize`: where a finding on a rendered object lands (read/kustomize.py
`source_location`). Only the patch files the build's kustomizations list are patches, searched
in the reverse of the order kustomize applies them (api/internal/target/kusttarget.go
AccumulateTarget: resources, then components, then the kustomization's own patches), and a
name matches when the build's namePrefix/nameSuffix values make the rendered name of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.read.kustomize import _made_from, kustomize_command
from tests.conftest import MATRIX, run_main, write
from tests.gitops.test_kustomization_namespace import NODES

needs_kustomize = pytest.mark.skipif(
    kustomize_command() is None, reason="neither kustomize nor kubectl is on PATH"
)

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
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

PATCH = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
spec:
  template:
    spec:
      containers:
      - name: t
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
"""


def _pending(root: Path) -> list[str]:
    done = run_main("check", str(root), "--no-cache", "--format", "concise", "--kustomize")
    assert done.returncode in (0, 1), done.stderr
    return [line.split(": error")[0] for line in done.stdout.splitlines() if "GPU010" in line]


def _base(root: Path) -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "nodes.yaml", NODES)


def test_names_follow_the_prefix_and_suffix_rule():
    assert _made_from("trainer", "prod-trainer-v2", ["prod-"], ["-v2"])
    assert _made_from("trainer", "b-a-trainer", ["a-", "b-"], [])  # an overlay over a base
    assert not _made_from("trainer", "trainer-large", [], [])  # a name of its own
    assert not _made_from("trainer", "x-trainer", ["y-"], [])
    assert _made_from("trainer", "trainer", [], [])


@needs_kustomize
def test_a_resource_whose_name_holds_another_is_not_its_patch(tmp_path):
    _base(tmp_path)
    write(tmp_path, "app/kustomization.yaml", "resources:\n- small.yaml\n- big.yaml\n")
    write(tmp_path, "app/small.yaml", JOB.format(name="trainer", gpus=1))
    write(tmp_path, "app/big.yaml", "# the big one\n" + JOB.format(name="trainer-large", gpus=16))
    assert _pending(tmp_path) == ["app/big.yaml:14:20"]


@needs_kustomize
def test_the_root_patch_applied_last_is_the_place(tmp_path):
    _base(tmp_path)
    write(tmp_path, "base/kustomization.yaml", "resources:\n- job.yaml\n")
    write(tmp_path, "base/job.yaml", JOB.format(name="trainer", gpus=1))
    write(
        tmp_path,
        "components/big-gpu/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
        "patches:\n- path: gpu.yaml\n",
    )
    write(tmp_path, "components/big-gpu/gpu.yaml", PATCH.format(gpus=16))
    write(
        tmp_path,
        "apps/prod/kustomization.yaml",
        "resources:\n- ../../base\ncomponents:\n- ../../components/big-gpu\n"
        "patches:\n- path: gpu-32.yaml\n",
    )
    write(tmp_path, "apps/prod/gpu-32.yaml", PATCH.format(gpus=32))
    # kustomize renders 32: the root's own patch after the component's, whatever the paths
    assert _pending(tmp_path) == ["apps/prod/gpu-32.yaml:11:20"]
    # without the root's patch, the component's is the last applied
    (tmp_path / "apps" / "prod" / "gpu-32.yaml").unlink()
    write(
        tmp_path,
        "apps/prod/kustomization.yaml",
        "resources:\n- ../../base\ncomponents:\n- ../../components/big-gpu\n",
    )
    assert _pending(tmp_path) == ["components/big-gpu/gpu.yaml:11:20"]


@needs_kustomize
def test_a_prefixed_object_is_found_in_its_base_file(tmp_path):
    _base(tmp_path)
    write(tmp_path, "base/kustomization.yaml", "resources:\n- job.yaml\n- other.yaml\n")
    write(tmp_path, "base/job.yaml", JOB.format(name="trainer", gpus=16))
    write(tmp_path, "base/other.yaml", JOB.format(name="trainer-2", gpus=1))
    write(tmp_path, "prod/kustomization.yaml", "namePrefix: prod-\nresources:\n- ../base\n")
    assert _pending(tmp_path) == ["base/job.yaml:13:20"]


@needs_kustomize
def test_two_overlays_of_one_base_are_each_checked(tmp_path):
    """Each rendered root is a deployment of its own (read/kustomize.py: "a base shared by two
    overlays is checked once per overlay"): neither rendering is dropped as a copy of the
    other, and what the production overlay finds is located at its patch."""
    _base(tmp_path)
    write(tmp_path, "app/base/kustomization.yaml", "resources:\n- job.yaml\n")
    write(tmp_path, "app/base/job.yaml", JOB.format(name="trainer", gpus=1))
    write(tmp_path, "app/overlays/dev/kustomization.yaml", "resources:\n- ../../base\n")
    write(
        tmp_path,
        "app/overlays/production/kustomization.yaml",
        "resources:\n- ../../base\npatches:\n- path: gpu.yaml\n",
    )
    write(tmp_path, "app/overlays/production/gpu.yaml", PATCH.format(gpus=16))
    done = run_main("check", str(tmp_path), "--no-cache", "--format", "concise", "--kustomize")
    assert "GPU009" not in done.stdout
    assert _pending(tmp_path) == ["app/overlays/production/gpu.yaml:11:20"]
    assert done.stdout.endswith("3 files, 3 objects read; 1 error, 0 warnings\n")


FLUX = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: apps, namespace: flux-system}}
spec:
  path: ./apps/{env}
  postBuild:
    substitute: {{GPU_COUNT: "16"}}
"""


@needs_kustomize
def test_flux_variables_reach_the_rendered_stream(tmp_path):
    """A Flux Kustomization whose path holds a kustomization substitutes in what that builds
    (fluxcd/pkg kustomize_varsub.go), which under --kustomize is read from the rendered
    stream: its placeholders are filled in, not unknown (model/placeholders.py)."""
    _base(tmp_path)
    for env in ("dev", "prod"):
        write(tmp_path, f"clusters/{env}/apps.yaml", FLUX.format(env=env))
        write(tmp_path, f"apps/{env}/kustomization.yaml", "resources:\n- job.yaml\n")
        block = JOB.format(name="trainer", gpus=0).replace(
            "{nvidia.com/gpu: 0}", "\n            nvidia.com/gpu: ${GPU_COUNT}"
        )
        write(tmp_path, f"apps/{env}/job.yaml", block)
    done = run_main("check", str(tmp_path), "--no-cache", "--format", "concise", "--kustomize")
    assert "unknown values" not in done.stdout
    assert _pending(tmp_path) == ["apps/dev/job.yaml:14:13", "apps/prod/job.yaml:14:13"]
    assert "[dev] Job default/trainer" in done.stdout
