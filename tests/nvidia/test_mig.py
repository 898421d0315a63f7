"""MIG: mig-parted configs (NVIDIA/mig-parted api/spec/v1), the resources the device plugin
advertises per strategy (NVIDIA/k8s-device-plugin internal/rm/rm.go: "mig-" + profile with "+"
replaced by "."), and GPU034 on a small repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.nvidia.mig import (
    MigEntry,
    advertised_mig,
    gpu_layout,
    mig_configs,
    profile_memory_gb,
    single_strategy_error,
)
from tests.conftest import write
from tests.rules.test_placement_rules import found

ALL = MigEntry(None, False, {"1g.5gb": 7})


def test_mig_configs() -> None:
    data = {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "all-1g.5gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}],
            "balanced": [
                {
                    "device-filter": ["0x20B010DE"],
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": {"1g.5gb": 2},
                }
            ],
            "half": [
                {"devices": [0, 1], "mig-enabled": False},
                {"devices": [2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
            ],
        },
    }
    assert mig_configs(data) == (
        {
            "all-disabled": (MigEntry(None, False, None),),
            "all-1g.5gb": (ALL,),
            "balanced": (MigEntry(None, True, {"1g.5gb": 2}),),
            "half": (MigEntry((0, 1), False, None), MigEntry((2, 3), False, {"3g.40gb": 2})),
        },
        None,
    )
    assert mig_configs({"version": "v1"}) == ({}, "the mig-parted config has no mig-configs")


def entry(**fields: object) -> dict:
    return {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}, **fields}


def spec(*entries: dict, **top: object) -> dict:
    return {"version": "v1", "mig-configs": {"c": list(entries)}, **top}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        # mig-parted api/spec/v1/spec.go Spec.UnmarshalJSON
        ({"mig-configs": {"c": [entry()]}}, "unable to parse with missing 'version' field"),
        ({"version": "v2", "mig-configs": {}}, "unknown version: v2"),
        ({}, "unknown version: "),
        (spec(entry(), flags={}), "unexpected field: flags"),
        ({"version": "v1", "mig-configs": {}}, "at least one entry in 'mig-configs' is required"),
        ({"version": "v1", "mig-configs": {"c": []}}, "at least one entry in 'c' is required"),
        # MigConfigSpec.UnmarshalJSON
        (spec({"mig-enabled": False}), "mig-configs.c[0]: missing required field: devices"),
        (spec({"devices": "all"}), "mig-configs.c[0]: missing required field: mig-enabled"),
        (spec(entry(gpus=1)), "mig-configs.c[0]: unexpected field: gpus"),
        (spec(entry(devices="some")), "mig-configs.c[0]: invalid string input for 'devices': some"),
        (
            spec({"devices": "all", "mig-enabled": True}),
            "mig-configs.c[0]: missing required field 'mig-devices' when 'mig-enabled' is true",
        ),
        (
            spec(entry(**{"mig-enabled": False})),
            "mig-configs.c[0]: MIG devices included when 'mig-enabled' is false",
        ),
        # types.MigConfig.AssertValidFormat
        (
            spec(entry(**{"mig-devices": {"1g.5gb": 0}})),
            "mig-configs.c[0]: error validating values in 'mig-devices' field: all counts for all "
            "MigProfiles are 0",
        ),
    ],
)
def test_configs_mig_parted_refuses(data: dict, error: str) -> None:
    assert mig_configs(data) == ({}, error)


def test_mig_devices_null_is_an_empty_map() -> None:
    """`mig-devices: null` is present (json.Unmarshal leaves the made map): MIG on, no device."""
    assert mig_configs(spec(entry(**{"mig-devices": None}))) == (
        {"c": (MigEntry(None, False, {}),)},
        None,
    )


OFF = MigEntry(None, False, None)


@pytest.mark.parametrize(
    ("config", "gpus", "layout"),
    [
        # mig-parted assert WalkSelectedMigConfigForEachGPU, helpers.go MatchesDevices
        ((ALL,), 2, [{"1g.5gb": 7}, {"1g.5gb": 7}]),
        (
            (MigEntry((0,), False, None), MigEntry((1,), False, {"3g.40gb": 2})),
            2,
            [None, {"3g.40gb": 2}],
        ),
        ((ALL, MigEntry((1,), False, None)), 2, [{"1g.5gb": 7}, None]),  # the last entry wins
        ((MigEntry((0, 9), False, None),), 1, [None]),  # an index past the GPUs: no match
        ((MigEntry((0,), False, None),), 2, None),  # GPU 1 kept as it was: unknown
        ((MigEntry(None, True, None),), 2, None),  # device-filter: by model, unknown
    ],
)
def test_gpu_layout(config: tuple, gpus: int, layout: list | None) -> None:
    assert gpu_layout(config, gpus) == layout


G = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("layout", "strategy", "expected"),
    [
        # k8s-device-plugin internal/rm/device_map.go buildGPUDeviceMap, buildMigDeviceMap
        ([{"1g.5gb": 7}] * 8, "mixed", {"nvidia.com/mig-1g.5gb": 56}),
        ([{"1g.5gb+me": 1}] * 8, "mixed", {"nvidia.com/mig-1g.5gb.me": 8}),
        ([{"1g.5gb": 7}] * 8, "single", {G: 56}),
        ([{"1g.5gb": 7}] * 8, "none", {G: 8}),  # none: every GPU whole, MIG or not
        ([None] * 8, "mixed", {G: 8}),  # MIG disabled: whole GPUs
        ([None] * 8, "single", {G: 8}),
        ([None] * 4 + [{"3g.40gb": 2}] * 4, "mixed", {G: 4, "nvidia.com/mig-3g.40gb": 8}),
        ([{}, {"1g.5gb": 7}], "mixed", {"nvidia.com/mig-1g.5gb": 7}),  # empty GPU: a warning
        # buildDeviceMapFromConfigResources under single: the plugin refuses, advertises none
        ([None] * 4 + [{"3g.40gb": 2}] * 4, "single", {G: 0}),
        ([{"1g.10gb": 2, "2g.20gb": 1}] * 8, "single", {G: 0}),
        ([{}, {"1g.5gb": 7}], "single", {G: 0}),
    ],
)
def test_advertised(layout: list, strategy: str, expected: dict) -> None:
    assert advertised_mig(layout, strategy) == expected


@pytest.mark.parametrize(
    ("layout", "error"),
    [
        # device_map.go assertAllMigDevicesAreValid, buildDeviceMapFromConfigResources
        ([{"1g.5gb": 7}, {"1g.5gb": 7}], None),
        ([None, None], None),
        ([{"1g.5gb": 7}, {}], "device 1 has no MIG devices configured"),
        ([{"1g.10gb": 2, "2g.20gb": 1}], "more than one MIG device type present on node"),
        ([{"1g.10gb": 2, "2g.20gb": 0}], None),  # a count of 0 makes no device
        (
            [None, {"1g.5gb": 7}],
            "all devices on the node must be configured with the same migEnabled value",
        ),
    ],
)
def test_single_strategy_error(layout: list, error: str | None) -> None:
    assert single_strategy_error(layout) == error


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
    assert (
        "with mig.strategy single (the chart's default) the device plugin advertises MIG devices "
        "as nvidia.com/gpu" in messages[2]
    )


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


CHART_MADE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-3g.20gb}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: gpu-operator, namespace: gpu-operator}
spec:
  chart: {spec: {chart: gpu-operator, version: v26.7.0}}
  values:
    migManager:
      config:
        name: custom-mig
        create: CREATE
        data:
          config.yaml: |
            version: v1
            mig-configs:
              all-disabled:
              - devices: all
                mig-enabled: false
"""


def test_gpu034_a_config_the_chart_makes_from_its_values(tmp_path: Path) -> None:
    """templates/mig_config.yaml renders ConfigMap `migManager.config.name` from
    `migManager.config.data` when `create` is true (review: such a config was not read, so a
    node asking for a config it lacks went unreported); with `create: false` the ConfigMap is
    not in the repo and nothing is said."""
    write(tmp_path, "all.yaml", CHART_MADE.replace("CREATE", "true"))
    [f] = found(tmp_path, "GPU034")
    assert "all-3g.20gb" in f.message and "the chart makes it from migManager.config.data" in (
        f.message
    )
    write(tmp_path, "all.yaml", CHART_MADE.replace("CREATE", "false"))
    assert found(tmp_path, "GPU034") == []


def mig_repo(strategy: str, configs: str, label: str, pods: str = "") -> str:
    """A ClusterPolicy (`mig: {strategy}` unless empty) naming ConfigMap custom-mig, whose
    config.yaml is `configs`, and one 8-GPU node labelled `label`."""
    mig = f"  mig: {{strategy: {strategy}}}\n" if strategy else ""
    return (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        f"spec:\n{mig}  migManager:\n    config: {{name: custom-mig}}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: custom-mig, namespace: gpu-operator}\n"
        "data:\n  config.yaml: |\n"
        + "".join(f"    {line}\n" for line in configs.splitlines())
        + "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-0\n  labels:\n"
        '    nvidia.com/gpu.present: "true"\n    nvidia.com/gpu.count: "8"\n'
        "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
        f"    nvidia.com/mig.config: {label}\n" + pods
    )


CONFIGS = """\
version: v1
mig-configs:
  balanced:
  - {devices: all, mig-enabled: true, mig-devices: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}}
  half:
  - {devices: [0, 1, 2, 3], mig-enabled: false}
  - {devices: [4, 5, 6, 7], mig-enabled: true, mig-devices: {3g.40gb: 2}}
  all-3g:
  - {devices: all, mig-enabled: true, mig-devices: {3g.40gb: 2}}
"""


@pytest.mark.parametrize(
    ("strategy", "label", "error", "hint"),
    [
        # k8s-device-plugin device_map.go assertAllMigDevicesAreValid
        (
            "single",
            "balanced",
            "more than one MIG device type present on node",
            "Use mig.strategy: mixed (each profile is then its own nvidia.com/mig-<profile>), or "
            "a config with one profile on every GPU.",
        ),
        # buildDeviceMapFromConfigResources: MIG on and off on one node
        (
            "single",
            "half",
            "all devices on the node must be configured with the same migEnabled value",
            "Enable MIG on every GPU of the node or on none, or use mig.strategy: mixed.",
        ),
        ("mixed", "balanced", None, None),
        ("single", "all-3g", None, None),
    ],
)
def test_gpu034_configs_single_refuses(
    tmp_path: Path, strategy: str, label: str, error: str | None, hint: str | None
) -> None:
    text = mig_repo(strategy, CONFIGS, label)
    write(tmp_path, "all.yaml", text)
    findings = found(tmp_path, "GPU034")
    if error is None:
        assert findings == []
        return
    [f] = findings
    line = text.splitlines().index(f"    nvidia.com/mig.config: {label}") + 1
    assert (f.location.line, f.location.column) == (line, 5)
    assert f.message == (
        f"node gpu-0 asks for MIG config {label}, which the device plugin refuses with "
        f'mig.strategy single ("invalid MIG configuration: {error}"): it advertises no '
        "nvidia.com/gpu there, and GFD sets nvidia.com/gpu.product to "
        "NVIDIA-A100-SXM4-80GB-MIG-INVALID and nvidia.com/gpu.count to 0"
    )
    assert f.hint == hint


MIG_POD = """\
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/mig-3g.40gb: 1}}
"""


def test_gpu034_an_unset_strategy_is_the_plugins_none(tmp_path: Path) -> None:
    """gpu-operator applyMIGConfiguration passes no MIG_STRATEGY for an unset mig.strategy (the
    CRD has no default); the device plugin's flag defaults to none."""
    write(tmp_path, "all.yaml", mig_repo("", CONFIGS, "all-3g", MIG_POD))
    [f] = found(tmp_path, "GPU034")
    assert f.message == (
        "Pod ml/p requests nvidia.com/mig-3g.40gb, but with mig.strategy unset (the device "
        "plugin's default, none) the device plugin advertises no MIG device: no node ever offers "
        "nvidia.com/mig-3g.40gb"
    )


@pytest.mark.parametrize(
    ("configs", "error", "hint"),
    [
        # mig-parted spec.go Spec.UnmarshalJSON
        (
            "mig-configs:\n  a: [{devices: all, mig-enabled: false}]\n",
            "unable to parse with missing 'version' field",
            "Add `version: v1` at the top of config.yaml.",
        ),
        (
            "version: v1\nflags: {}\nmig-configs:\n  a: [{devices: all, mig-enabled: false}]\n",
            "unexpected field: flags",
            "Remove the field: mig-parted reads `version` and `mig-configs`, and in an entry "
            "`devices`, `mig-enabled`, `mig-devices` and `device-filter`.",
        ),
        # MigConfigSpec.UnmarshalJSON
        (
            "version: v1\nmig-configs:\n  a: [{mig-enabled: false}]\n",
            "mig-configs.a[0]: missing required field: devices",
            "Give every entry `devices: all` (or a list of GPU indexes) and `mig-enabled`.",
        ),
        (
            "version: v1\nmig-configs:\n  a: [{devices: all, mig-enabled: true}]\n",
            "mig-configs.a[0]: missing required field 'mig-devices' when 'mig-enabled' is true",
            "Add `mig-devices: {<profile>: <count>}` to the entry, or set `mig-enabled: false`.",
        ),
    ],
)
def test_gpu034_configs_mig_parted_refuses(
    tmp_path: Path, configs: str, error: str, hint: str
) -> None:
    text = mig_repo("single", configs, "a")
    write(tmp_path, "all.yaml", text)
    [f] = found(tmp_path, "GPU034")
    line = text.splitlines().index("  config.yaml: |") + 1
    assert (f.location.line, f.location.column) == (line, 3)
    assert f.message == (
        f"ConfigMap custom-mig: mig-parted refuses its config.yaml ({error}), so the mig-manager "
        "applies no MIG config: nvidia.com/mig.config.state=failed on gpu-0"
    )
    assert f.hint == hint
