"""Review of PodDisruptionBudget coverage and budgets against the disruption controller and the
eviction API.

Each row names the upstream file and function whose behaviour it expects:

- pkg/controller/disruption/disruption.go: ``getExpectedPodCount`` (an integer minAvailable
  counts the selected pods; a percentage or any maxUnavailable counts the owners' scale, scaled
  by ``intstr.GetScaledValueFromIntOrPercent`` rounding up), ``getExpectedScale`` (pods without
  a controller are skipped; a controller without a scale fails the sync), ``getScaleController``
  ("does not implement the scale subresource"), ``countHealthyPods`` (Ready pods),
  ``updatePdbStatus`` (0 when expectedCount <= 0 or currentHealthy - desiredHealthy <= 0),
  ``failSafe`` (a failed sync writes disruptionsAllowed 0), ``getPodsForPdb`` (the selector over
  the pods' labels);
- pkg/registry/core/pod/storage/eviction.go: ``getPodDisruptionBudgets`` (the PDBs of the pod's
  namespace whose selector matches the pod's labels) and ``Create`` (more than one: HTTP 500);
- pkg/registry/batch/job/strategy.go ``generateSelector``: a Job's pods carry ``job-name`` and
  ``batch.kubernetes.io/job-name`` (unless the template sets them, or ``manualSelector``);
- pkg/controller/deployment/sync.go ``getNewReplicaSet`` (``pod-template-hash``) and
  pkg/controller/statefulset/stateful_set_utils.go ``updateIdentity`` (each pod its own
  ``statefulset.kubernetes.io/pod-name``);
- pkg/kubelet/pod/mirror_client.go ``CreateMirrorPod``: a static pod's mirror is controlled by
  its Node, which has no scale;
- kubectl apply writes the documents of a file in turn: a PDB written twice is one object.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.run import Run, check
from gpudrv_check.k8s.disruption import PodGroup, disruption_budget
from gpudrv_check.read.config import Config
from tests.conftest import MATRIX, gpu_node, write
from tests.k8s.test_disruption import deploy
from tests.k8s.test_disruption import pdb as pdb_object

# --- the arithmetic ------------------------------------------------------------------------


def test_mirror_pod_fail_safe_names_the_node() -> None:
    mirror = PodGroup("Node", "gpu-0", None, 1)
    budget = disruption_budget(pdb_object(maxUnavailable=1), [deploy(2), mirror])
    assert "Node gpu-0, the controller of a static pod's mirror, has no scale" in budget.reason


# --- whole repos ---------------------------------------------------------------------------

GPU = "        resources: {limits: {nvidia.com/gpu: 1}}\n"


def job(name: str = "train", labels: str = "{app: train}", extra: str = "") -> str:
    return (
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n"
        f"  parallelism: 2\n  completions: 2\n{extra}  template:\n"
        f"    metadata: {{labels: {labels}}}\n    spec:\n      restartPolicy: Never\n"
        "      containers:\n      - name: c\n        image: registry.example/train:1.0\n" + GPU
    )


def cron_job(name: str = "nightly") -> str:
    return (
        f"apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {name}, namespace: ml}}\n"
        "spec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n      parallelism: 2\n"
        "      template:\n        metadata: {labels: {app: nightly}}\n        spec:\n"
        "          restartPolicy: Never\n          containers:\n          - name: c\n"
        "            image: registry.example/train:1.0\n"
        "            resources: {limits: {nvidia.com/gpu: 1}}\n"
    )


def workload(kind: str, name: str = "w", replicas: int = 2, labels: str = "{app: w}") -> str:
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n"
        f"  replicas: {replicas}\n  selector: {{matchLabels: {labels}}}\n  template:\n"
        f"    metadata: {{labels: {labels}}}\n    spec:\n      containers:\n      - name: c\n"
        "        image: registry.example/app:1.0\n" + GPU
    )


MIRROR_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: agent-gpu-0
  namespace: ml
  labels: {app: w}
  annotations: {kubernetes.io/config.mirror: 0123abcd}
spec:
  nodeName: gpu-0
  containers:
  - name: c
    image: registry.example/agent:1.0
"""


def pdb(name: str, selector: str, budget: str = "minAvailable: 1") -> str:
    return (
        f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}, "
        f"namespace: ml}}\nspec:\n  {budget}\n  selector: {selector}\n"
    )


def run(tmp_path: Path, *docs: str) -> Run:
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "nodes.yaml", "---\n".join(gpu_node(f"gpu-{i}") for i in range(3)))
    (tmp_path / "app.yaml").write_text("---\n".join(docs))
    return check(tmp_path, Config(matrix=None))


def rule(result: Run, rule_id: str) -> list[Finding]:
    return [f for f in result.findings if f.rule == rule_id]


def covered(result: Run) -> list[tuple[str, list[str]]]:
    """Each workload with the names of the PDBs in force covering it."""
    disruption = result.repo.disruption
    return [
        (w.name or "?", [p.name for p in disruption.covering(w)]) for w in result.repo.workloads
    ]


# (id, documents, the PDBs covering each workload)
COVER_ROWS = [
    # generateSelector: the Job's pods carry job-name and batch.kubernetes.io/job-name
    ("Job by job-name", [job(), pdb("p", "{matchLabels: {job-name: train}}")], [("train", ["p"])]),
    (
        "Job by batch.kubernetes.io/job-name",
        [job(), pdb("p", "{matchLabels: {batch.kubernetes.io/job-name: train}}")],
        [("train", ["p"])],
    ),
    # generateSelector keeps a job-name the template sets
    (
        "Job template's own job-name wins",
        [job(labels="{app: train, job-name: other}"), pdb("p", "{matchLabels: {job-name: train}}")],
        [("train", [])],
    ),
    # Validate calls generateSelector only without manualSelector
    (
        "Job with manualSelector gets no job-name",
        [
            job(extra="  manualSelector: true\n  selector: {matchLabels: {app: train}}\n"),
            pdb("p", "{matchLabels: {job-name: train}}"),
        ],
        [("train", [])],
    ),
    # the pods hold job-name=train: NotIn (train) selects none of them
    (
        "NotIn job-name",
        [
            job(),
            pdb("p", "{matchExpressions: [{key: job-name, operator: NotIn, values: [train]}]}"),
        ],
        [("train", [])],
    ),
    # a CronJob's Jobs are named after the schedule (nightly-<time>), not nightly
    (
        "CronJob by its own name",
        [cron_job(), pdb("p", "{matchLabels: {job-name: nightly}}")],
        [("nightly", [])],
    ),
    # getNewReplicaSet: every Deployment pod has a pod-template-hash
    (
        "Deployment pod-template-hash Exists",
        [
            workload("Deployment"),
            pdb("p", "{matchExpressions: [{key: pod-template-hash, operator: Exists}]}"),
        ],
        [("w", ["p"])],
    ),
    (
        "Deployment pod-template-hash DoesNotExist",
        [
            workload("Deployment"),
            pdb("p", "{matchExpressions: [{key: pod-template-hash, operator: DoesNotExist}]}"),
        ],
        [("w", [])],
    ),
    # updateIdentity: every StatefulSet pod has its own pod-name label
    (
        "StatefulSet pod-name DoesNotExist",
        [
            workload("StatefulSet"),
            pdb(
                "p",
                "{matchExpressions: [{key: statefulset.kubernetes.io/pod-name, "
                "operator: DoesNotExist}]}",
            ),
        ],
        [("w", [])],
    ),
    # kubectl apply: the second document updates the same object, one PDB in force
    (
        "the same PDB twice in one file",
        [
            workload("Deployment"),
            pdb("p", "{matchLabels: {app: w}}"),
            pdb("p", "{matchLabels: {app: w}}"),
        ],
        [("w", ["p"])],
    ),
    # two objects of different names: two PDBs
    (
        "two PDBs of different names",
        [
            workload("Deployment"),
            pdb("p", "{matchLabels: {app: w}}"),
            pdb("q", "{matchLabels: {app: w}}"),
        ],
        [("w", ["p", "q"])],
    ),
]


@pytest.mark.parametrize(
    ("docs", "expected"), [row[1:] for row in COVER_ROWS], ids=[row[0] for row in COVER_ROWS]
)
def test_coverage(tmp_path: Path, docs: list[str], expected: list) -> None:
    assert covered(run(tmp_path, *docs)) == expected


def test_two_budgets_by_job_name_are_gpu024(tmp_path: Path) -> None:
    # eviction.go Create: more than one matching PDB -> HTTP 500
    result = run(
        tmp_path,
        job(),
        pdb("a", "{matchLabels: {job-name: train}}"),
        pdb("b", "{matchLabels: {app: train}}"),
    )
    (finding,) = rule(result, "GPU024")
    assert "Job train are covered by 2 PodDisruptionBudgets (ml/a" in finding.message


def test_max_unavailable_by_job_name_is_the_fail_safe(tmp_path: Path) -> None:
    # getScaleController fails for a Job -> failSafe: 0 disruptions -> HTTP 429
    result = run(tmp_path, job(), pdb("p", "{matchLabels: {job-name: train}}", "maxUnavailable: 1"))
    (finding,) = rule(result, "GPU020")
    assert "Job train has no scale subresource" in finding.message
    assert finding.hint is not None
    assert finding.hint.startswith("Set minAvailable: 1 (and remove maxUnavailable)")


def test_mirror_pod_makes_max_unavailable_the_fail_safe(tmp_path: Path) -> None:
    # CreateMirrorPod + getScaleController: the Node owner fails the sync -> 0 for every pod
    result = run(
        tmp_path,
        workload("Deployment"),
        MIRROR_POD,
        pdb("p", "{matchLabels: {app: w}}", "maxUnavailable: 1"),
    )
    (finding,) = rule(result, "GPU020")
    assert "Node gpu-0, the controller of a static pod's mirror, has no scale" in finding.message
    # an integer minAvailable counts the 3 selected pods: 2 of them leave 1 disruption
    assert finding.hint is not None
    assert finding.hint.startswith("Set minAvailable: 2 (and remove maxUnavailable)")


def test_same_pdb_twice_is_no_gpu024(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        workload("Deployment"),
        pdb("p", "{matchLabels: {app: w}}"),
        pdb("p", "{matchLabels: {app: w}}", "minAvailable: 2"),
    )
    assert rule(result, "GPU024") == []
    # the last copy is the object: minAvailable 2 of 2 allows none
    (finding,) = rule(result, "GPU020")
    assert "minAvailable 2 of 2 pods" in finding.message


def test_a_rejected_second_copy_leaves_the_first_in_force(tmp_path: Path) -> None:
    # the API server refuses the second apply (both fields set): the first stays
    result = run(
        tmp_path,
        workload("Deployment"),
        pdb("p", "{matchLabels: {app: w}}", "minAvailable: 2"),
        pdb("p", "{matchLabels: {app: w}}", "minAvailable: 1\n  maxUnavailable: 1"),
    )
    assert covered(result) == [("w", ["p"])]
    (finding,) = rule(result, "GPU020")
    assert "minAvailable 2 of 2 pods" in finding.message
