"""Pod counts the operators and controllers derive from what a manifest writes (the workload
table's `replicas:` forms and the core Job, CronJob; docs/kubernetes.md §9): one row per
upstream rule, citing the file and function it follows; the expected values are ours, worked
out from that code."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.run import check
from gpudrv_check.model.occupancy import pod_count
from gpudrv_check.model.workload import Workload, build_workloads
from gpudrv_check.model.workload_kinds import workload_kinds
from gpudrv_check.read.config import Config
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import write

REALISTIC = Path(__file__).resolve().parent.parent / "realistic"


def workloads(text: str) -> list[Workload]:
    result = parse_manifest_bytes("w.yaml", textwrap.dedent(text).lstrip("\n").encode())
    found, problems = build_workloads(result.manifests, workload_kinds(None))
    assert not problems and not result.problems, problems
    return found


def counts(text: str) -> dict[str | None, int | None]:
    return {w.role: w.replicas for w in workloads(text)}


def findings(tmp_path: Path, text: str, rule: str) -> list[Finding]:
    """The findings of `rule` on `text` with two 8-GPU A100 nodes (tainted) and a CPU node."""
    for name in ("nodes.yaml", "support-matrix.csv"):
        (tmp_path / name).write_text((REALISTIC / "kind-mpijob" / name).read_text())
    write(tmp_path, "w.yaml", text)
    return [f for f in check(tmp_path, Config()).findings if f.rule == rule]


# --- KServe InferenceService ------------------------------------------------------------------

ISVC = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: llm
  namespace: ml
  annotations: {annotations}
spec:
  predictor:
    {predictor}
    model: {{modelFormat: {{name: huggingface}}, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
  transformer:
    {transformer}
    containers: [{{name: t, image: kserve/image-transformer:latest}}]
"""


# kserve/kserve pkg/apis/serving/v1beta1/component.go ComponentExtensionSpec.MinReplicas
# (default constants.DefaultMinReplicas = 1), read per component (spec.predictor.minReplicas,
# spec.transformer.minReplicas); minReplicas 0: Knative scales to zero
# (controller/v1alpha1/utils/utils.go SetAutoScalingAnnotations min-scale "0": not fixed), a raw
# Deployment under HPA keeps 1 (reconcilers/hpa/hpa_reconciler.go createHPA raises it to
# DefaultMinReplicas), under autoscalerClass none has 0 (reconcilers/deployment/
# deployment_reconciler.go replicas = minReplicas), under keda or external another autoscaler
# decides (not fixed). No deploymentMode annotation: the shipped configmap's Serverless.
@pytest.mark.parametrize(
    ("mode", "scaler", "predictor", "transformer", "expected"),
    [
        (None, None, "", "", {"predictor": 1, "transformer": 1}),
        (None, None, "minReplicas: 3", "minReplicas: 2", {"predictor": 3, "transformer": 2}),
        (None, None, "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
        ("Serverless", None, "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
        ("Knative", None, "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
        (
            "RawDeployment",
            None,
            "minReplicas: 0",
            "minReplicas: 0",
            {"predictor": 1, "transformer": 1},
        ),
        ("Standard", None, "minReplicas: 0", "", {"predictor": 1, "transformer": 1}),
        ("RawDeployment", "hpa", "minReplicas: 0", "", {"predictor": 1, "transformer": 1}),
        (
            "RawDeployment",
            "none",
            "minReplicas: 0",
            "minReplicas: 2",
            {"predictor": 0, "transformer": 2},
        ),
        ("RawDeployment", "keda", "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
        ("RawDeployment", "external", "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
        (None, "none", "minReplicas: 0", "", {"predictor": None, "transformer": 1}),
    ],
)
def test_inferenceservice_min_replicas(
    mode: str | None, scaler: str | None, predictor: str, transformer: str, expected: dict
) -> None:
    written = {
        "serving.kserve.io/deploymentMode": mode,
        "serving.kserve.io/autoscalerClass": scaler,
    }
    annotations = "{" + ", ".join(f"{k}: {v}" for k, v in written.items() if v) + "}"
    text = ISVC.format(annotations=annotations, predictor=predictor, transformer=transformer)
    assert counts(text) == expected


def test_inferenceservice_count_names_its_key() -> None:
    (predictor, _) = workloads(
        ISVC.format(annotations="{}", predictor="minReplicas: 3", transformer="")
    )
    assert predictor.replicas_path == ("spec", "predictor", "minReplicas")


# --- core Job and CronJob ---------------------------------------------------------------------

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  labels: {labels}
spec:
  {fields}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: t, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
"""


# kubernetes/kubernetes pkg/controller/job/job_controller.go manageJob: a suspended Job has no
# active pods; otherwise wantActive = parallelism (default 1, batch/v1 SetDefaults_Job), capped
# by completions when set (NonIndexed and Indexed alike), before any pod succeeds. Kueue's
# batch/job integration (on by default) lifts suspend at admission for a Job labelled
# kueue.x-k8s.io/queue-name.
@pytest.mark.parametrize(
    ("fields", "labels", "pods", "key"),
    [
        ("", "{}", 1, None),
        ("parallelism: 4", "{}", 4, ("spec", "parallelism")),
        ("parallelism: 8, completions: 2", "{}", 2, ("spec", "completions")),
        (
            "parallelism: 8, completions: 2, completionMode: Indexed",
            "{}",
            2,
            ("spec", "completions"),
        ),
        ("parallelism: 2, completions: 8", "{}", 2, ("spec", "parallelism")),
        ("completions: 5", "{}", 1, None),
        ("parallelism: 0", "{}", 0, ("spec", "parallelism")),
        ("parallelism: 4, completions: 0", "{}", 0, ("spec", "completions")),
        ("parallelism: 4, suspend: true", "{}", 0, ("spec", "parallelism")),
        ("parallelism: 4, suspend: false", "{}", 4, ("spec", "parallelism")),
        (
            "parallelism: 4, suspend: true",
            "{kueue.x-k8s.io/queue-name: team}",
            4,
            ("spec", "parallelism"),
        ),
        (
            "parallelism: 4, suspend: true",
            '{kueue.x-k8s.io/queue-name: ""}',
            0,
            ("spec", "parallelism"),
        ),
    ],
)
def test_job_active_pods(fields: str, labels: str, pods: int, key: tuple | None) -> None:
    text = JOB.format(fields=fields.replace(", ", "\n  "), labels=labels)
    (job,) = workloads(text)
    assert (job.replicas, job.replicas_path) == (pods, key)


CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata: {{name: nightly, namespace: ml}}
spec:
  schedule: "0 2 * * *"
  {suspend}
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{{name: t, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
"""


# kubernetes/kubernetes pkg/controller/cronjob/cronjob_controllerv2.go syncCronJob: a suspended
# CronJob schedules no Job, so it has no pods (not placed, no GPU010); otherwise its count
# is per schedule (not fixed)
@pytest.mark.parametrize(
    ("suspend", "pods"), [("", None), ("suspend: false", None), ("suspend: true", 0)]
)
def test_cronjob_suspend(suspend: str, pods: int | None) -> None:
    (cron,) = workloads(CRONJOB.format(suspend=suspend))
    assert (cron.replicas, cron.placeable) == (pods, pods != 0)


CRON_TEMPLATE = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: ml}
spec:
  schedule: "0 2 * * *"
  SUSPEND
  jobTemplate:
    metadata: {labels: LABELS}
    spec:
      JOB
      template:
        spec:
          restartPolicy: Never
          containers: [{name: t, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


# the pods one Job of a CronJob runs, which the capacity simulation and the budgets count:
# cronjob_controllerv2.go getJobFromTemplate2 makes the Job from jobTemplate (its spec and its
# labels), job_controller.go manageJob runs min(parallelism, completions) of them and none while
# the Job is suspended, unless Kueue admits it (the queue label the Job carries: jobTemplate's)
@pytest.mark.parametrize(
    ("suspend", "job", "labels", "pods"),
    [
        ("", "", "{}", 1),  # parallelism defaults to 1
        ("", "parallelism: 4", "{}", 4),
        ("", "parallelism: 8\n      completions: 2", "{}", 2),  # manageJob: completions cap
        ("suspend: true", "parallelism: 4", "{}", 0),  # syncCronJob: no Job at all
        ("", "suspend: true", "{}", 0),  # each Job created suspended
        ("", "suspend: true", "{kueue.x-k8s.io/queue-name: q}", 1),  # Kueue lifts it
        ("", "parallelism: -1", "{}", 1),  # refused by the API server: counted as the default
    ],
)
def test_cronjob_job_pods(suspend: str, job: str, labels: str, pods: int) -> None:
    text = CRON_TEMPLATE.replace("SUSPEND", suspend).replace("JOB", job)
    (cron,) = workloads(text.replace("LABELS", labels))
    assert pod_count(cron, eligible=3) == pods


# --- MPIJob -----------------------------------------------------------------------------------

MPIJOB = """
apiVersion: kubeflow.org/{version}
kind: MPIJob
metadata: {{name: mpi, namespace: ml, labels: {labels}}}
spec:
  {run_policy}
  mpiReplicaSpecs:
    Launcher:
      template: {{spec: {{containers: [{{name: launcher, image: mpioperator/mpi-pi:openmpi}}]}}}}
    Worker:
      {worker}
      template:
        spec: {{containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}
"""


# kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/default.go setDefaultsTypeLauncher (1) and
# setDefaultsTypeWorker (0); kubeflow/training-operator pkg/apis/kubeflow.org/v1/mpi_defaults.go
# SetDefaults_MPIJob (Launcher 1, Worker 0); runPolicy.suspend: no pods
@pytest.mark.parametrize("version", ["v1", "v2beta1"])
@pytest.mark.parametrize(
    ("worker", "run_policy", "expected"),
    [
        ("", "", {"Launcher replicas": 1, "Worker replicas": 0}),
        ("replicas: 3", "", {"Launcher replicas": 1, "Worker replicas": 3}),
        (
            "replicas: 3",
            "runPolicy: {suspend: true}",
            {"Launcher replicas": 0, "Worker replicas": 0},
        ),
    ],
)
def test_mpijob_replica_defaults(
    version: str, worker: str, run_policy: str, expected: dict
) -> None:
    text = MPIJOB.format(version=version, labels="{}", worker=worker, run_policy=run_policy)
    assert counts(text) == expected


# kubeflow/mpi-operator pkg/controller/mpi_job_controller.go defaultLabels (operator-name
# mpi-operator, job-name, job-role; no replica-type), newWorker (owned by the MPIJob),
# newLauncherJob (the launcher pod's owner is the batch Job <name>-launcher); training-operator
# v1 pkg/controller.v1/mpi mpijob.go defaultReplicaLabels and common GenLabels
@pytest.mark.parametrize(
    ("version", "role", "labels", "owner"),
    [
        (
            "v2beta1",
            "Worker replicas",
            {
                "training.kubeflow.org/job-role": "worker",
                "training.kubeflow.org/operator-name": "mpi-operator",
            },
            ("MPIJob", "mpi"),
        ),
        (
            "v2beta1",
            "Launcher replicas",
            {
                "training.kubeflow.org/job-role": "launcher",
                "training.kubeflow.org/operator-name": "mpi-operator",
            },
            ("Job", "mpi-launcher"),
        ),
        (
            "v1",
            "Worker replicas",
            {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/operator-name": "mpijob-controller",
            },
            ("MPIJob", "mpi"),
        ),
        (
            "v1",
            "Launcher replicas",
            {
                "training.kubeflow.org/replica-type": "launcher",
                "training.kubeflow.org/operator-name": "mpijob-controller",
            },
            ("MPIJob", "mpi"),
        ),
    ],
)
def test_mpijob_pod_labels_and_owner(version: str, role: str, labels: dict, owner: tuple) -> None:
    text = MPIJOB.format(version=version, labels="{}", worker="replicas: 2", run_policy="")
    found = {w.role: w for w in workloads(text)}[role]
    assert found.pod_labels == {"training.kubeflow.org/job-name": "mpi", **labels}
    assert (found.owner_kind, found.owner_name) == owner


V2_PDBS = """
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: by-job, namespace: ml}
spec:
  minAvailable: 1
  selector: {matchLabels: {training.kubeflow.org/job-name: mpi}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: by-label, namespace: ml}
spec:
  minAvailable: 1
  selector: {matchLabels: {LABEL}}
"""


# v2beta1 pods carry job-role, not replica-type: a budget on replica-type covers nothing (no
# GPU024 with the job-name budget); one on job-role covers the workers twice (GPU024)
@pytest.mark.parametrize(
    ("label", "covered"),
    [
        ("training.kubeflow.org/replica-type: worker", False),
        ("training.kubeflow.org/job-role: worker", True),
    ],
)
def test_mpijob_v2_budgets_select_by_job_role(tmp_path: Path, label: str, covered: bool) -> None:
    job = MPIJOB.format(version="v2beta1", labels="{}", worker="replicas: 2", run_policy="")
    job = job.replace(
        "spec: {containers: [{name: w,",
        "spec: {tolerations: [{operator: Exists}], containers: [{name: w,",
    )
    found = findings(tmp_path, job + V2_PDBS.replace("LABEL", label), "GPU024")
    assert [f.message.split(" are covered")[0] for f in found] == (
        ["the pods of MPIJob mpi Worker replicas"] if covered else []
    )


# --- RayJob -----------------------------------------------------------------------------------

RAYJOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata: {{name: rj, namespace: ml, labels: {labels}}}
spec:
  entrypoint: python train.py
  {fields}
  rayClusterSpec:
    headGroupSpec:
      template: {{spec: {{containers: [{{name: head, image: rayproject/ray:2.9.0}}]}}}}
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        template:
          spec:
            containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers: [{{name: submitter, image: rayproject/ray:2.9.0}}]
"""


# ray-project/kuberay ray-operator/controllers/ray/rayjob_controller.go: suspended, no cluster
# and no submitter (updateStatusToSuspendingIfNeeded, the rayjob_types.go Suspend doc);
# clusterSelector: getOrCreateRayClusterInstance creates no cluster (the submitter still runs);
# the submitter Job only in K8sJobMode, the kubebuilder default (createK8sJobIfNeed); HTTPMode,
# InteractiveMode and SidecarMode create none
@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("", {"head group": 1, "worker group gpu": 2, "submitter": 1}),
        ("submissionMode: K8sJobMode", {"head group": 1, "worker group gpu": 2, "submitter": 1}),
        ("suspend: true", {"head group": 0, "worker group gpu": 0, "submitter": 0}),
        ("submissionMode: HTTPMode", {"head group": 1, "worker group gpu": 2, "submitter": 0}),
        (
            "submissionMode: InteractiveMode",
            {"head group": 1, "worker group gpu": 2, "submitter": 0},
        ),
        ("submissionMode: SidecarMode", {"head group": 1, "worker group gpu": 2, "submitter": 0}),
        (
            "clusterSelector: {ray.io/cluster: llm}",
            {"head group": 0, "worker group gpu": 0, "submitter": 1},
        ),
        ("clusterSelector: {}", {"head group": 1, "worker group gpu": 2, "submitter": 1}),
    ],
)
def test_rayjob_cluster_and_submitter(fields: str, expected: dict) -> None:
    assert counts(RAYJOB.format(labels="{}", fields=fields)) == expected


# --- Kueue ------------------------------------------------------------------------------------

QUEUED = "{kueue.x-k8s.io/queue-name: team}"

JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: js, namespace: ml, labels: {labels}}}
spec:
  {fields}
  replicatedJobs:
    - name: w
      replicas: {replicas}
      template:
        spec:
          {job}
          template: {{spec: {{containers: [{{name: c, image: x}}]}}}}
"""

PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: pt, namespace: ml, labels: {labels}}}
spec:
  runPolicy: {{suspend: true}}
  pytorchReplicaSpecs:
    Worker: {{replicas: 2, template: {{spec: {{containers: [{{name: pytorch, image: x}}]}}}}}}
"""

RAYCLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: llm, namespace: ml, labels: {labels}}}
spec:
  suspend: true
  headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: x}}]}}}}}}
  workerGroupSpecs:
    - {{groupName: gpu, replicas: 2, template: {{spec: {{containers: [{{name: w, image: x}}]}}}}}}
"""


def _jobset(labels: str) -> str:
    return JOBSET.format(fields="suspend: true", replicas=1, job="parallelism: 2", labels=labels)


def _mpijob(version: str) -> Callable[[str], str]:
    def text(labels: str) -> str:
        suspended = "runPolicy: {suspend: true}"
        return MPIJOB.format(
            version=version, labels=labels, worker="replicas: 2", run_policy=suspended
        )

    return text


# kubernetes-sigs/kueue: a queued object is suspended until admission and unsuspended then
# (pkg/controller/jobframework reconciler, e.g. jobs/jobset RunWithPodSetsInfo sets suspend
# false), for the frameworks of the shipped config/components/manager/
# controller_manager_config.yaml integrations.frameworks: batch/job, kubeflow.org/mpijob,
# ray.io/rayjob, ray.io/raycluster, jobset.x-k8s.io/jobset ... but not kubeflow.org/pytorchjob
# (commented out there): a suspended PyTorchJob stays without pods. Kueue's mpijob integration
# is mpi-operator's v2beta1. Kueue reads the object's own label.
@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        (_jobset, "{}", {"replicated job w": 0}),
        (_jobset, QUEUED, {"replicated job w": 2}),
        (_mpijob("v2beta1"), QUEUED, {"Launcher replicas": 1, "Worker replicas": 2}),
        (_mpijob("v1"), QUEUED, {"Launcher replicas": 0, "Worker replicas": 0}),
        (
            lambda labels: RAYJOB.format(fields="suspend: true", labels=labels),
            QUEUED,
            {"head group": 1, "worker group gpu": 2, "submitter": 1},
        ),
        (RAYCLUSTER.format, QUEUED, {"head group": 1, "worker group gpu": 2}),
        (RAYCLUSTER.format, "{}", {"head group": 0, "worker group gpu": 0}),
        (PYTORCHJOB.format, QUEUED, {"Worker replicas": 0}),
    ],
)
def test_kueue_lifts_suspend_of_the_kinds_it_integrates(
    text: Callable[..., str], labels: str, expected: dict
) -> None:
    assert counts(text(labels=labels)) == expected


# kubernetes-sigs/jobset: each of `replicas` (default 1) is a Job; kubernetes
# pkg/controller/job/job_controller.go manageJob runs min(parallelism, completions) of its pods
@pytest.mark.parametrize(
    ("replicas", "job", "pods"),
    [
        (1, "parallelism: 8\n          completions: 2", 2),
        (3, "parallelism: 8\n          completions: 2", 6),
        (2, "parallelism: 2\n          completions: 8", 4),
        (2, "completions: 4", 2),
        (2, "parallelism: 3", 6),
        (2, "parallelism: 3\n          completions: 0", 0),
    ],
)
def test_jobset_jobs_run_at_most_their_completions(replicas: int, job: str, pods: int) -> None:
    text = JOBSET.format(fields="", replicas=replicas, job=job, labels="{}")
    assert counts(text) == {"replicated job w": pods}


# --- Kubeflow jobs with a scale subresource ---------------------------------------------------

KUBEFLOW = """
apiVersion: kubeflow.org/v1
kind: {kind}
metadata: {{name: job, namespace: ml}}
spec:
  {specs}:
    Worker:
      replicas: 2
      template:
        spec:
          tolerations: [{{operator: Exists}}]
          containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: job, namespace: ml}}
spec:
  maxUnavailable: 1
  selector: {{matchLabels: {{training.kubeflow.org/job-name: job}}}}
"""


# kubeflow/training-operator pkg/apis/kubeflow.org/v1 paddlepaddle_types.go and jax_types.go
# +kubebuilder:subresource:scale specpath .spec.<x>ReplicaSpecs.Worker.replicas: the disruption
# controller reads that scale (2), so maxUnavailable 1 allows one eviction: no GPU020; TFJob
# has none (tensorflow_types.go), so its budget allows none (disruption.go failSafe)
@pytest.mark.parametrize(
    ("kind", "specs", "scalable"),
    [
        ("PaddleJob", "paddleReplicaSpecs", True),
        ("JAXJob", "jaxReplicaSpecs", True),
        ("PyTorchJob", "pytorchReplicaSpecs", True),
        ("TFJob", "tfReplicaSpecs", False),
    ],
)
def test_kubeflow_scale_subresource(tmp_path: Path, kind: str, specs: str, scalable: bool) -> None:
    text = KUBEFLOW.format(kind=kind, specs=specs)
    (worker,) = workloads(text)
    assert (worker.role, worker.replicas, worker.scalable) == ("Worker replicas", 2, scalable)
    assert worker.owner_replicas == (2 if scalable else None)
    found = findings(tmp_path, text, "GPU020")
    assert bool(found) is not scalable
    if found:
        assert "no scale subresource" in found[0].message


# --- Volcano Job ------------------------------------------------------------------------------


# volcano-sh/volcano pkg/webhooks/admission/jobs/mutate/mutate_job.go mutateSpec: an unnamed
# task is named default<index> (DefaultTaskSpec); `replicas` (volcano-sh/apis
# pkg/apis/batch/v1alpha1/job.go TaskSpec, int32 omitempty) is not defaulted there: 0 pods
def test_volcano_task_defaults() -> None:
    found = workloads(
        """
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: ddp, namespace: b}
        spec:
          tasks:
            - template: {spec: {containers: [{image: x}]}}
            - {name: w, replicas: 2, template: {spec: {containers: [{image: x}]}}}
            - {replicas: 3, template: {spec: {containers: [{image: x}]}}}
        """
    )
    assert [(w.role, w.replicas, w.pod_labels["volcano.sh/task-spec"]) for w in found] == [
        ("task default0", 0, "default0"),
        ("task w", 2, "w"),
        ("task default2", 3, "default2"),
    ]


# the CRD serves batch.volcano.sh v1alpha1 only (volcano config/crd/volcano/bases/
# batch.volcano.sh_jobs.yaml): a `v1` Job is not read, and a GPU request in it is reported as
# unmodelled, not taken for a core batch/v1 Job (which it shares the kind name with)
def test_a_custom_job_of_an_unread_version_is_unmodelled() -> None:
    from gpudrv_check.model.coverage import unmodelled_gpu_workloads

    text = """
    apiVersion: batch.volcano.sh/{version}
    kind: Job
    metadata: {{name: ddp, namespace: b}}
    spec:
      tasks:
        - name: w
          replicas: 2
          template:
            spec: {{containers: [{{image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}
    """
    for version, modelled in (("v1", False), ("v1alpha1", True)):
        source = textwrap.dedent(text.format(version=version)).encode()
        manifests = parse_manifest_bytes("w.yaml", source).manifests
        found = build_workloads(manifests, workload_kinds(None))[0]
        unmodelled = unmodelled_gpu_workloads(manifests, None, {id(w.manifest) for w in found})
        assert (bool(found), [m.api_version for m in unmodelled]) == (
            (True, []) if modelled else (False, [f"batch.volcano.sh/{version}"])
        )


# --- Argo containerSet ------------------------------------------------------------------------


# argoproj/argo-workflows workflow/controller/container_set_template.go executeContainerSet:
# one pod with every container of containerSet.containers (createWorkflowPod with
# ContainerSet.GetContainers()); the pod requests their sum
CONTAINER_SET = [
    {
        "name": "main",
        "containerSet": {
            "containers": [
                {"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}},
                {"name": "b", "image": "y", "resources": {"limits": {"nvidia.com/gpu": 2}}},
            ]
        },
    }
]


@pytest.mark.parametrize(("kind", "where"), [("Workflow", ""), ("CronWorkflow", "workflowSpec")])
def test_argo_container_set_is_a_pod(kind: str, where: str) -> None:
    templates = {"templates": CONTAINER_SET}
    spec = {where: templates} if where else templates
    doc = {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "metadata": {"name": "cs"}}
    (template,) = workloads(json.dumps({**doc, "spec": spec}))  # JSON is YAML
    assert (template.role, template.gpus, template.replicas) == ("template main", 3, None)
    assert [c.name for c in template.containers] == ["a", "b"]


# --- TrainJob ---------------------------------------------------------------------------------

TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {{name: torch}}
spec:
  {policy}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers:
                    - {{name: node, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: tj, namespace: research}}
spec:
  runtimeRef: {{name: torch}}
  trainer: {{image: x{trainer}}}
"""


# kubeflow/trainer pkg/runtime/core/trainingruntime.go: the trainer job's count is
# ptr.Deref(mlPolicy.NumNodes, 1); pkg/runtime/framework/plugins/torch/torch.go and
# plainml/plainml.go replace it with the TrainJob's trainer.numNodes when set
@pytest.mark.parametrize(
    ("policy", "trainer", "pods", "key"),
    [
        ("mlPolicy: {numNodes: 4}", "", 4, None),
        ("mlPolicy: {numNodes: 4}", ", numNodes: 2", 2, ("spec", "trainer", "numNodes")),
        ("mlPolicy: {torch: {}}", "", 1, None),
        ("", "", 1, None),
        ("", ", numNodes: 3", 3, ("spec", "trainer", "numNodes")),
    ],
)
def test_trainjob_num_nodes(policy: str, trainer: str, pods: int, key: tuple | None) -> None:
    found = [
        w
        for w in workloads(TRAINJOB.format(policy=policy, trainer=trainer))
        if w.kind == "TrainJob"
    ]
    assert [(w.replicas, w.replicas_path) for w in found] == [(pods, key)]


# --- NIMService -------------------------------------------------------------------------------


# NVIDIA/k8s-nim-operator api/apps/v1alpha1/nimservice_types.go GetReplicas: with autoscaling
# enabled (IsAutoScalingEnabled: scale.enabled true) the HPA's minReplicas, kubebuilder
# default 1 (common_types.go HorizontalPodAutoscalerSpec), else spec.replicas (Deployment
# default 1)
HPA = "{minReplicas: 3, maxReplicas: 4}"


@pytest.mark.parametrize(
    ("replicas", "scale", "pods", "key"),
    [
        ("", "{}", 1, None),
        ("replicas: 2", "{}", 2, ("spec", "replicas")),
        (
            "replicas: 2",
            f"{{enabled: true, hpa: {HPA}}}",
            3,
            ("spec", "scale", "hpa", "minReplicas"),
        ),
        ("replicas: 2", "{enabled: true, hpa: {maxReplicas: 4}}", 1, None),
        ("replicas: 2", f"{{enabled: false, hpa: {HPA}}}", 2, ("spec", "replicas")),
        ("replicas: 2", f"{{hpa: {HPA}}}", 2, ("spec", "replicas")),
    ],
)
def test_nimservice_replicas(replicas: str, scale: str, pods: int, key: tuple | None) -> None:
    (nim,) = workloads(
        f"""
        apiVersion: apps.nvidia.com/v1alpha1
        kind: NIMService
        metadata: {{name: llama, namespace: nim}}
        spec:
          image: {{repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.3.3"}}
          scale: {scale}
          {replicas}
        """
    )
    assert (nim.replicas, nim.replicas_path) == (pods, key)


# --- the fix names the key the count comes from -----------------------------------------------

RAY_FULL = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: llm, namespace: ml}}
spec:
  headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: x}}]}}}}}}
  workerGroupSpecs:
    - groupName: gpu
      {counts}
      template:
        spec:
          nodeSelector: {{nvidia.com/gpu.present: "true"}}
          tolerations: [{{operator: Exists}}]
          containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]
"""


# two 8-GPU nodes take two 8-GPU workers: the third is Pending (GPU010); the fix names the key
# that set the count: minReplicas when it raises replicas (KubeRay
# GetWorkerGroupDesiredReplicas), maxReplicas when it caps them, else replicas
@pytest.mark.parametrize(
    ("counts", "key"),
    [
        ("replicas: 1, minReplicas: 3, maxReplicas: 4", "spec.workerGroupSpecs[0].minReplicas"),
        ("replicas: 9, minReplicas: 1, maxReplicas: 3", "spec.workerGroupSpecs[0].maxReplicas"),
        ("replicas: 3", "spec.workerGroupSpecs[0].replicas"),
    ],
)
def test_pending_replicas_fix_names_the_count_key(tmp_path: Path, counts: str, key: str) -> None:
    text = RAY_FULL.format(counts=counts.replace(", ", "\n      "))
    (found,) = findings(tmp_path, text, "GPU010")
    assert "1 of 3 pods stay Pending" in found.message
    assert found.hint is not None and found.hint.startswith(f"Lower `{key}` or the nvidia.com/gpu")
