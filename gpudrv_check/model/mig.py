"""MIG on the repo's nodes: which mig-parted config each node's ``nvidia.com/mig.config`` names,
whether it exists and fits the GPU, and what the device plugin then advertises there.

The profiles come from the ConfigMap named by ``migManager.config.name`` (key ``config.yaml``)
when the repo holds it, else from the operator's default profiles (policies/mig-profiles.yaml).
The strategy is ``mig.strategy`` of the operator configuration (the chart's default: ``single``).
Semantics: nvidia/mig.py.
"""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.model.node import Node
from gpudrv_check.nvidia.mig import MIG_CONFIG_LABEL, advertised_mig, mig_configs

if TYPE_CHECKING:
    from gpudrv_check.model.operator import EmbeddedReader
    from gpudrv_check.model.repo import Repo

DEFAULT_STRATEGY = "single"
DEFAULT_CONFIG_MAP = "default-mig-parted-config"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


@record
class MigState:
    strategy: str
    source: str  # where the profiles come from, for messages
    profiles: dict[str, dict[str, int] | None]
    manifest: Manifest | None = None  # the custom ConfigMap, when in the repo
    error: str | None = None  # the custom config does not parse
    nodes: dict[str, str] = field(default_factory=dict)  # node -> the config its label names

    def devices(self, node: Node) -> dict[str, int] | None:
        name = self.nodes.get(node.name)
        return self.profiles.get(name) if name is not None else None


def _parse(reader: EmbeddedReader, text: object) -> Any:
    """The first document of a config key, as mig-parted reads one (None: no YAML)."""
    if not isinstance(text, str):
        return None
    docs = reader.documents(text)
    return docs[0] if docs else None


@cache
def _default_profiles() -> dict[str, dict[str, int] | None]:
    from gpudrv_check.read.packaged import packaged_yaml

    data = packaged_yaml("policies", "mig-profiles.yaml")
    profiles = data.get("profiles") if isinstance(data, dict) else None
    out: dict[str, dict[str, int] | None] = {}
    for name, devices in (profiles or {}).items():
        out[str(name)] = None if devices is None else {str(k): v for k, v in devices.items()}
    return out


def build_mig(repo: Repo) -> MigState | None:
    """None when no node names a MIG config."""
    labelled = {
        n.name: n.labels[MIG_CONFIG_LABEL] for n in repo.nodes if n.labels.get(MIG_CONFIG_LABEL)
    }
    if not labelled:
        return None
    operator = repo.operator
    strategy = operator.get("mig", "strategy") if operator is not None else None
    strategy = strategy if isinstance(strategy, str) and strategy else DEFAULT_STRATEGY
    custom = operator.get("migManager", "config", "name") if operator is not None else None
    if isinstance(custom, str) and custom and custom != DEFAULT_CONFIG_MAP:
        manifest = next(
            (m for m in repo.of_kind("ConfigMap") if m.api_version == "v1" and m.name == custom),
            None,
        )
        if manifest is None:
            return None  # not in the repo: nothing to check it against
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
    return state


#: the error of a custom ConfigMap without the key the mig-manager reads (gpu-operator: the
#: mig-manager's `-config-file=/mig-parted-config/config.yaml`, the ConfigMap mounted there)
MISSING_KEY = (
    "it has no key config.yaml, the file the mig-manager reads (/mig-parted-config/config.yaml)"
)


def mig_allocatable(repo: Repo) -> dict[str, dict[str, int]]:
    """What the device plugin advertises on nodes whose inventory gives no allocatable, from
    their MIG config, strategy and ``nvidia.com/gpu.count``."""
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
        devices = state.profiles[name]
        if devices == {}:
            continue  # per device, or enabled without devices: unknown
        out[node.name] = advertised_mig(devices, state.strategy, int(count))
    return out
