"""GPU sharing as the GPU Operator configures it: the device-plugin config ConfigMap, which of
its configs each node gets, and what the device plugin and GFD then make of the node.

The operator adds the config manager to the device plugin and GFD only when
``devicePlugin.config.name`` is set (controllers/object_controls.go
``transformDevicePlugin``); it mounts that ConfigMap and passes ``devicePlugin.config.default``
as ``DEFAULT_CONFIG`` with ``FALLBACK_STRATEGIES=empty``. With the Helm chart,
``devicePlugin.config.create: true`` makes the ConfigMap from ``devicePlugin.config.data``. The
semantics of one config are in nvidia/device_plugin.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.located import Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.model.node import Node
from gpudrv_check.nvidia.device_plugin import (
    SharingConfig,
    config_name_for_node,
    parse_sharing_config,
)

if TYPE_CHECKING:
    from gpudrv_check.model.operator import EmbeddedReader, OperatorConfig
    from gpudrv_check.model.repo import Repo


@record
class ConfigEntry:
    """One key of the ConfigMap: its parsed config, or why the plugin refuses it."""

    key: str
    path: Path  # where the key is written in its manifest
    config: SharingConfig | None
    error: str | None


@record
class NodeSharing:
    node: Node
    key: str | None  # the ConfigMap key the config manager selects; None: the empty config
    from_label: bool
    config: SharingConfig | None  # None: the config manager (or the plugin) fails there
    error: str | None = None


@record
class Sharing:
    """The device-plugin config of the repo's operator configuration, node by node."""

    operator: OperatorConfig
    name: str
    default: str | None
    manifest: Manifest | None  # the ConfigMap (None: from the chart's data, or missing)
    entries: dict[str, ConfigEntry] = field(default_factory=dict)
    missing: bool = False  # the ConfigMap is in neither the repo nor the values
    nodes: dict[str, NodeSharing] = field(default_factory=dict)

    def of(self, node: Node) -> NodeSharing | None:
        return self.nodes.get(node.name)


def _parse_entry(reader: EmbeddedReader, key: str, text: object, path: Path) -> ConfigEntry:
    if not isinstance(text, str):
        return ConfigEntry(key, path, None, "the config must be a YAML string")
    docs = reader.documents(text)
    if docs is None or len(docs) > 1:
        return ConfigEntry(key, path, None, "the config is not one YAML document")
    data: Any = docs[0] if docs else None
    config, error = parse_sharing_config(data)
    return ConfigEntry(key, path, config, error)


def _config_map(repo: Repo, name: str) -> Manifest | None:
    for manifest in repo.of_kind("ConfigMap"):
        if manifest.api_version == "v1" and manifest.name == name:
            return manifest
    return None


def _entries(
    reader: EmbeddedReader, values: Mapping[str, Any], base: Path
) -> dict[str, ConfigEntry]:
    return {
        str(key): _parse_entry(reader, str(key), text, (*base, str(key)))
        for key, text in values.items()
    }


def build_sharing(repo: Repo) -> Sharing | None:
    """None when the operator configuration names no device-plugin config."""
    operator = repo.operator
    if operator is None:
        return None
    name = operator.get("devicePlugin", "config", "name")
    if not isinstance(name, str) or not name:
        return None
    default = operator.get("devicePlugin", "config", "default")
    sharing = Sharing(operator, name, default if isinstance(default, str) else None, None)
    manifest = _config_map(repo, name)
    data = operator.get("devicePlugin", "config", "data")
    if manifest is not None:
        sharing.manifest = manifest
        found = manifest.get("data")
        values = found if isinstance(found, Mapping) else {}
        sharing.entries = _entries(repo.embedded_reader, values, ("data",))
    elif operator.get("devicePlugin", "config", "create") is True and isinstance(data, Mapping):
        path = ("devicePlugin", "config", "data")
        sharing.entries = _entries(repo.embedded_reader, data, path)
    else:
        sharing.missing = True
    for node in repo.gpu_nodes:
        sharing.nodes[node.name] = _node_sharing(sharing, node)
    return sharing


def _node_sharing(sharing: Sharing, node: Node) -> NodeSharing:
    key = config_name_for_node(node.labels, sharing.default)
    from_label = bool(node.labels.get("nvidia.com/device-plugin.config"))
    if sharing.missing:
        error = f'configmap "{sharing.name}" not found'
        return NodeSharing(node, key, from_label, None, error)
    # cmd/config-manager updateConfigName lists the files before it looks at the label, the
    # default or the fallbacks: a ConfigMap without keys fails even with no config asked for
    if not sharing.entries:
        return NodeSharing(node, key, from_label, None, "no configuration files available")
    if key is None:
        return NodeSharing(node, None, from_label, SharingConfig("none"))
    entry = sharing.entries.get(key)
    if entry is None:
        # cmd/config-manager updateConfigName prints the label's value, "" for the default
        shown = key if from_label else ""
        return NodeSharing(node, key, from_label, None, f"specified config {shown} does not exist")
    if entry.config is None:
        return NodeSharing(node, key, from_label, None, entry.error)
    return NodeSharing(node, key, from_label, entry.config)
