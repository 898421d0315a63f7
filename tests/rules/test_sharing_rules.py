"""GPU033 on one repo that holds every case (REPO below): a refused config, a
node naming a missing key, a -SHARED product selector, and requests of more than one shared GPU
(NVIDIA/k8s-device-plugin replicas.go, cmd/config-manager updateConfigName, internal/lm
getProductName, internal/rm ValidateRequest)."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.core.finding import Severity
from tests.conftest import write
from tests.rules.test_placement_rules import found

REPO = """\
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec:
  devicePlugin:
    config: {name: time-slicing-config, default: any}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config, namespace: gpu-operator}
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
  broken: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 1
  mps: |-
    version: v1
    sharing:
      mps:
        resources:
        - name: nvidia.com/gpu
          replicas: 2
---
apiVersion: v1
kind: Node
metadata:
  name: a
  labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu.product: Tesla-T4}
---
apiVersion: v1
kind: Node
metadata:
  name: b
  labels: {nvidia.com/gpu.present: "true", nvidia.com/device-plugin.config: typo}
---
apiVersion: v1
kind: Node
metadata:
  name: c
  labels: {nvidia.com/gpu.present: "true", nvidia.com/device-plugin.config: broken}
---
apiVersion: v1
kind: Node
metadata:
  name: d
  labels: {nvidia.com/gpu.present: "true", nvidia.com/device-plugin.config: mps}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  nodeSelector: {nvidia.com/gpu.product: Tesla-T4}
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: 2}}
---
apiVersion: v1
kind: Pod
metadata: {name: q, namespace: ml}
spec:
  nodeName: d
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: 2}}
"""


def test_every_sharing_case(tmp_path: Path) -> None:
    write(tmp_path, "all.yaml", REPO)
    got = [(f.location.line, f.severity, f.message) for f in found(tmp_path, "GPU033")]
    assert [(line, severity) for line, severity, _ in got] == [
        (19, Severity.ERROR),  # data.broken: replicas 1
        (44, Severity.ERROR),  # node b: nvidia.com/device-plugin.config: typo
        (62, Severity.WARNING),  # nodeSelector nvidia.com/gpu.product: Tesla-T4
        (66, Severity.WARNING),  # 2 time-sliced GPUs
        (76, Severity.ERROR),  # 2 MPS GPUs
    ]
    messages = [m for _, _, m in got]
    assert (
        "number of replicas must be >= 2" in messages[0]
        and "(1 node(s) select it: c)" in messages[0]
    )
    assert '"specified config typo does not exist"' in messages[1]
    assert "Tesla-T4-SHARED" in messages[2]
    assert "maximum request size for shared resources is 1; found 2" in messages[4]


def test_missing_config_map_and_default(tmp_path: Path) -> None:
    policy = (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        "spec:\n  devicePlugin:\n    config: {name: nowhere, default: any}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n"
        '  labels: {nvidia.com/gpu.present: "true"}\n'
    )
    write(tmp_path, "all.yaml", policy)
    [f] = found(tmp_path, "GPU033")
    assert f.severity == Severity.WARNING and 'configmap "nowhere" not found' in f.message
    write(
        tmp_path,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nowhere}\n"
        "data:\n  other: 'version: v1'\n",
    )
    [f] = found(tmp_path, "GPU033")
    assert f.message.startswith("devicePlugin.config.default is any, which ConfigMap nowhere")
    assert '"specified config  does not exist"' in f.message  # upstream prints the empty label


def test_no_device_plugin_config_no_findings(tmp_path: Path) -> None:
    write(
        tmp_path,
        "n.yaml",
        "apiVersion: v1\nkind: Node\n"
        "metadata: {name: a, labels: {nvidia.com/device-plugin.config: x}}\n",
    )
    assert found(tmp_path, "GPU033") == []


def test_gpu033_names_five_config_keys_and_counts_the_rest(tmp_path: Path) -> None:
    """A ConfigMap of seven keys and a node naming none of them: the message and the hint name
    five keys and count two, and both end as always (GPU033 `_node_findings`)."""
    config = "    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
    config += "        - name: nvidia.com/gpu\n          replicas: 4\n"
    data = "".join(f"  k{i}: |-\n{config}" for i in range(7))
    write(
        tmp_path,
        "all.yaml",
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        "spec:\n  devicePlugin:\n    config: {name: ts, default: k0}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ts, namespace: gpu-operator}\n"
        f"data:\n{data}---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n"
        '  labels: {nvidia.com/gpu.present: "true", nvidia.com/device-plugin.config: typo}\n',
    )
    [f] = found(tmp_path, "GPU033")
    assert "does not have (keys: k0, k1, k2, k3, k4 and 2 more): the config manager" in f.message
    assert f.message.endswith("so its GPUs are not advertised")
    assert f.hint == (
        "Set nvidia.com/device-plugin.config to one of k0, k1, k2, k3, k4 and 2 more, or add "
        "the key to the ConfigMap."
    )
