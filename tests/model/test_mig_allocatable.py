"""What a MIG node without allocatable offers (model/mig.py `mig_allocatable`), one row per case:
the strategy the device plugin runs with, per-index mig-parted entries, a config `single`
refuses, and the node's time-slicing/MPS config over its MIG devices. Each row names the upstream
function it follows; the expected numbers are worked out here, by hand."""

from __future__ import annotations

import textwrap

import pytest

from gpudrv_check.model.inventory import build_inventory
from gpudrv_check.model.mig import build_mig, mig_allocatable
from gpudrv_check.model.repo import Repo
from gpudrv_check.read.config import Config
from gpudrv_check.read.manifests import parse_manifest_bytes

G = "nvidia.com/gpu"


def repo(*docs: str) -> Repo:
    text = "---\n".join(textwrap.dedent(d).lstrip("\n") for d in docs)
    result = parse_manifest_bytes("t.yaml", text.encode())
    nodes, _ = build_inventory(result.manifests)
    return Repo(root=".", config=Config(), manifests=result.manifests, nodes=nodes, matrix=None)


def node(config: str, gpus: int = 8, extra: str = "") -> str:
    return f"""
        apiVersion: v1
        kind: Node
        metadata:
          name: gpu-0
          labels:
            nvidia.com/gpu.present: "true"
            nvidia.com/gpu.count: "{gpus}"
            nvidia.com/mig.config: {config}
            {extra or "nvidia.com/gpu.memory: '81920'"}
        """


def policy(body: str = "") -> str:
    spec = textwrap.indent(textwrap.dedent(body).strip(), "  ") if body else "  driver: {}"
    return (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        f"spec:\n{spec}\n"
    )


def helm(values: str) -> str:
    return (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: gpu-operator, namespace: gpu-operator}\n"
        "spec:\n  chart: {spec: {chart: gpu-operator}}\n"
        f"  values: {values}\n"
    )


def plugin_config(name: str, data: str) -> str:
    body = textwrap.indent(textwrap.dedent(data).strip(), "    ")
    return (
        "apiVersion: v1\nkind: ConfigMap\n"
        f"metadata: {{name: {name}, namespace: gpu-operator}}\ndata:\n  cfg: |-\n{body}\n"
    )


def mig_parted(configs: str) -> str:
    body = textwrap.indent(textwrap.dedent(configs).strip(), "      ")
    return (
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: custom-mig, namespace: gpu-operator}\n"
        f"data:\n  config.yaml: |\n    version: v1\n    mig-configs:\n{body}\n"
    )


SHARING = "devicePlugin: {config: {name: dp, default: cfg}}"
CUSTOM = "migManager: {config: {name: custom-mig}}"
TS4 = """
    version: v1
    sharing:
      timeSlicing:
        resources:
        - {name: nvidia.com/gpu, replicas: 4}
    """

STRATEGY_ROWS = [
    # gpu-operator object_controls.go applyMIGConfiguration: no MIG_STRATEGY; the plugin's
    # --mig-strategy default (cmd/nvidia-device-plugin/main.go): none, every GPU whole
    pytest.param([policy()], "none", {G: 8}, id="clusterpolicy-unset"),
    pytest.param([policy("mig: {strategy: single}")], "single", {G: 16}, id="clusterpolicy-single"),
    pytest.param([policy("mig: {strategy: none}")], "none", {G: 8}, id="clusterpolicy-none"),
    # api/config/v1/flags.go UpdateFromCLIFlags: with no MIG_STRATEGY the file's flag stays
    pytest.param(
        [policy(SHARING), plugin_config("dp", "version: v1\nflags: {migStrategy: mixed}")],
        "mixed",
        {"nvidia.com/mig-3g.40gb": 16},
        id="clusterpolicy-unset-config-flag",
    ),
    # ... and MIG_STRATEGY, once set, replaces it
    pytest.param(
        [
            policy("mig: {strategy: single}\n" + SHARING),
            plugin_config("dp", "version: v1\nflags: {migStrategy: mixed}"),
        ],
        "single",
        {G: 16},
        id="clusterpolicy-single-over-config-flag",
    ),
    # deployments/gpu-operator/values.yaml mig.strategy: single, merged under the release's values
    pytest.param([helm("{driver: {enabled: true}}")], "single", {G: 16}, id="chart-default"),
    # templates/clusterpolicy.yaml leaves an empty strategy out
    pytest.param([helm("{mig: {strategy: ''}}")], "none", {G: 8}, id="chart-empty"),
]


@pytest.mark.parametrize(("docs", "strategy", "offers"), STRATEGY_ROWS)
def test_strategy(docs: list[str], strategy: str, offers: dict) -> None:
    """all-3g.40gb (two 3g.40gb per GPU, the operator's default config) on 8 GPUs."""
    r = repo(node("all-3g.40gb"), *docs)
    state = build_mig(r)
    assert state is not None and state.strategy_of(r.nodes[0]) == strategy
    assert mig_allocatable(r) == {"gpu-0": offers}


def test_strategy_text_says_where_it_comes_from() -> None:
    r = repo(node("all-3g.40gb"), policy())
    state = build_mig(r)
    assert state is not None
    assert (
        state.strategy_text(r.nodes[0]) == "mig.strategy unset (the device plugin's default, none)"
    )
    r = repo(
        node("all-3g.40gb"), policy(SHARING), plugin_config("dp", "flags: {migStrategy: mixed}")
    )
    state = build_mig(r)
    assert state is not None
    assert state.strategy_text(r.nodes[0]) == "flags.migStrategy mixed (device-plugin config cfg)"


HALF = """
half-3g:
- {devices: [0, 1, 2, 3], mig-enabled: false}
- {devices: [4, 5, 6, 7], mig-enabled: true, mig-devices: {3g.40gb: 2}}
"""
FIRST = """
first:
- {devices: [0], mig-enabled: true, mig-devices: {3g.40gb: 2}}
"""
BALANCED = """
balanced:
- {devices: all, mig-enabled: true, mig-devices: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}}
"""

LAYOUT_ROWS = [
    # mig-parted MatchesDevices: each index list takes its GPUs only; device_map.go
    # buildGPUDeviceMap (mixed): the MIG-disabled GPUs stay nvidia.com/gpu
    pytest.param(HALF, "half-3g", "mixed", {G: 4, "nvidia.com/mig-3g.40gb": 8}, id="half-mixed"),
    # buildDeviceMapFromConfigResources (single): MIG on and off on one node is refused
    pytest.param(HALF, "half-3g", "single", {G: 0}, id="half-single"),
    # none: all 8 whole
    pytest.param(HALF, "half-3g", "none", {G: 8}, id="half-none"),
    # GPUs 1-7 are named by no entry: left as they were, so not known
    pytest.param(FIRST, "first", "mixed", None, id="index-subset-unknown"),
    # assertAllMigDevicesAreValid: three device types under single
    pytest.param(BALANCED, "balanced", "single", {G: 0}, id="balanced-single"),
    pytest.param(
        BALANCED,
        "balanced",
        "mixed",
        {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8},
        id="balanced-mixed",
    ),
]


@pytest.mark.parametrize(("configs", "name", "strategy", "offers"), LAYOUT_ROWS)
def test_per_device_configs(configs: str, name: str, strategy: str, offers: dict | None) -> None:
    r = repo(node(name), policy(f"mig: {{strategy: {strategy}}}\n{CUSTOM}"), mig_parted(configs))
    assert mig_allocatable(r).get("gpu-0") == offers


SHARING_ROWS = [
    # device_map.go updateDeviceMapWithReplicas: MIG devices are replicated like GPUs
    pytest.param("single", TS4, {G: 64}, id="single-time-slicing"),
    pytest.param(
        "single",
        TS4.replace("resources:", "renameByDefault: true\n        resources:"),
        {"nvidia.com/gpu.shared": 64},
        id="single-renamed",
    ),
    pytest.param(
        "mixed",
        TS4.replace("nvidia.com/gpu", "mig-3g.40gb"),  # NewResourceName adds nvidia.com/
        {"nvidia.com/mig-3g.40gb": 64},
        id="mixed-short-name",
    ),
    # cmd/nvidia-device-plugin/main.go validateFlags: MPS with mixed is refused
    pytest.param(
        "mixed",
        TS4.replace("timeSlicing", "mps"),
        {"nvidia.com/mig-3g.40gb": 0},
        id="mixed-mps-refused",
    ),
    # a config the plugin refuses: it does not run, nothing is advertised
    pytest.param("single", TS4.replace("replicas: 4", "replicas: 1"), {G: 0}, id="refused"),
]


@pytest.mark.parametrize(("strategy", "config", "offers"), SHARING_ROWS)
def test_sharing_over_mig(strategy: str, config: str, offers: dict) -> None:
    """all-3g.40gb on 8 GPUs: 16 MIG devices before sharing."""
    r = repo(
        node("all-3g.40gb"),
        policy(f"mig: {{strategy: {strategy}}}\n{SHARING}"),
        plugin_config("dp", config),
    )
    assert mig_allocatable(r) == {"gpu-0": offers}


def test_sharing_config_map_not_in_the_repo_leaves_the_node_unknown() -> None:
    r = repo(node("all-3g.40gb"), policy(f"mig: {{strategy: single}}\n{SHARING}"))
    assert mig_allocatable(r) == {}


@pytest.mark.parametrize(
    ("strategy", "offers"),
    [
        # single: every GPU has MIG on and no MIG device: device_map.go
        # assertAllMigDevicesAreValid refuses a MIG GPU without devices; nothing advertised
        ("single", {G: 0}),
        # mixed: no MIG device to advertise and no GPU with MIG off: the node lists none
        ("mixed", {}),
    ],
)
def test_the_default_all_enabled_config_is_mig_on_with_no_devices(strategy: str, offers: dict):
    """assets/state-mig-manager/0400_configmap.yaml `all-enabled`: `mig-enabled: true`,
    `mig-devices: {}` (policies/mig-profiles.yaml `{}`), not a config that differs per device,
    which the node's allocatable could not be known from."""
    r = repo(node("all-enabled"), policy(f"mig: {{strategy: {strategy}}}"))
    assert mig_allocatable(r)["gpu-0"] == offers
    # a config that differs per device (device-filter, `per-device` in the table): unknown
    unknown = repo(node("all-balanced"), policy(f"mig: {{strategy: {strategy}}}"))
    assert "gpu-0" not in mig_allocatable(unknown)
