"""GPU033 on one repo that holds every case (REPO below): a refused config, a
node naming a missing key, a -SHARED product selector, and requests of more than one shared GPU
(NVIDIA/k8s-device-plugin replicas.go, cmd/config-manager updateConfigName, internal/lm
getProductName, internal/rm ValidateRequest)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


NO_KEYS = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {nvidia.com/gpu.present: "true", nvidia.com/device-plugin.config: a100}
status:
  allocatable: {nvidia.com/gpu: "8", pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  labels: {nvidia.com/gpu.present: "true"}
---
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec:
  devicePlugin:
    config:
      name: time-slicing
      default: any
---
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing, namespace: gpu-operator}
data: {}
"""


def test_a_config_map_without_keys_asks_for_one(tmp_path: Path) -> None:
    """A ConfigMap with no key: "set ... to one of none" could not be done, and the default's
    finding quoted another error than the config manager's (cmd/config-manager: "no
    configuration files available" when the folder holds no file)."""
    write(tmp_path, "all.yaml", NO_KEYS)
    findings = found(tmp_path, "GPU033")
    assert len(findings) == 2
    for f in findings:
        assert f.hint is not None and "one of none" not in f.hint
        assert "add a config key to ConfigMap time-slicing" in f.hint
        assert '("no configuration files available")' in f.message


def test_each_refused_config_gets_the_fix_of_its_error(tmp_path: Path) -> None:
    """The device plugin's error decides the fix (nvidia/device_plugin.py
    `parse_sharing_config`): a wrong version is not fixed by a `resources:` list."""
    configs = {
        "v2": "version: v2\n",
        "list": "- a\n",
        "flat": "version: v1\nsharing: time-slicing\n",
        "one": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - {name: nvidia.com/gpu, replicas: 1}\n",
    }
    data = "".join(
        f"  {key}: |\n" + "".join(f"    {line}\n" for line in text.splitlines())
        for key, text in configs.items()
    )
    text = NO_KEYS.replace("data: {}\n", "data:\n" + data)
    write(tmp_path, "all.yaml", text)
    hints = {f.message.split(" ")[2]: f.hint for f in found(tmp_path, "GPU033")}
    assert hints["v2"] == "Set `version: v1`, the only version the device plugin reads."
    assert hints["list"] is not None and hints["list"].startswith(
        "Write the config as a YAML mapping"
    )
    assert hints["flat"] is not None and hints["flat"].startswith("Write `sharing:` as a mapping")
    assert hints["one"] is not None and "N >= 2" in hints["one"]


def sharing_repo(data: str, default: str = "", pods: str = "") -> str:
    """A ClusterPolicy naming ConfigMap dp, the ConfigMap with `data`, one GPU node, `pods`."""
    config = f"{{name: dp, default: {default}}}" if default else "{name: dp}"
    return (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        f"spec:\n  devicePlugin:\n    config: {config}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp, namespace: gpu-operator}\n"
        f"{data}---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-0\n"
        '  labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu.product: Tesla-T4}\n' + pods
    )


def test_an_empty_config_map_fails_nodes_that_ask_for_no_config(tmp_path: Path) -> None:
    """cmd/config-manager updateConfigName: "no configuration files available" is returned
    before the label, the default and the fallbacks are looked at."""
    text = sharing_repo("data: {}\n")
    write(tmp_path, "all.yaml", text)
    [f] = found(tmp_path, "GPU033")
    assert (f.location.line, f.location.column) == (text.splitlines().index("data: {}") + 1, 1)
    assert f.severity == Severity.ERROR
    assert '("no configuration files available")' in f.message and "(gpu-0: no " in f.message
    assert f.hint == (
        "Add a config key to ConfigMap dp (e.g. `any: |` with `version: v1`), or unset "
        "devicePlugin.config.name to share no GPU."
    )
    # one key and no default: FALLBACK_STRATEGIES=empty, the node shares nothing, no finding
    write(tmp_path, "all.yaml", sharing_repo("data:\n  a: 'version: v1'\n"))
    assert found(tmp_path, "GPU033") == []


def config_map(**configs: str) -> str:
    return "data:\n" + "".join(
        f"  {key}: |\n" + "".join(f"    {line}\n" for line in text.splitlines())
        for key, text in configs.items()
    )


TS = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: NAME, replicas: 4EXTRA}\n"


@pytest.mark.parametrize(
    ("config", "error", "hint"),
    [
        # replicas.go ReplicatedDevices.UnmarshalJSON
        (
            TS.replace("NAME", "nvidia.com/gpu").replace("EXTRA", ", devices: some"),
            "sharing.timeSlicing: devices set as 'some' but the only valid string input is 'all'",
            "Remove `devices:` or write `devices: all`: the device plugin shares every device (a "
            "count or a list of devices is read, then ignored).",
        ),
        # config.go parseConfigFrom decodes mps and timeSlicing both
        (
            "version: v1\nsharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 4}\n"
            "  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 1}\n",
            "sharing.timeSlicing: number of replicas must be >= 2 (the plugin reads this section "
            "too, although mps applies)",
            "Remove the timeSlicing section (mps is the one that applies), or: A sharing config "
            "needs `resources: [{name: nvidia.com/gpu, replicas: N}]`, N >= 2.",
        ),
        # resources.go NewResourceName
        (
            TS.replace("NAME", "My_GPU").replace("EXTRA", ""),
            "sharing.timeSlicing: incorrect format for resource name 'nvidia.com/My_GPU'",
            "Name the resource to share as the plugin advertises it, e.g. `nvidia.com/gpu`.",
        ),
    ],
)
def test_refused_configs_at_their_key(tmp_path: Path, config: str, error: str, hint: str) -> None:
    text = sharing_repo(config_map(cfg=config), default="cfg")
    write(tmp_path, "all.yaml", text)
    [f] = found(tmp_path, "GPU033")
    assert (f.location.line, f.location.column) == (text.splitlines().index("  cfg: |") + 1, 3)
    assert f.message.startswith(f"device-plugin config cfg of ConfigMap dp is refused: {error}")
    assert f.message.endswith("(1 node(s) select it: gpu-0)")
    assert f.hint == hint


def deployment(name: str, limits: str) -> str:
    return (
        f"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: ml}}\n"
        f"spec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
        f"    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n"
        f"      - name: c\n        image: busybox\n        resources:\n"
        f"          limits: {{{limits}}}\n"
    )


def test_renamed_requests_are_read_under_the_shared_name(tmp_path: Path) -> None:
    """internal/rm/rm.go ValidateRequest runs in the plugin serving nvidia.com/gpu.shared: a
    pod asking for 2 of it is refused; one asking for nvidia.com/gpu asks for no replica."""
    config = TS.replace("NAME", "nvidia.com/gpu").replace("EXTRA", "")
    config = config.replace("  timeSlicing:\n", "  timeSlicing:\n    renameByDefault: true\n")
    config = config.replace(
        "    resources:", "    failRequestsGreaterThanOne: true\n    resources:"
    )
    pods = deployment("shared2", "nvidia.com/gpu.shared: 2") + deployment(
        "plain2", "nvidia.com/gpu: 2"
    )
    text = sharing_repo(config_map(cfg=config), default="cfg", pods=pods)
    write(tmp_path, "all.yaml", text)
    [f] = found(tmp_path, "GPU033")
    assert f.severity == Severity.ERROR
    assert f.message.startswith(
        "Deployment ml/shared2 requests 2 nvidia.com/gpu.shared per pod on shared GPUs (gpu-0)"
    )
    assert '("maximum request size for shared resources is 1; found 2")' in f.message
    line = text.splitlines().index("          limits: {nvidia.com/gpu.shared: 2}") + 1
    assert (f.location.line, f.location.column) == (line, 20)


def test_a_short_resource_name_shares_nvidia_com_gpu(tmp_path: Path) -> None:
    """resources.go NewResourceName: `name: gpu` is nvidia.com/gpu, so MPS refuses 2 of it and
    GFD writes the -SHARED product, as with the full name."""
    mps = "version: v1\nsharing:\n  mps:\n    resources:\n    - {name: NAME, replicas: 4}\n"
    pods = deployment("infer", "nvidia.com/gpu: 2")
    got = []
    for name in ("gpu", "nvidia.com/gpu"):
        text = sharing_repo(config_map(cfg=mps.replace("NAME", name)), "cfg", pods)
        write(tmp_path, "all.yaml", text)
        got.append([(f.severity, f.message) for f in found(tmp_path, "GPU033")])
    assert got[0] == got[1]
    assert [s for s, _ in got[0]] == [Severity.ERROR]
    assert "requests 2 nvidia.com/gpu per pod on shared GPUs (gpu-0)" in got[0][0][1]
