"""Workloads: the pod template of each kind, its images, GPU request and replica count."""

from __future__ import annotations

import pytest

from tests.model.conftest import read

TEMPLATE = """\
    metadata:
      labels: {app: x}
    spec:
      initContainers:
      - name: init
        image: nvidia/cuda:12.4.1-base-ubuntu22.04
        resources: {limits: {nvidia.com/gpu: 3}}
      containers:
      - name: a
        image: nvcr.io/nvidia/pytorch:24.07-py3
        resources: {limits: {nvidia.com/gpu: 1}}
      - name: b
        image: busybox
        resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
"""


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line if line.strip() else line for line in text.splitlines(True))


@pytest.mark.parametrize(
    ("kind", "api", "head", "depth", "spec_path", "replicas"),
    [
        (
            "Deployment",
            "apps/v1",
            "spec:\n  replicas: 3\n  template:\n",
            2,
            ("spec", "template", "spec"),
            3,
        ),
        ("ReplicaSet", "apps/v1", "spec:\n  template:\n", 2, ("spec", "template", "spec"), 1),
        (
            "StatefulSet",
            "apps/v1",
            "spec:\n  replicas: 2\n  template:\n",
            2,
            ("spec", "template", "spec"),
            2,
        ),
        ("DaemonSet", "apps/v1", "spec:\n  template:\n", 2, ("spec", "template", "spec"), None),
        ("ReplicationController", "v1", "spec:\n  template:\n", 2, ("spec", "template", "spec"), 1),
        (
            "Job",
            "batch/v1",
            "spec:\n  parallelism: 4\n  template:\n",
            2,
            ("spec", "template", "spec"),
            4,
        ),
        (
            "CronJob",
            "batch/v1",
            "spec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n",
            6,
            ("spec", "jobTemplate", "spec", "template", "spec"),
            None,
        ),
    ],
)
def test_pod_template_of_each_kind(kind, api, head, depth, spec_path, replicas) -> None:
    text = f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w, namespace: ml}}\n" + head
    text += _indent(TEMPLATE, depth - 2)
    _, [workload], findings = read(text)
    assert findings == []
    assert (workload.key, workload.spec_path, workload.replicas) == (
        f"{kind}/ml/w",
        spec_path,
        replicas,
    )
    assert workload.pod_labels == {"app": "x"}
    assert [(c.name, c.image, c.init, c.gpus) for c in workload.containers] == [
        ("init", "nvidia/cuda:12.4.1-base-ubuntu22.04", True, 3),
        ("a", "nvcr.io/nvidia/pytorch:24.07-py3", False, 1),
        ("b", "busybox", False, 1),
    ]
    # the scheduler's effective request: max(sum of containers, largest init container)
    assert workload.gpus == 3
    assert workload.gpu_request_path() == (
        *spec_path,
        "initContainers",
        0,
        "resources",
        "limits",
        "nvidia.com/gpu",
    )


def test_a_pod_and_what_is_not_a_workload() -> None:
    _, workloads, _ = read(
        """
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          nodeName: n1
          preemptionPolicy: Never
          containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]
        ---
        apiVersion: example.com/v1
        kind: Deployment
        metadata: {name: custom}
        spec: {template: {spec: {}}}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: s}
        """
    )
    [pod] = workloads
    assert (pod.key, pod.replicas, pod.gpus, pod.node_name, pod.preemption_policy) == (
        "Pod/default/p",
        1,
        2,
        "n1",
        "Never",
    )
    assert pod.has_pods and not pod.api_rejects


@pytest.mark.parametrize(
    ("body", "rejects"),
    [
        ("  replicas: 0\n  template: {spec: {}}\n", False),
        ("  replicas: two\n  template: {spec: {}}\n", True),
        ("  template: {spec: {containers: {name: c}}}\n", True),
        (
            "  template: {spec: {containers: [{name: c, resources: {limits: "
            "{nvidia.com/gpu: 0.5}}}]}}\n",
            True,
        ),
        ("  template: {spec: {tolerations: [{key: '', operator: Equal}]}}\n", True),
        # accepted by the API server; the dead term is the scheduler's business (GPU010)
        (
            "  template: {spec: {affinity: {nodeAffinity: "
            "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{}]}}}}}\n",
            False,
        ),
    ],
)
def test_which_objects_have_pods(body: str, rejects: bool) -> None:
    _, [workload], _ = read(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n" + body
    )
    assert workload.api_rejects is rejects
    assert workload.has_pods is (not rejects and workload.replicas != 0)
