"""MIG on the repo's nodes: which mig-parted config each node's ``nvidia.com/mig.config`` names,
whether it exists and fits the GPU, and what the device plugin then advertises there.

The profiles come from the ConfigMap named by ``migManager.config.name`` (key ``config.yaml``)
when the repo holds it, else from the operator's default profiles (policies/mig-profiles.yaml).

The strategy is ``mig.strategy`` of the operator configuration. The chart's values default it to
``single`` (deployments/gpu-operator/values.yaml), but the ClusterPolicy CRD has no default
(api/nvidia/v1/clusterpolicy_types.go ``MIGSpec``), and with none the operator passes no
``MIG_STRATEGY`` to the device plugin (controllers/object_controls.go ``applyMIGConfiguration``:
"let plugin decide this per node"). The plugin then takes ``flags.migStrategy`` of the node's
device-plugin config, else its flag's default, ``none`` (k8s-device-plugin
cmd/nvidia-device-plugin/main.go; api/config/v1/flags.go ``UpdateFromCLIFlags`` lets only a set
flag or variable replace the file's value). Semantics: nvidia/mig.py.
"""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.model.node import Node
from gpudrv_check.model.sharing import NodeSharing, Sharing, build_sharing
from gpudrv_check.nvidia.device_plugin import SharingConfig, advertised
from gpudrv_check.nvidia.mig import (
    MIG_CONFIG_LABEL,
    MigConfig,
    MigEntry,
    advertised_mig,
    gpu_layout,
    mig_configs,
)

if TYPE_CHECKING:
    from gpudrv_check.model.operator import EmbeddedReader
    from gpudrv_check.model.repo import Repo

CHART_STRATEGY = "single"  # the chart's values.yaml `mig.strategy`
PLUGIN_STRATEGY = "none"  # the device plugin's `--mig-strategy` default
DEFAULT_CONFIG_MAP = "default-mig-parted-config"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


@record
class MigState:
    strategy: str | None  # what the operator passes as MIG_STRATEGY; None: nothing
    source: str  # where the profiles come from, for messages
    profiles: dict[str, MigConfig]
    manifest: Manifest | None = None  # the custom ConfigMap, when in the repo
    error: str | None = None  # the custom config does not parse
    nodes: dict[str, str] = field(default_factory=dict)  # node -> the config its label names
    sharing: Sharing | None = None  # the device-plugin configs, node by node
    chart: bool = False  # the strategy is the chart's default, not written

    def strategy_of(self, node: Node) -> str:
        """The MIG strategy the device plugin runs with on ``node``."""
        if self.strategy is not None:
            return self.strategy
        config = self._config(node)
        found = config.mig_strategy if config is not None else None
        return found or PLUGIN_STRATEGY

    def strategy_text(self, node: Node) -> str:
        """Where that strategy comes from, for messages."""
        if self.strategy is not None:
            return f"mig.strategy {self.strategy}" + (
                " (the chart's default)" if self.chart else ""
            )
        state = self.sharing.of(node) if self.sharing is not None else None
        config = self._config(node)
        if state is not None and config is not None and config.mig_strategy:
            return f"flags.migStrategy {config.mig_strategy} (device-plugin config {state.key})"
        return f"mig.strategy unset (the device plugin's default, {PLUGIN_STRATEGY})"

    def _config(self, node: Node) -> SharingConfig | None:
        state = self.sharing.of(node) if self.sharing is not None else None
        return state.config if state is not None else None


def _parse(reader: EmbeddedReader, text: object) -> Any:
    """The first document of a config key, as mig-parted reads one (None: no YAML)."""
    if not isinstance(text, str):
        return None
    docs = reader.documents(text)
    return docs[0] if docs else None


@cache
def _default_profiles() -> dict[str, MigConfig]:
    from gpudrv_check.read.packaged import packaged_yaml

    data = packaged_yaml("policies", "mig-profiles.yaml")
    profiles = data.get("profiles") if isinstance(data, dict) else None
    out: dict[str, MigConfig] = {}
    for name, devices in (profiles or {}).items():
        if devices == PER_DEVICE:  # differs per GPU model (a device-filter): unknown offline
            out[str(name)] = (MigEntry(None, True, {}),)
            continue
        # null: MIG off; {}: MIG on with no devices (`all-enabled`)
        mig = None if devices is None else {str(k): v for k, v in devices.items()}
        out[str(name)] = (MigEntry(None, False, mig),)
    return out


#: policies/mig-profiles.yaml's mark of a config that differs per device
PER_DEVICE = "per-device"


def _strategy(repo: Repo) -> tuple[str | None, bool]:
    """MIG_STRATEGY as the operator passes it (None: not at all), and whether it is the chart's
    default rather than a written value."""
    operator = repo.operator
    if operator is None:
        return CHART_STRATEGY, True  # no operator configuration: assume the chart's
    strategy = operator.get("mig", "strategy")
    if isinstance(strategy, str):
        return strategy or None, False  # the chart template leaves an empty strategy out
    if operator.source == "clusterpolicy" or operator.deleted("mig", "strategy"):
        return None, False  # a null in chart values: Helm drops it, the template leaves it out
    return CHART_STRATEGY, True  # chart values merge over values.yaml


def build_mig(repo: Repo) -> MigState | None:
    """None when no node names a MIG config."""
    labelled = {
        n.name: n.labels[MIG_CONFIG_LABEL] for n in repo.nodes if n.labels.get(MIG_CONFIG_LABEL)
    }
    if not labelled:
        return None
    operator = repo.operator
    strategy, chart = _strategy(repo)
    custom = operator.get("migManager", "config", "name") if operator is not None else None
    if isinstance(custom, str) and custom and custom != DEFAULT_CONFIG_MAP:
        manifest = next(
            (m for m in repo.of_kind("ConfigMap") if m.api_version == "v1" and m.name == custom),
            None,
        )
        if manifest is None:
            from_values = _chart_made_config(repo, operator)
            if from_values is None:
                return None  # not in the repo: nothing to check it against
            state = MigState(
                strategy,
                f"ConfigMap {custom} (the chart makes it from migManager.config.data)",
                from_values,
            )
        else:
            text = manifest.get("data", "config.yaml")
            # the mig-manager reads -config-file=/mig-parted-config/config.yaml
            profiles, error = mig_configs(_parse(repo.embedded_reader, text))
            if text is None:
                error = MISSING_KEY
            state = MigState(strategy, f"ConfigMap {custom}", profiles, manifest, error)
    else:
        state = MigState(
            strategy, "the GPU Operator's default mig-parted config", _default_profiles()
        )
    state.nodes = labelled
    state.chart = chart
    state.sharing = build_sharing(repo)
    return state


def _chart_made_config(repo: Repo, operator: Any) -> dict[str, MigConfig] | None:
    """The profiles of the ConfigMap the chart makes from its values (templates/mig_config.yaml:
    `if and .Values.migManager.config.create (not (empty .Values.migManager.config.data))`,
    named `migManager.config.name`, its data `toYaml` of `data`), when its config.yaml is a
    config mig-parted reads; None otherwise (a config it refuses is not modelled here)."""
    if operator is None or operator.source == "clusterpolicy":
        return None
    data = operator.get("migManager", "config", "data")
    if operator.get("migManager", "config", "create") is not True or not isinstance(data, dict):
        return None
    text = data.get("config.yaml")
    if not isinstance(text, str):
        return None
    profiles, error = mig_configs(_parse(repo.embedded_reader, text))
    return profiles if error is None else None


#: the error of a custom ConfigMap without the key the mig-manager reads (gpu-operator: the
#: mig-manager's `-config-file=/mig-parted-config/config.yaml`, the ConfigMap mounted there)
MISSING_KEY = (
    "it has no key config.yaml, the file the mig-manager reads (/mig-parted-config/config.yaml)"
)


def mig_allocatable(repo: Repo) -> dict[str, dict[str, int]]:
    """What the device plugin advertises on nodes whose inventory gives no allocatable, from
    their MIG config, strategy, sharing config and ``nvidia.com/gpu.count``."""
    state = build_mig(repo)
    if state is None or state.error is not None:
        return {}
    out: dict[str, dict[str, int]] = {}
    for node in repo.nodes:
        name = state.nodes.get(node.name)
        count = node.labels.get(GPU_COUNT_LABEL, "")
        if name is None or name not in state.profiles or not count.isdigit() or len(count) > 4:
            continue
        if node.allocatable or node.capacity:
            continue
        layout = gpu_layout(state.profiles[name], int(count))
        if layout is None:
            continue  # per device, or GPUs the config leaves as they are: unknown
        strategy = state.strategy_of(node)
        sharing = state.sharing.of(node) if state.sharing is not None else None
        found = _shared(advertised_mig(layout, strategy), state.sharing, sharing, strategy)
        if found is not None:
            out[node.name] = found
    return out


def _shared(
    resources: dict[str, int], sharing: Sharing | None, node: NodeSharing | None, strategy: str
) -> dict[str, int] | None:
    """``resources`` once the node's sharing config replicates them (k8s-device-plugin
    internal/rm/device_map.go ``updateDeviceMapWithReplicas``: MIG devices included); all 0
    where the plugin does not run; None where that is not known (its ConfigMap is not in the
    repo)."""
    if sharing is None or node is None:
        return resources
    if sharing.missing:
        return None
    config = node.config
    # the config manager or the plugin refuses the config; or MPS with `mixed`
    # (cmd/nvidia-device-plugin/main.go validateFlags): nothing is advertised
    if config is None or (config.strategy == "mps" and strategy == "mixed"):
        return {name: 0 for name in resources}
    out: dict[str, int] = {}
    for resource, n in resources.items():
        for name, amount in advertised(config, resource, n).items():
            out[name] = out.get(name, 0) + amount
    return out
