"""A node's quantities as the API server and the kubelet write them (docs/inventory.md).

- the kubelet's device manager writes a device count as `resource.NewQuantity(n, DecimalSI)`
  (kubernetes pkg/kubelet/cm/devicemanager `GetCapacity`): 2000 time-sliced replicas are `2k`;
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_main, write

_TIME_SLICED = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-ts-1
    labels: {nvidia.com/gpu.present: "true"}
  status:
    capacity: {cpu: "96", nvidia.com/gpu: 2k}
    allocatable: {cpu: "95", nvidia.com/gpu: 2k}
"""

_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: infer, namespace: default}}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      limits: {{nvidia.com/gpu: "{gpus}"}}
"""


def _findings(root: Path) -> list[tuple]:
    result = run_main("check", str(root), "--no-cache", "--matrix", "none", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return [
        (
            f["rule"],
            f["location"]["file"],
            f["location"]["line"],
            f["location"]["column"],
            f["message"],
        )
        for f in json.loads(result.stdout)["findings"]
        if f["rule"] not in ("GPU002", "GPU011")  # no driver labels, no CUDA image: not here
    ]


def test_a_decimal_si_gpu_count_is_the_count_it_says(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", _TIME_SLICED)
    write(tmp_path, "pod.yaml", _POD.format(gpus=1))
    assert _findings(tmp_path) == []  # no GPU012: the node offers 2000 GPUs
    write(tmp_path, "pod.yaml", _POD.format(gpus=2001))
    [(rule, file, line, column, message)] = _findings(tmp_path)
    assert (rule, file, line, column) == ("GPU010", "pod.yaml", 9, 16)
    assert message.endswith(
        "each pod requests 2001 nvidia.com/gpu; the most any node offers is 2000 (on gpu-ts-1)."
    )
