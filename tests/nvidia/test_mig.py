"""MIG: mig-parted configs (NVIDIA/mig-parted api/spec/v1), the resources the device plugin
advertises per strategy (NVIDIA/k8s-device-plugin internal/rm/rm.go: "mig-" + profile with "+"
replaced by "."), and GPU034 on a small repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.nvidia.mig import advertised_mig, mig_configs, profile_memory_gb
from tests.conftest import write
from tests.rules.test_placement_rules import found


def test_mig_configs() -> None:
    data = {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "all-1g.5gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}],
            "balanced": [{"device-filter": ["0x20B010DE"], "devices": "all", "mig-enabled": True}],
        },
    }
    assert mig_configs(data) == (
        {"all-disabled": None, "all-1g.5gb": {"1g.5gb": 7}, "balanced": {}},
        None,
    )
    assert mig_configs({"version": "v1"}) == ({}, "the mig-parted config has no mig-configs")


@pytest.mark.parametrize(
    ("devices", "strategy", "expected"),
    [
        ({"1g.5gb": 7}, "mixed", {"nvidia.com/mig-1g.5gb": 56}),
        ({"1g.5gb+me": 1}, "mixed", {"nvidia.com/mig-1g.5gb.me": 8}),
        ({"1g.5gb": 7}, "single", {"nvidia.com/gpu": 56}),
        ({"1g.5gb": 7}, "none", {}),
        (None, "mixed", {"nvidia.com/gpu": 8}),  # MIG disabled: whole GPUs
    ],
)
def test_advertised(devices: dict | None, strategy: str, expected: dict) -> None:
    assert advertised_mig(devices, strategy, 8) == expected


def test_profile_memory() -> None:
    assert profile_memory_gb("3g.40gb") == 40 and profile_memory_gb("1g.5gb+me") == 5
    assert profile_memory_gb("weird") is None


REPO = """\
apiVersion: v1
kind: Node
metadata:
  name: a100
  labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-2g.10gb,
    nvidia.com/gpu.count: "8", nvidia.com/gpu.memory: "40960"}
---
apiVersion: v1
kind: Node
metadata:
  name: h100
  labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-7g.140gb,
    nvidia.com/gpu.count: "8", nvidia.com/gpu.memory: "81559"}
---
apiVersion: v1
kind: Node
metadata:
  name: h100b
  labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-7g.141gb,
    nvidia.com/gpu.count: "8", nvidia.com/gpu.memory: "81559"}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/mig-2g.10gb: 1}}
"""


def test_gpu034(tmp_path: Path) -> None:
    write(tmp_path, "all.yaml", REPO)
    messages = [f.message for f in found(tmp_path, "GPU034")]
    assert len(messages) == 3
    assert "all-7g.140gb" in messages[0] and "does not have" in messages[0]
    assert "7g.141gb device(s) need more memory than its GPU has" in messages[1]
    assert "with mig.strategy single the device plugin advertises MIG devices as" in messages[2]


def test_mixed_strategy_places_mig_requests(tmp_path: Path) -> None:
    """With mixed, the MIG config decides what a node without allocatable offers: 2g.10gb, 3 per
    GPU × 8 on a100, none on h100b (all-7g.141gb); h100's unknown config is left out."""
    policy = (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        "spec:\n  mig: {strategy: mixed}\n---\n"
    )
    docs = [d for d in REPO.split("---\n") if "name: h100\n" not in d]
    text = "---\n".join(docs).replace("mig-2g.10gb: 1", "mig-2g.10gb: 25")
    write(tmp_path, "all.yaml", policy + text)
    [f] = found(tmp_path, "GPU010")
    assert (
        "each pod requests 25 nvidia.com/mig-2g.10gb; the most any node offers is 24 (on a100)"
        in (f.message)
    )
    assert [g.message for g in found(tmp_path, "GPU034") if "strategy" in g.message] == []


CUSTOM_MIG = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-1g.10gb}
---
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec:
  migManager:
    config:
      name: custom-mig
---
apiVersion: v1
kind: ConfigMap
metadata: {name: custom-mig, namespace: gpu-operator}
data:
  KEY: |
    version: v1
    mig-configs:
      all-1g.10gb:
      - devices: all
        mig-enabled: true
        mig-devices: {1g.10gb: 7}
"""


def test_gpu034_a_custom_config_under_another_key(tmp_path: Path) -> None:
    """The mig-manager reads `-config-file=/mig-parted-config/config.yaml` (gpu-operator's
    mig-manager DaemonSet, the custom ConfigMap mounted at /mig-parted-config): a config under
    another key is never read. It was said to be "not a YAML mapping", with a fix about config
    names; now the key, and the fix that puts it there."""
    write(tmp_path, "all.yaml", CUSTOM_MIG.replace("KEY", "mig.yaml"))
    [f] = found(tmp_path, "GPU034")
    assert "it has no key config.yaml" in f.message
    assert f.hint is not None and "under the key config.yaml" in f.hint
    assert (f.location.line, f.location.column) == (CUSTOM_MIG.splitlines().index("data:") + 1, 1)
    write(tmp_path, "all.yaml", CUSTOM_MIG.replace("KEY", "config.yaml"))
    assert found(tmp_path, "GPU034") == []
