"""An integral YAML float is the integer the API server reads (core/yaml_scalars.py
`json_number`): kubectl, Flux, Argo CD and Helm read YAML with sigs.k8s.io/yaml, whose
`YAMLToJSON` hands go-yaml's float64 to encoding/json, and encoding/json writes 2.0 as `2`
(`floatEncoder`, 'f' notation below 1e21). So `replicas: 2.0` runs two pods and
`minAvailable: 2.0` is a budget of two; `2.5` is still refused (apps/v1 `replicas` is an
int32, policy/v1 `minAvailable` an IntOrString: pkg/apis/apps/validation ValidateDeploymentSpec
after JSON decoding, staging/src/k8s.io/apimachinery/pkg/util/intstr `UnmarshalJSON`)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import gpu_deployment, gpu_node, write
from tests.rules.test_placement_rules import run

# a GPU node with room for the pods (conftest's node, with what the capacity simulation reads)
NODE = gpu_node(
    "n1",
    extra="""\
        status:
          allocatable: {nvidia.com/gpu: "4", cpu: "8", memory: 32Gi, pods: "110"}
          capacity: {nvidia.com/gpu: "4", cpu: "8", memory: 32Gi, pods: "110"}
        """,
)


def deployment(replicas: str, name: str = "w") -> str:
    return gpu_deployment(name, replicas)


def workload(replicas: str, min_available: str) -> str:
    """Deployment `w` and a budget over its pods."""
    return (
        deployment(replicas)
        + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        + "metadata: {name: b, namespace: ml}\n"
        + f"spec:\n  minAvailable: {min_available}\n  selector: {{matchLabels: {{app: w}}}}\n"
    )


def test_integral_floats_are_the_integers_kubectl_sends(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODE)
    write(tmp_path, "w.yaml", workload("2.0", "2.0"))
    findings = run(tmp_path)
    assert [f for f in findings if f.rule == "GPU040"] == []
    # read as two pods under a budget of two: no disruption is allowed (GPU020), as with `2`
    write(tmp_path, "w.yaml", workload("2", "2"))
    as_integers = [(f.rule, f.message) for f in run(tmp_path)]
    assert [(f.rule, f.message) for f in findings] == as_integers
    assert any(rule == "GPU020" for rule, _ in as_integers)


def test_a_fraction_is_still_refused_and_said_as_written(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODE)
    write(tmp_path, "w.yaml", workload("2.5", "1.5"))
    messages = sorted(f.message for f in run(tmp_path) if f.rule == "GPU040")
    assert len(messages) == 2
    assert "spec.replicas must be a non-negative integer, not '2.5'" in messages[1]
    assert "spec.minAvailable: must be an integer or percentage" in messages[0]
    assert "not number 1.5" in messages[0]


def test_a_json_file_the_json_reader_takes_reads_the_same(tmp_path: Path) -> None:
    # a JSON file libyaml refuses (a surrogate pair escape) goes to read/json_docs.py: kubectl
    # decodes its numbers as float64 and encodes them again (apimachinery util/json), so
    # `"replicas": 2.0` is two replicas there too
    write(tmp_path, "nodes.yaml", NODE)
    deployment = (
        '{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": '
        '"ml", "annotations": {"e": "\\ud83d\\ude00"}}, "spec": {"replicas": 2.0, "selector": '
        '{"matchLabels": {"app": "w"}}, "template": {"metadata": {"labels": {"app": "w"}}, '
        '"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}'
    )
    write(tmp_path, "w.json", deployment)
    assert [f.message for f in run(tmp_path) if f.rule == "GPU040"] == []


def test_a_cuda_table_in_the_config_still_refuses_a_version_written_as_a_float(
    tmp_path: Path,
) -> None:
    # the config is the tool's own (read/yaml_docs.py keep_written_floats): `580.0` is no
    # driver version there (12.10 would read as 12.1), as before integral floats became ints
    from gpudrv_check.nvidia.cuda import parse_cuda_table
    from gpudrv_check.read.config import load_config

    write(tmp_path, ".gpudrv-check.yaml", 'cuda:\n  min_driver: {"13.0": 580.0}\n')
    config = load_config(tmp_path)
    _, problems = parse_cuda_table(config.cuda)
    assert any("min_driver" in p and "580.0" in p for p in problems), problems


def test_counts_past_int32_are_refused_and_huge_ones_end(tmp_path: Path) -> None:
    # apps/v1 `replicas` and batch/v1 `parallelism` are int32: encoding/json cannot decode
    # 2147483648 into one, so the API server refuses the object (GPU040); `1e9` is a count it
    # takes, which the simulation places a pod at a time up to MAX_SIMULATED_PODS
    # (model/occupancy.py): the run ends (it took hours and gigabytes) and says a million
    from gpudrv_check.model.occupancy import MAX_SIMULATED_PODS

    huge = deployment("1e9", "huge")
    big = deployment("2147483648", "big")
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\nspec:\n"
        "  parallelism: 3e9\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: busybox}]\n"
    )
    write(tmp_path, "nodes.yaml", NODE)
    write(tmp_path, "w.yaml", "---\n".join((big, huge, job)))
    findings = run(tmp_path)
    refused = sorted(f.message for f in findings if f.rule == "GPU040")
    assert refused[0].startswith("spec.parallelism: 3e9 is past the largest int32 (2147483647)")
    assert refused[1].startswith("spec.replicas: 2147483648 is past the largest int32")
    (pending,) = [f for f in findings if f.rule == "GPU010"]
    assert pending.object is not None and pending.object.name == "huge"
    assert f"of {MAX_SIMULATED_PODS} pods stay Pending" in pending.message
    # every per-pod loop reads the count from pod_count (the budgets, the rehearsal too)
    from gpudrv_check.engine.run import check
    from gpudrv_check.model.occupancy import pod_count
    from gpudrv_check.read.config import Config

    counts = {w.name: pod_count(w, 1) for w in check(tmp_path, Config(matrix=None)).repo.workloads}
    assert counts == {"big": 0, "huge": MAX_SIMULATED_PODS, "j": 0}
