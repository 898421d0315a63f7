"""Flux post-build substitution in map keys, names and namespaces. fluxcd/pkg
kustomize/kustomize_varsub.go varSubstitution runs envsubst over the whole YAML text of each
object before decoding it, so a key, `metadata.name` and `metadata.namespace` are filled in
like any value (model/placeholders.py `_fill_keys`, `_refresh`)."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.model.placeholders import substitute
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import MATRIX, run_main, write
from tests.gitops.test_kustomization_namespace import NODES

FLUX = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps/prod
  postBuild:
    substitute: {GPU_LABEL: nvidia.com/gpu.present, TEAM: ml, POOL: a}
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer-${TEAM}
  namespace: ${TEAM}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector:
        ${GPU_LABEL}: "true"
        pool-${POOL}: "yes"
        ${UNSET}: "x"
      containers:
      - name: t
        image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
        resources:
          limits: {nvidia.com/gpu: 16}
"""


STRICT_UNSET = (
    "Kustomization flux-system/apps: envsubst error: variable substitution failed: "
    'variable not set (strict mode): "UNSET"'
)


def _objects(files: dict[str, str]):
    return [
        m for rel, text in files.items() for m in parse_manifest_bytes(rel, text.encode()).manifests
    ]


def test_keys_names_and_namespaces_are_filled_in_keeping_order_and_positions():
    objects = _objects({"clusters/prod/apps.yaml": FLUX, "apps/prod/job.yaml": JOB})
    found = substitute(objects, {"apps/prod/job.yaml"})
    [job] = [m for m in objects if m.kind == "Job"]
    selector = job.get("spec", "template", "spec", "nodeSelector")
    assert list(selector) == ["nvidia.com/gpu.present", "pool-a", "${UNSET}"]
    assert [selector.key_pos(k) for k in selector] == [(11, 9), (12, 9), (13, 9)]
    assert (job.name, job.namespace) == ("trainer-ml", "ml")
    assert job.get("metadata", "namespace") == "ml"
    # an unknown key is unknown, and the findings on the object are held back. Was
    # `found.names == ["UNSET"]`, which contradicted Flux: UNSET is not set and every source
    # is known, so in strict mode (kustomize-controller's default) the build fails (oracle:
    # `${UNSET}` -> variable not set (strict mode): "UNSET") and nothing of it is applied
    assert found.names == [] and found.failures == [STRICT_UNSET]
    assert ("apps/prod/job.yaml", "Job", "trainer-ml") in found.by_object


def test_two_keys_that_would_become_one_stay_unknown():
    text = JOB.replace('        pool-${POOL}: "yes"\n', '        nvidia.com/gpu.present: "no"\n')
    objects = _objects({"clusters/prod/apps.yaml": FLUX, "apps/prod/job.yaml": text})
    found = substitute(objects, {"apps/prod/job.yaml"})
    [job] = [m for m in objects if m.kind == "Job"]
    assert "${GPU_LABEL}" in job.get("spec", "template", "spec", "nodeSelector")
    # was ["GPU_LABEL", "UNSET"]: UNSET fails the build in strict mode (see above)
    assert found.names == ["GPU_LABEL"] and found.failures == [STRICT_UNSET]


def _repo(root: Path, job: str, pdb: str = "") -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "nodes.yaml", NODES)
    write(root, "clusters/prod/apps.yaml", FLUX)
    write(root, "apps/prod/job.yaml", job + pdb)


def _concise(root: Path, cache: str | None = None) -> str:
    flag = ("--cache-dir", cache) if cache else ("--no-cache",)
    done = run_main("check", str(root), *flag, "--format", "concise")
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_the_message_names_the_substituted_object(tmp_path):
    _repo(
        tmp_path,
        JOB.replace('        ${UNSET}: "x"\n', "").replace('        pool-${POOL}: "yes"\n', ""),
    )
    out = _concise(tmp_path)
    # the key ${GPU_LABEL} is no GPU040 (an invalid label key as written), and the Job is ml's
    assert "GPU040" not in out
    assert out.startswith(
        "apps/prod/job.yaml:16:20: error GPU010 Job ml/trainer-ml: its pods stay Pending"
    )


PDB = """\
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: server, namespace: ml}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: server}}
"""

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: "${TEAM}"}
spec:
  replicas: 2
  selector: {matchLabels: {app: server}}
  template:
    metadata: {labels: {app: server}}
    spec:
      containers:
      - name: t
        image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
        resources:
          limits: {nvidia.com/gpu: 1}
"""


def test_a_budget_covers_a_workload_whose_namespace_is_substituted(tmp_path):
    _repo(tmp_path, DEPLOY, PDB)
    assert _concise(tmp_path).startswith(
        "apps/prod/job.yaml:20:3: error GPU020 PodDisruptionBudget ml/server allows 0 disruptions"
    )


OTHER_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: team-c}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: j, image: busybox}]
"""


def test_with_the_cache_too(tmp_path):
    """The budgets in a file of namespace ml, the workload's namespace a placeholder (its file
    is shared, as every file with `${`): ml holds a workload of a shared file once filled in,
    so it is never stored (engine/cache/partition.py `_sharing_workloads`), and GPU024 at the
    workload, which needs the budgets, is found after an edit elsewhere as without the cache."""
    _repo(tmp_path, DEPLOY)
    second = PDB.replace("name: server", "name: server-2").replace(
        "maxUnavailable: 0", "maxUnavailable: 1"
    )
    write(
        tmp_path,
        "budgets/pdb.yaml",
        PDB.removeprefix("---\n").replace("maxUnavailable: 0", "maxUnavailable: 1") + second,
    )
    write(tmp_path, "team-c/job.yaml", OTHER_JOB)
    cache = str(tmp_path.parent / "cache")
    first = _concise(tmp_path, cache)
    path = tmp_path / "team-c" / "job.yaml"
    path.write_text(path.read_text().replace("busybox", "busybox:1.36"))  # team-c alone
    assert _concise(tmp_path, cache) == _concise(tmp_path) == first
    assert first.startswith(
        "apps/prod/job.yaml:8:16: error GPU024 the pods of Deployment server are covered by 2"
    )
