"""Issue 17 on small repos: every resource, shared capacity, quantities and the API server's
validation of extended resources, each row citing the upstream function it follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Severity
from gpudrv_check.read.config import Config, RuleSettings
from tests.conftest import write
from tests.rules.test_placement_rules import at, found, where

DRA = "no new claims to deallocate, "


def node(name: str, allocatable: str | None = None, capacity: str | None = None) -> str:
    status = ""
    if allocatable is not None or capacity is not None:
        status = "status:\n"
        if allocatable is not None:
            status += f"  allocatable: {allocatable}\n"
        if capacity is not None:
            status += f"  capacity: {capacity}\n"
    return (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n"
        f'    nvidia.com/gpu.present: "true"\n{status}'
    )


def deployment(name: str, replicas: int, resources: str, extra: str = "") -> str:
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: ml\n"
        f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {name}}}\n"
        f"  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n{extra}"
        f"      containers:\n      - name: c\n        image: busybox\n"
        f"        resources: {resources}\n"
    )


def pdb(name: str, min_available: int) -> str:
    return (
        f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\n"
        f"  namespace: ml\nspec:\n  minAvailable: {min_available}\n"
        f"  selector:\n    matchLabels: {{app: {name}}}\n"
    )


def repo(tmp_path: Path, *docs: str) -> Path:
    write(tmp_path, "all.yaml", "---\n".join(docs))
    return tmp_path


# --- every resource (fit.go fitsRequest) ----------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "reason"),
    [
        ('{limits: {cpu: "8"}}', "Insufficient cpu"),
        ('{limits: {memory: "64Gi"}}', "Insufficient memory"),
        ('{limits: {ephemeral-storage: "1Ti"}}', "Insufficient ephemeral-storage"),
        ("{limits: {amd.com/gpu: 1}}", "Insufficient amd.com/gpu"),
        ("{limits: {nvidia.com/mig-2g.20gb: 1}}", "Insufficient nvidia.com/mig-2g.20gb"),
    ],
)
def test_every_requested_resource_is_checked(tmp_path: Path, resources: str, reason: str) -> None:
    """fit.go fitsRequest checks cpu, memory, ephemeral-storage and every scalar resource."""
    alloc = '{cpu: "4", memory: "16Gi", ephemeral-storage: "100Gi", nvidia.com/gpu: "8"}'
    root = repo(tmp_path, node("n1", alloc), deployment("w", 1, resources))
    [f] = found(root, "GPU010")
    assert f"0/1 nodes are available: 1 {reason}. {DRA}preemption: 0/1 nodes are available: " in (
        f.message
    )
    assert "1 Preemption is not helpful for scheduling." in f.message
    short = reason.removeprefix("Insufficient ")
    # the fix names the resource the nodes lack (it said "Request fewer nvidia.com/gpu" for all)
    assert f.hint is not None and f"Request less {short} per pod" in f.hint


def test_all_reasons_of_a_node_are_counted(tmp_path: Path) -> None:
    """fit.go Filter keeps every failure reason; FitError.Error counts each (histogram)."""
    alloc = '{cpu: "1", nvidia.com/gpu: "1"}'
    body = '{limits: {cpu: "2", nvidia.com/gpu: 2}}'
    root = repo(tmp_path, node("n1", alloc), node("n2", alloc), deployment("w", 1, body))
    [f] = found(root, "GPU010")
    assert "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient nvidia.com/gpu." in (
        f.message
    )


def test_capacity_only_node_is_allocatable(tmp_path: Path) -> None:
    """pkg/apis/core/v1 SetDefaults_NodeStatus: allocatable defaults to capacity, so a node with
    only status.capacity offers what its capacity lists (not nothing, as the issue feared)."""
    root = repo(
        tmp_path,
        node("n1", capacity='{nvidia.com/gpu: "1"}'),
        deployment("w", 1, "{limits: {nvidia.com/gpu: 2}}"),
    )
    [f] = found(root, "GPU010")
    assert "1 Insufficient nvidia.com/gpu" in f.message
    assert "the most any node offers is 1 (on n1)" in f.message


# --- shared capacity ------------------------------------------------------------------------


def test_replicas_share_the_gpus_of_a_node(tmp_path: Path) -> None:
    """2 replicas × 8 GPUs on one 8-GPU node: one runs; the other is named with the scheduler's
    message (default_preemption.go SelectVictimsOnNode: no lower-priority pod, no victims)."""
    text = "---\n".join(
        (
            node("n1", '{nvidia.com/gpu: "8"}'),
            deployment("trainer", 2, "{limits: {nvidia.com/gpu: 8}}"),
            pdb("trainer", 1),
        )
    )
    write(tmp_path, "all.yaml", text)
    [f] = found(tmp_path, "GPU010")
    assert where(f) == ("all.yaml", *at(text, "nvidia.com/gpu: 8"))
    assert f.message == (
        "Deployment ml/trainer: 1 of 2 pods stay Pending (Deployment/ml/trainer#1), the nodes "
        "they may use being full: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        f"{DRA}preemption: 0/1 nodes are available: 1 No preemption victims found for incoming "
        "pod."
    )
    # the PDB's healthy count is the one pod that runs: minAvailable 1 of it allows nothing
    [budget] = found(tmp_path, "GPU020")
    assert "1 healthy" in budget.message and "1 of 2 pods of Deployment trainer" in budget.message


def test_workloads_compete_in_file_order(tmp_path: Path) -> None:
    """The first workload in file order takes the room; the second finds none."""
    root = repo(
        tmp_path,
        node("n1", '{nvidia.com/gpu: "4"}'),
        deployment("first", 1, "{limits: {nvidia.com/gpu: 4}}"),
        deployment("second", 1, "{limits: {nvidia.com/gpu: 1}}"),
    )
    [f] = found(root, "GPU010")
    assert f.message.startswith("Deployment ml/second: 1 of 1 pods stay Pending")


def test_no_finding_when_the_room_suffices(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        node("n1", '{nvidia.com/gpu: "8"}'),
        node("n2", '{nvidia.com/gpu: "8"}'),
        deployment("trainer", 2, "{limits: {nvidia.com/gpu: 8}}"),
    )
    assert found(root, "GPU010") == []


def test_too_many_pods(tmp_path: Path) -> None:
    """fit.go: len(pods)+1 > allowedPodNumber reads "Too many pods"."""
    root = repo(tmp_path, node("n1", '{pods: "1"}'), deployment("w", 2, "{}"))
    [f] = found(root, "GPU010")
    assert "1 Too many pods." in f.message
    # no pod requests `pods`: the fix speaks of the nodes' allocatable pods, not of a request
    assert f.hint is not None and "up to its allocatable pods" in f.hint
    assert "pods each pod requests" not in f.hint


# --- quantities and the API server's validation (GPU040 at the key) --------------------------


@pytest.mark.parametrize(
    ("resources", "needle", "words"),
    [
        (
            "{requests: {nvidia.com/gpu: 1}}",
            "nvidia.com/gpu",
            "resources.limits: Required value: Limit must be set for non overcommitable resources",
        ),
        (
            "{limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 1}}",
            "nvidia.com/gpu: 1",
            'resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
        ),
        (
            '{limits: {nvidia.com/gpu: "500m"}}',
            "nvidia.com/gpu",
            'resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        ),
        (
            "{limits: {amd.com/gpu: 0.5}}",
            "amd.com/gpu",
            'resources.limits[amd.com/gpu]: Invalid value: "500m": must be an integer',
        ),
    ],
)
def test_extended_resources_the_api_server_rejects(
    tmp_path: Path, resources: str, needle: str, words: str
) -> None:
    """validation.go validateResourceRequirements / ValidateResourceQuantityValue."""
    text = deployment("w", 1, resources)
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "8"}'), text)
    [f] = found(root, "GPU040")
    assert words in f.message
    full = "---\n".join((node("n1", '{nvidia.com/gpu: "8"}'), text))
    assert where(f)[1:] == at(full, needle, full.count(needle) - 1)
    # the object is rejected: no pods, so no placement finding either
    assert found(root, "GPU010") == []


@pytest.mark.parametrize("amount", ["1", '"1"', "1000m", "1k", "2e0", "1.0"])
def test_quantities_as_kubernetes_reads_them(tmp_path: Path, amount: str) -> None:
    """quantity.go ParseQuantity: all whole numbers, all accepted."""
    text = deployment("w", 1, f"{{limits: {{nvidia.com/gpu: {amount}}}}}")
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "8000"}'), text)
    assert found(root, "GPU040") == [] and found(root, "GPU010") == []


def test_sidecars_add_to_the_request(tmp_path: Path) -> None:
    """component-helpers PodRequests: a restartable init container adds to the containers."""
    sidecar = (
        "      initContainers:\n      - name: s\n        image: busybox\n"
        "        restartPolicy: Always\n        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    text = deployment("w", 1, "{limits: {nvidia.com/gpu: 1}}", sidecar)
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "1"}'), text)
    [f] = found(root, "GPU010")
    assert "each pod requests 2 nvidia.com/gpu" in f.message


def test_runtime_class_overhead(tmp_path: Path) -> None:
    """plugin/pkg/admission/runtimeclass setOverhead + PodRequests adds spec.overhead."""
    runtime = (
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n"
        'overhead:\n  podFixed: {cpu: "250m"}\n'
    )
    text = deployment("w", 1, '{limits: {cpu: "1"}}', "      runtimeClassName: kata\n")
    root = repo(tmp_path, node("n1", '{cpu: "1"}'), runtime, text)
    [f] = found(root, "GPU010")
    assert "1 Insufficient cpu" in f.message and "each pod requests 1250m cpu" in f.message


def test_rejected_workloads_count_in_no_pdb(tmp_path: Path) -> None:
    """A rejected object has no pods (apps validation): its PDB covers nothing, blocks nothing."""
    bad = deployment("w", 2, "{requests: {nvidia.com/gpu: 1}}")
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "8"}'), bad, pdb("w", 2))
    assert [f.rule for f in found(root, "GPU040")] == ["GPU040"]
    assert found(root, "GPU020") == []


def test_deployment_selector_must_match_template_labels(tmp_path: Path) -> None:
    """apps/validation ValidatePodTemplateSpecForReplicaSet: "`selector` does not match template
    `labels`"."""
    text = deployment("w", 1, "{}").replace("labels: {app: w}", "labels: {app: other}")
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "8"}'), text)
    [f] = found(root, "GPU040")
    assert (
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}'
        in f.message
    )
    assert "`selector` does not match template `labels`" in f.message


# --- YAML as kubectl reads it -----------------------------------------------------------------


@pytest.mark.parametrize("value", ["~", "null", ""])
def test_null_node_selector_value_is_empty_string(tmp_path: Path, value: str) -> None:
    """encoding/json decodes null into a map[string]string entry as "": valid, matches the
    nodes whose label is empty."""
    extra = f"      nodeSelector:\n        pool: {value}\n"
    text = deployment("w", 1, "{}", extra)
    root = repo(tmp_path, node("n1"), text)
    assert found(root, "GPU040") == []
    [f] = found(root, "GPU010")
    assert "nodeSelector pool= removes n1" in f.message


def test_0o17_is_a_number(tmp_path: Path) -> None:
    """go-yaml v2 resolve: strconv.ParseInt(text, 0, 64) reads 0o17 as 15, not a string."""
    text = deployment("w", 1, "{}", "      nodeSelector:\n        pool: 0o17\n")
    root = repo(tmp_path, node("n1"), text)
    [f] = found(root, "GPU040")
    assert "value must be a string, not integer" in f.message


# --- spec.nodeName and the kubelet ------------------------------------------------------------


def test_bound_pod_on_a_node_without_the_gpu_resource_runs_without_gpu(tmp_path: Path) -> None:
    """kubelet lifecycle/predicate.go removeMissingExtendedResources: admitted, no GPU."""
    text = deployment("w", 1, "{limits: {nvidia.com/gpu: 1}}", "      nodeName: n1\n")
    root = repo(tmp_path, node("n1", '{cpu: "4"}'), text)
    assert found(root, "GPU010") == []
    [f] = found(root, "GPU012")
    assert f.severity == Severity.WARNING
    assert "the kubelet admits it anyway" in f.message and "runs without a GPU" in f.message


def test_bound_pod_on_a_node_with_too_few_gpus_is_rejected(tmp_path: Path) -> None:
    """kubelet admission: InsufficientResourceError.Error."""
    text = deployment("w", 1, "{limits: {nvidia.com/gpu: 2}}", "      nodeName: n1\n")
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "1"}'), text)
    [f] = found(root, "GPU010")
    assert (
        "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 0, capacity: 1"
        in f.message
    )


# --- wording per scheduler release ------------------------------------------------------------


def test_scheduler_version_chooses_the_wording(tmp_path: Path) -> None:
    """Before 1.34: no DRA PostFilter clause, and an insufficient node is resolvable."""
    root = repo(
        tmp_path,
        node("n1", '{nvidia.com/gpu: "1"}'),
        deployment("w", 1, "{limits: {nvidia.com/gpu: 2}}"),
    )
    config = Config(
        matrix=None, rules={"GPU010": RuleSettings(params={"scheduler_version": "1.33"})}
    )
    [f] = found(root, "GPU010", config)
    assert DRA not in f.message
    assert (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        in (f.message)
    )
    [now] = found(root, "GPU010")
    assert f"{DRA}preemption: 0/1 nodes are available: 1 Preemption is not helpful" in now.message
    assert "Preemption is not helpful for scheduling. Why:" in now.message
    # 1.26-1.29: FitError.Error appended the PostFilter message with SeparatorFormat " %v.",
    # after the preemption message's own period (kubernetes#116133, v1.26.1): ".."
    for release, end in (("1.29", "pod.. Why:"), ("1.26", "pod.. Why:"), ("1.25", "pod. Why:")):
        params = {"scheduler_version": release}
        config = Config(matrix=None, rules={"GPU010": RuleSettings(params=params)})
        [old] = found(root, "GPU010", config)
        assert f"No preemption victims found for incoming {end}" in old.message, release


def test_dra_claims_are_unknown_not_wrong(tmp_path: Path) -> None:
    """A pod with spec.resourceClaims: the DynamicResources filter needs ResourceSlices, which
    the repo lacks; the other filters still hold, and the finding says what was not evaluated."""
    claims = (
        "      resourceClaims:\n      - name: gpu\n        resourceClaimTemplateName: one-gpu\n"
        "      nodeSelector: {pool: nowhere}\n"
    )
    root = repo(tmp_path, node("n1"), deployment("w", 1, "{claims: [{name: gpu}]}", claims))
    [f] = found(root, "GPU010")
    assert "its DRA resource claims (spec.resourceClaims) were not evaluated" in f.message


def test_hugepages_the_api_server_rejects(tmp_path: Path) -> None:
    """validation.go validateResourceQuantityHugePageValue and "HugePages require cpu or
    memory" (values from the real v1.35.4 code); the fix speaks of pages, not of GPUs."""
    text = deployment("w", 1, "{limits: {hugepages-2Mi: 1Mi}}")
    root = repo(tmp_path, node("n1", '{nvidia.com/gpu: "8"}'), text)
    messages = sorted(f.message for f in found(root, "GPU040"))
    assert messages == [
        "spec.template.spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "
        '"1Mi": 1Mi is not positive integer multiple of hugepages-2Mi',
        "spec.template.spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
    ]
    assert all("whole pages" in (f.hint or "") for f in found(root, "GPU040"))
