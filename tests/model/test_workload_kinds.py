"""The workload-kinds table (policies/workloads.yaml): each kind's templates, roles, pod counts,
operator labels and owners, as the upstream operators define them (the source of each row is
cited); and a kind added in the config is a workload with no code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.model.workload import Workload, build_workloads
from gpudrv_check.model.workload_kinds import workload_kinds
from gpudrv_check.read.config import Config, ConfigError, parse_config
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import write


def workloads(text: str, config: Config | None = None) -> list[Workload]:
    result = parse_manifest_bytes("w.yaml", textwrap.dedent(text).lstrip("\n").encode())
    found, problems = build_workloads(result.manifests, workload_kinds(config))
    assert not problems and not result.problems, problems
    return found


def by_role(text: str) -> dict[str | None, Workload]:
    return {w.role: w for w in workloads(text)}


WORKER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: llm, namespace: ml}}
spec:
  headGroupSpec:
    template: {{spec: {{containers: [{{name: head, image: rayproject/ray:2.9.0}}]}}}}
  workerGroupSpecs:
    - groupName: gpu
      {fields}
      template:
        metadata: {{labels: {{ray.io/group: mine, team: a}}}}
        spec: {{containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}
"""


# ray-project/kuberay ray-operator/controllers/ray/utils/util.go GetWorkerGroupDesiredReplicas:
# clamp(replicas, minReplicas, maxReplicas) * numOfHosts; maxReplicas wins when min > max;
# suspended groups and clusters have none; replicas defaults to 0 (raycluster_types.go)
@pytest.mark.parametrize(
    ("fields", "pods"),
    [
        ("replicas: 3", 3),
        ("replicas: 1, numOfHosts: 4", 4),
        ("replicas: 1, minReplicas: 2, maxReplicas: 5", 2),
        ("replicas: 9, minReplicas: 2, maxReplicas: 5", 5),
        ("replicas: 3, minReplicas: 6, maxReplicas: 4", 4),
        ("numOfHosts: 2", 0),
        ("minReplicas: 2, numOfHosts: 2", 4),
        ("replicas: 3, suspend: true", 0),
    ],
)
def test_raycluster_worker_group_pods(fields: str, pods: int) -> None:
    text = WORKER.format(fields=fields.replace(", ", "\n      "))
    worker = by_role(text)["worker group gpu"]
    assert worker.replicas == pods


def test_raycluster_roles_labels_and_owner() -> None:
    found = by_role(WORKER.format(fields="replicas: 2"))
    head, worker = found["head group"], found["worker group gpu"]
    assert (head.replicas, head.gpus, worker.gpus) == (1, 0, 1)
    assert worker.title == "RayCluster ml/llm worker group gpu"
    # controllers/ray/common/pod.go labelPod: ray.io/group, node-type, cluster not overridable
    assert worker.pod_labels == {
        "ray.io/group": "gpu",
        "team": "a",
        "ray.io/cluster": "llm",
        "ray.io/node-type": "worker",
        "ray.io/is-ray-node": "yes",
    }
    assert (worker.owner_kind, worker.owner_name, worker.scalable) == ("RayCluster", "llm", False)
    assert worker.completes is False


def test_suspended_raycluster_has_no_pods() -> None:
    text = WORKER.format(fields="replicas: 2")
    text = text.replace("spec:\n  headGroupSpec", "spec:\n  suspend: true\n  headGroupSpec")
    assert {w.role: w.replicas for w in workloads(text)} == {"head group": 0, "worker group gpu": 0}


# kubeflow/training-operator pkg/controller.v1/common/pod.go createNewPod: replica-type label in
# lower case; replicas default 1 (pkg/apis/kubeflow.org/v1 *_defaults.go); PyTorchJob's scale
# subresource is Worker replicas (pytorch_types.go)
def test_pytorchjob_replica_specs() -> None:
    found = by_role(
        """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: ft, namespace: kf}
        spec:
          pytorchReplicaSpecs:
            Master: {template: {spec: {containers: [{name: pytorch, image: x}]}}}
            Worker: {replicas: 4, template: {spec: {containers: [{name: pytorch, image: x}]}}}
        """
    )
    master, worker = found["Master replicas"], found["Worker replicas"]
    assert (master.replicas, worker.replicas) == (1, 4)
    assert worker.pod_labels["training.kubeflow.org/replica-type"] == "worker"
    assert worker.pod_labels["training.kubeflow.org/job-name"] == "ft"
    assert (master.owner_kind, master.scalable, master.owner_replicas) == ("PyTorchJob", True, 4)


# kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go: replicas (default 1) Jobs of
# `parallelism` pods each
def test_jobset_replicas_times_parallelism() -> None:
    (job,) = workloads(
        """
        apiVersion: jobset.x-k8s.io/v1alpha2
        kind: JobSet
        metadata: {name: js, namespace: ml}
        spec:
          replicatedJobs:
            - name: workers
              replicas: 3
              template:
                spec: {parallelism: 2, template: {spec: {containers: [{name: c, image: x}]}}}
        """
    )
    assert (job.role, job.replicas, job.owner_kind) == ("replicated job workers", 6, "Job")
    assert job.pod_labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"


# kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go: `replicas` groups of
# `size` pods: one leader (leaderTemplate, defaulting to workerTemplate) and size-1 workers
@pytest.mark.parametrize(
    ("leader", "size", "expected"),
    [
        ("", 4, {"leader": 2, "workers": 6}),
        (
            "leaderTemplate: {spec: {containers: [{name: l, image: lead}]}}",
            1,
            {"leader": 2, "workers": 0},
        ),
    ],
)
def test_leaderworkerset_size_times_replicas(leader: str, size: int, expected: dict) -> None:
    found = by_role(
        f"""
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSet
        metadata: {{name: vllm, namespace: serve}}
        spec:
          replicas: 2
          leaderWorkerTemplate:
            size: {size}
            {leader}
            workerTemplate: {{spec: {{containers: [{{name: w, image: x}}]}}}}
        """
    )
    assert {role: w.replicas for role, w in found.items()} == expected
    image = "lead" if leader else "x"
    assert found["leader"].containers[0].image == image


# kserve/kserve pkg/apis/serving/v1beta1/predictor.go: the predictor inlines a PodSpec and one
# framework container; minReplicas defaults to 1
def test_inferenceservice_predictor_inline_pod_spec() -> None:
    (predictor,) = workloads(
        """
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: llama, namespace: serve}
        spec:
          predictor:
            nodeSelector: {gpu: a100}
            labels: {team: a}
            model:
              modelFormat: {name: huggingface}
              image: vllm/vllm-openai:v0.6.3
              resources: {limits: {nvidia.com/gpu: 2}}
        """
    )
    assert (predictor.role, predictor.replicas, predictor.gpus) == ("predictor", 1, 2)
    assert predictor.spec_path == ("spec", "predictor")
    assert predictor.containers[0].name == "kserve-container"
    assert predictor.containers[0].path == ("spec", "predictor", "model")
    assert predictor.pod_labels["component"] == "predictor"
    assert predictor.pod_labels["team"] == "a"


# NVIDIA/k8s-nim-operator api/apps/v1alpha1/nimservice_types.go GetImage: repository:tag
def test_nimservice_image_from_fields() -> None:
    (nim,) = workloads(
        """
        apiVersion: apps.nvidia.com/v1alpha1
        kind: NIMService
        metadata: {name: llama, namespace: nim}
        spec:
          image: {repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.3.3"}
          resources: {limits: {nvidia.com/gpu: 1}}
        """
    )
    assert nim.containers[0].image == "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3"
    assert nim.gpu_request_path() == ("spec", "resources", "limits", "nvidia.com/gpu")
    assert (nim.role, nim.replicas, nim.title) == (None, 1, "NIMService nim/llama")


# argoproj/argo-workflows: steps/dag templates run no pod; a podSpecPatch changes the pod later
def test_argo_templates_with_containers_only() -> None:
    found = by_role(
        """
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata: {name: wf, namespace: argo}
        spec:
          templates:
            - {name: main, steps: [[{name: a, template: gpu}]]}
            - {name: gpu, container: {image: x, resources: {limits: {nvidia.com/gpu: 1}}}}
            - {name: patched, podSpecPatch: "{}", script: {image: x, source: s}}
        """
    )
    assert list(found) == ["template gpu"]
    assert found["template gpu"].replicas is None and found["template gpu"].gpus == 1


# knative/serving: the min-scale annotation keeps that many pods; without it, scale to zero
@pytest.mark.parametrize(
    ("annotation", "pods"), [('{autoscaling.knative.dev/min-scale: "2"}', 2), ("{}", None)]
)
def test_knative_min_scale(annotation: str, pods: int | None) -> None:
    (svc,) = workloads(
        f"""
        apiVersion: serving.knative.dev/v1
        kind: Service
        metadata: {{name: embed, namespace: serve}}
        spec:
          template:
            metadata: {{annotations: {annotation}}}
            spec: {{containers: [{{image: x}}]}}
        """
    )
    assert svc.replicas == pods
    assert svc.title == "Service (serving.knative.dev) serve/embed"


def test_a_core_kind_name_in_another_group_is_not_the_core_kind() -> None:
    (job,) = workloads(
        """
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: ddp, namespace: b}
        spec:
          tasks: [{name: worker, replicas: 2, template: {spec: {containers: [{image: x}]}}}]
        """
    )
    assert (job.title, job.replicas) == ("Job (batch.volcano.sh) b/ddp task worker", 2)


def test_unknown_versions_are_not_read() -> None:
    assert not workloads(
        """
        apiVersion: ray.io/v9
        kind: RayCluster
        metadata: {name: x}
        spec: {headGroupSpec: {template: {spec: {containers: [{image: x}]}}}}
        """
    )


NOTEBOOK = """
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: jupyter, namespace: kf}
spec:
  template:
    spec:
      nodeSelector: {gpu: h100}
      containers: [{name: nb, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
NOTEBOOK_KIND = {
    "kinds": [
        {
            "kind": "Notebook",
            "group": "kubeflow.org",
            "versions": ["v1"],
            "templates": [{"role": None, "template": ["spec", "template"], "replicas": 1}],
        }
    ]
}


def test_adding_a_kind_is_a_config_entry() -> None:
    assert not workloads(NOTEBOOK)
    config = parse_config({"workloads": NOTEBOOK_KIND}, "c.yaml")
    (notebook,) = workloads(NOTEBOOK, config)
    assert (notebook.title, notebook.replicas, notebook.gpus) == ("Notebook kf/jupyter", 1, 1)


def test_a_config_kind_is_placed_like_any_workload(tmp_path: Path) -> None:
    write(tmp_path, "nb.yaml", NOTEBOOK)
    write(
        tmp_path,
        "nodes.yaml",
        """
        apiVersion: gpudrv-check.io/v1alpha1
        kind: NodeInventory
        nodes:
          - {name: gpu-1, labels: {gpu: a100, nvidia.com/gpu.present: "true"}}
        """,
    )
    config = parse_config({"matrix": None, "workloads": NOTEBOOK_KIND}, "c.yaml")
    findings = [f for f in check(tmp_path, config).findings if f.rule == "GPU010"]
    assert [f.message.split(":")[0] for f in findings] == ["Notebook kf/jupyter"]


def test_a_bad_config_kind_is_a_usage_error_at_its_key() -> None:
    bad = {"kinds": [{"kind": "Notebook", "group": "kubeflow.org", "versions": ["v1"]}]}
    config = parse_config({"workloads": bad}, "c.yaml")
    with pytest.raises(ConfigError, match=r"workloads\.kinds\[0\]: key 'templates' is required"):
        workload_kinds(config)


@pytest.mark.parametrize(("replicas", "shown"), [(1.0, "1.0"), (2.0**70, "1180591620717411303424")])
def test_a_float_count_is_a_usage_error_not_an_internal_one(replicas, shown) -> None:
    """JSON Schema counts 1.0 as an integer: the table's validator does not (review: the count
    was read with `.get` and the run ended in an internal error); an integer past 64 bits is
    a float as YAML reads it (and the config keeps `1.0` a float: tests/load/test_yaml_docs.py)."""
    template = {"role": None, "template": ["spec", "template"], "replicas": replicas}
    kinds = {"kinds": [{"kind": "Notebook", "group": "kubeflow.org", "versions": ["v1"]}]}
    kinds["kinds"][0]["templates"] = [template]
    config = parse_config({"workloads": kinds}, "c.yaml")
    message = rf"replicas: must be null, an integer or a mapping, not the number {shown}"
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("+", r"\+")):
        workload_kinds(config)


def test_a_pdb_over_operator_labels_covers_the_template(tmp_path: Path) -> None:
    """A PDB selecting KubeRay's pod labels (labelPod) covers the worker group: GPU020 when it
    leaves no disruption, as for a Deployment."""
    shape = Path(__file__).resolve().parent.parent / "realistic" / "kind-raycluster"
    for name in ("nodes.yaml", "support-matrix.csv"):
        (tmp_path / name).write_text((shape / name).read_text())
    write(
        tmp_path,
        "ray.yaml",
        WORKER.format(fields="replicas: 2").replace(
            "spec: {containers:",
            "spec: {tolerations: [{key: nvidia.com/gpu, operator: Exists}], containers:",
        ),
    )
    write(
        tmp_path,
        "pdb.yaml",
        """
        apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: ray-workers, namespace: ml}
        spec:
          minAvailable: 2
          selector: {matchLabels: {ray.io/cluster: llm, ray.io/node-type: worker}}
        """,
    )
    found = [f for f in check(tmp_path, Config()).findings if f.rule == "GPU020"]
    assert len(found) == 1
    assert "It covers RayCluster llm worker group gpu" in found[0].message


RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata: {{name: torch, namespace: research}}
spec:
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  nodeSelector: {{gpu: a100}}
                  containers:
                    - name: node
                      image: nvcr.io/nvidia/pytorch:24.05-py3
                      resources: {{limits: {{nvidia.com/gpu: 1}}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: sft, namespace: {namespace}}}
spec:
  runtimeRef: {{name: torch, kind: {kind}}}
  trainer:
    image: nvcr.io/nvidia/pytorch:24.07-py3
    numNodes: 3
    resourcesPerNode: {{limits: {{nvidia.com/gpu: 8}}}}
"""


# kubeflow/trainer trainjob_types.go RuntimeRef (a TrainingRuntime only in the TrainJob's
# namespace) and the jobset builder's Trainer: image, resourcesPerNode, numNodes on `node`
@pytest.mark.parametrize(
    ("kind", "namespace", "found"),
    [
        ("ClusterTrainingRuntime", "research", True),
        ("TrainingRuntime", "research", True),
        ("TrainingRuntime", "other", False),
    ],
)
def test_trainjob_runs_its_runtime_with_the_trainer_values(
    kind: str, namespace: str, found: bool
) -> None:
    text = RUNTIME.format(kind=kind, namespace=namespace)
    jobs = [w for w in workloads(text) if w.kind == "TrainJob"]
    if not found:
        assert not jobs
        return
    (job,) = jobs
    assert job.role == f"replicated job node (from {kind} torch)"
    assert (job.replicas, job.gpus, job.template_only) == (3, 8, False)
    assert job.containers[0].image == "nvcr.io/nvidia/pytorch:24.07-py3"
    assert job.gpu_request_path() == (
        "spec",
        "trainer",
        "resourcesPerNode",
        "limits",
        "nvidia.com/gpu",
    )
    assert job.pod_spec["nodeSelector"] == {"gpu": "a100"}


# argoproj/argo-workflows workflow/controller/workflowpod.go addSchedulingConstraints: the
# template's nodeSelector, affinity and tolerations, else the workflow's
def test_argo_templates_take_the_workflow_scheduling() -> None:
    found = by_role(
        """
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata: {name: wf, namespace: argo}
        spec:
          nodeSelector: {gpu: h100}
          tolerations: [{key: nvidia.com/gpu, operator: Exists}]
          templates:
            - {name: plain, container: {image: x}}
            - {name: own, nodeSelector: {gpu: a100}, container: {image: x}}
        """
    )
    plain, own = found["template plain"], found["template own"]
    assert plain.pod_spec["nodeSelector"] == {"gpu": "h100"}
    assert own.pod_spec["nodeSelector"] == {"gpu": "a100"}
    assert own.pod_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert plain.admitted == ["the Workflow's spec.nodeSelector, spec.tolerations"]
    assert plain.admitted_at == ("spec", "nodeSelector")


def test_the_shipped_table_conforms_to_its_schema():
    # start-up no longer validates the shipped table (issue 22): this test does, so a broken
    # policies/workloads.yaml still cannot ship
    from gpudrv_check.read.workload_table import builtin_table_error

    assert builtin_table_error() is None


def test_the_compiled_table_is_the_yaml():
    # a run reads policies/workloads.json (issue 22: the YAML takes libyaml, 28 ms a run);
    # it must be policies/workloads.yaml exactly, written as compiled_table_text writes it
    from gpudrv_check.core.resources import read_resource
    from gpudrv_check.read.workload_table import (
        builtin_workload_table,
        compiled_table_text,
        source_workload_table,
    )

    source = source_workload_table()
    assert source["kinds"] and builtin_workload_table() == source
    shipped = read_resource("policies", "workloads.json").decode("utf-8")
    assert shipped == compiled_table_text(source), (
        "policies/workloads.json is stale: run "
        '`python -c "from gpudrv_check.read.workload_table import write_compiled_table as w; w()"`'
    )
