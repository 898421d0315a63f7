"""Issue 17 meets the workload-kinds table (issue 18): the pod templates of custom resources are
sized, validated and share the nodes' capacity like core pods.

- A RayCluster worker group's requests are its containers' (component-helpers ``PodRequests``),
  so two groups of one cluster compete for the same GPUs, each named with its role.
- An extended resource written as a fraction in a custom template is rejected by the API server
  when the operator creates the pods (core validation ``validateResourceRequirements``): GPU040 at
  the key, and the template is placed nowhere.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write
from tests.rules.test_placement_rules import found

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {nvidia.com/gpu.present: "true"}
status:
  allocatable: {nvidia.com/gpu: "8", cpu: "64", memory: 512Gi, pods: "110"}
"""


def raycluster(a: int, b: int, gpus: str = "4") -> str:
    group = """\
    - groupName: {name}
      replicas: {replicas}
      rayStartParams: {{}}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray-ml:2.9.0
              resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""
    return (
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: llm, namespace: ml}\n"
        "spec:\n  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n"
        "        containers: [{name: ray-head, image: rayproject/ray:2.9.0}]\n"
        "  workerGroupSpecs:\n"
        + group.format(name="big", replicas=a, gpus=gpus)
        + group.format(name="small", replicas=b, gpus=gpus)
    )


def test_worker_groups_of_one_raycluster_share_the_node(tmp_path: Path):
    # 2 × 4 GPUs of the first group fill the 8-GPU node: the second group's pod stays Pending
    write(tmp_path, "all.yaml", NODE + "---\n" + raycluster(2, 1))
    [f] = found(tmp_path, "GPU010")
    assert f.message.startswith(
        "RayCluster ml/llm worker group small: 1 of 1 pods stay Pending "
        "(RayCluster/ml/llm worker group small#0), the nodes they may use being full: "
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    ), f.message


def test_worker_groups_that_fit_together_give_no_finding(tmp_path: Path):
    write(tmp_path, "all.yaml", NODE + "---\n" + raycluster(1, 1))
    assert found(tmp_path, "GPU010") == []


def test_a_fractional_gpu_in_a_custom_template_is_refused_at_its_key(tmp_path: Path):
    text = NODE + "---\n" + raycluster(1, 0, gpus='"0.5"')
    write(tmp_path, "all.yaml", text)
    invalid = [f for f in found(tmp_path, "GPU040") if "nvidia.com/gpu" in f.message]
    assert invalid, found(tmp_path, "GPU040")
    line = text.splitlines()[invalid[0].location.line - 1]
    assert "nvidia.com/gpu" in line and "0.5" in line
    assert "must be an integer" in invalid[0].message
    # the API server refuses the pods: the template is not placed, so no GPU010 about it
    assert found(tmp_path, "GPU010") == []
