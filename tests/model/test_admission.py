"""Tolerations and node selectors that no manifest shows: the ExtendedResourceToleration and
RuntimeClass admission plugins and Kueue's ResourceFlavor, and what GPU010/GPU017 say of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.engine.run import check
from gpudrv_check.model.admission import is_extended_resource
from gpudrv_check.read.config import parse_config
from tests.conftest import write

NODES = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
  - name: gpu-1
    labels: {nvidia.com/gpu.present: "true", gpu: a100}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {nvidia.com/gpu: "8"}
  - name: cpu-1
    labels: {kubernetes.io/hostname: cpu-1}
"""


def pod(spec: str, name: str = "p", labels: str = "{}") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ml, labels: {labels}}}\n"
        f"spec:\n{spec}"
    )


GPU_CONTAINER = """  containers:
    - name: c
      image: x
      resources: {limits: {nvidia.com/gpu: 1}}
"""


def findings(root: Path, rule: str, **config: object) -> list[Finding]:
    parsed = parse_config({"matrix": None, **config}, "c.yaml")
    return [f for f in check(root, parsed).findings if f.rule == rule]


# kubernetes pkg/apis/core/helper IsExtendedResourceName / IsNativeResource
@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/mig-1g.5gb", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/foo", False),
        ("example.kubernetes.io/foo", False),
        ("requests.nvidia.com/gpu", False),
    ],
)
def test_extended_resource_names(name: str, extended: bool) -> None:
    assert is_extended_resource(name) is extended


def test_extended_resource_toleration_lets_a_gpu_pod_land(tmp_path: Path) -> None:
    """plugin/pkg/admission/extendedresourcetoleration Admit: key = the resource, Exists,
    NoSchedule; without the plugin the taint keeps the pod off and GPU010 names the plugin."""
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", pod("  nodeSelector: {gpu: a100}\n" + GPU_CONTAINER))
    (without,) = findings(tmp_path, "GPU010")
    assert "untolerated taint nvidia.com/gpu=present:NoSchedule on gpu-1" in without.message
    assert "ExtendedResourceToleration admission plugin (GKE, EKS)" in without.message
    assert "cluster.admission: [ExtendedResourceToleration]" in without.hint
    assert not findings(tmp_path, "GPU010", cluster={"admission": ["ExtendedResourceToleration"]})


def test_extended_resource_toleration_does_not_cover_no_execute(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODES.replace("effect: NoSchedule", "effect: NoExecute"))
    write(tmp_path, "pod.yaml", pod("  nodeSelector: {gpu: a100}\n" + GPU_CONTAINER))
    config = {"cluster": {"admission": ["ExtendedResourceToleration"]}}
    (finding,) = findings(tmp_path, "GPU010", **config)
    assert "tolerates nvidia.com/gpu with effect NoSchedule only, not NoExecute" in finding.message


def test_a_taint_on_the_gpu_nodes_is_the_cause_not_the_request(tmp_path: Path) -> None:
    """The GPU nodes are tainted, the untainted node has no GPU: tolerate, never 'request
    fewer GPUs'."""
    write(
        tmp_path,
        "nodes.yaml",
        NODES.replace(
            "labels: {kubernetes.io/hostname: cpu-1}",
            'labels: {kubernetes.io/hostname: cpu-1}\n    capacity: {nvidia.com/gpu: "0"}',
        ),
    )
    write(tmp_path, "pod.yaml", pod(GPU_CONTAINER))
    (finding,) = findings(tmp_path, "GPU010")
    assert "Request fewer" not in finding.hint
    assert finding.hint.startswith("Tolerate the taint")


def test_unknown_config_admission_plugin_is_a_usage_error() -> None:
    with pytest.raises(Exception, match="ExtendedResourceToleration"):
        parse_config({"cluster": {"admission": ["PodNodeSelector"]}}, "c.yaml")


RUNTIME_CLASS = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
"""


def test_nvidia_runtime_class_without_gpu_request_on_a_cpu_node(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "rc.yaml", RUNTIME_CLASS)
    write(
        tmp_path,
        "pod.yaml",
        pod("  runtimeClassName: nvidia\n  containers: [{name: c, image: x}]\n"),
    )
    (finding,) = findings(tmp_path, "GPU017")
    assert finding.severity is Severity.ERROR  # only cpu-1 is left: the taint keeps gpu-1 out
    assert (finding.location.file, finding.location.line) == ("pod.yaml", 5)
    assert 'no runtime for "nvidia" is configured' in finding.message


def test_runtime_class_scheduling_keeps_its_pods_on_gpu_nodes(tmp_path: Path) -> None:
    """plugin/pkg/admission/runtimeclass setScheduling: nodeSelector merged, tolerations added."""
    write(tmp_path, "nodes.yaml", NODES)
    write(
        tmp_path,
        "rc.yaml",
        RUNTIME_CLASS
        + "scheduling:\n  nodeSelector: {gpu: a100}\n"
        + "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n",
    )
    write(
        tmp_path,
        "pod.yaml",
        pod("  runtimeClassName: nvidia\n  containers: [{name: c, image: x}]\n"),
    )
    assert not findings(tmp_path, "GPU017")
    assert not findings(tmp_path, "GPU010")


def test_a_gpu_pod_with_the_runtime_class_is_not_gpu017(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", pod("  runtimeClassName: nvidia\n" + GPU_CONTAINER))
    assert not findings(tmp_path, "GPU017")


KUEUE = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {gpu: a100}
  nodeTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: {}  # every namespace (unset selects none: kueue ClusterQueueSpec)
  resourceGroups:
    - coveredResources: [cpu, nvidia.com/gpu]
      flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec: {clusterQueue: gpus}
"""


def test_kueue_injects_the_flavor(tmp_path: Path) -> None:
    """kueue pkg/podset/podset.go Merge: the flavor's nodeLabels and tolerations."""
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", pod(GPU_CONTAINER, labels="{kueue.x-k8s.io/queue-name: team}"))
    assert findings(tmp_path, "GPU012")  # no flavor in the repo: nothing is injected
    write(tmp_path, "kueue.yaml", KUEUE)
    assert not findings(tmp_path, "GPU010") and not findings(tmp_path, "GPU012")


def test_kueue_flavor_that_no_node_has(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODES)
    write(
        tmp_path, "kueue.yaml", KUEUE.replace("nodeLabels: {gpu: a100}", "nodeLabels: {gpu: h100}")
    )
    text = pod(GPU_CONTAINER, labels="{kueue.x-k8s.io/queue-name: team}")
    write(tmp_path, "pod.yaml", text)
    (finding,) = findings(tmp_path, "GPU010")
    assert "set outside the pod template: Kueue ResourceFlavor a100" in finding.message
    assert finding.location.line == 3  # the queue-name label
