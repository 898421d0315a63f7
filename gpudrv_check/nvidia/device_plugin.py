"""The NVIDIA device plugin's sharing configuration (time-slicing, MPS) and what it advertises.

Reproduced (not copied) from NVIDIA/k8s-device-plugin:

- api/config/v1/config.go ``parseConfigFrom``: a missing ``version`` is ``v1``, any other is
  "unknown version: <v>"; ``NewConfig``: MPS sets ``failRequestsGreaterThanOne`` when unset;
  ``DisableResourceNamingInConfig``: a ``rename`` is ignored (only ``renameByDefault`` renames,
  to ``<name>.shared``), and so are ``devices`` other than ``all``;
- api/config/v1/replicas.go ``ReplicatedResources.UnmarshalJSON`` ("no resources specified")
  and ``ReplicatedResource.UnmarshalJSON`` ("no resource name specified", "no replicas
  specified", "number of replicas must be >= 2");
- api/config/v1/sharing.go ``SharingStrategy``: MPS when it replicates, else time-slicing when it
  replicates, else none;
- internal/rm/rm.go ``ValidateRequest``: with ``failRequestsGreaterThanOne`` a request for more
  than one replica fails ("maximum request size for shared resources is 1; found N");
- internal/lm/resource.go ``getProductName``: GFD appends ``-SHARED`` to
  ``nvidia.com/gpu.product`` when the resource is shared and not renamed;
- cmd/config-manager/main.go ``updateConfigName``: the node label
  ``nvidia.com/device-plugin.config`` names a key of the ConfigMap ("specified config <x> does
  not exist" otherwise); without it, the default (the GPU Operator passes
  ``devicePlugin.config.default`` as ``DEFAULT_CONFIG`` and ``FALLBACK_STRATEGIES=empty``, so no
  default means no sharing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from gpudrv_check.core.records import record

__all__ = [
    "CONFIG_LABEL",
    "SHARED_SUFFIX",
    "Replicated",
    "SharingConfig",
    "parse_sharing_config",
    "advertised",
    "shared_product",
    "config_name_for_node",
]

CONFIG_LABEL = "nvidia.com/device-plugin.config"
PRODUCT_LABEL = "nvidia.com/gpu.product"
SHARED_SUFFIX = "-SHARED"
RENAME_SUFFIX = ".shared"
TOO_LARGE = "maximum request size for shared resources is 1; found {n}"


@record(frozen=True)
class Replicated:
    """One resource the plugin advertises ``replicas`` times per device."""

    name: str
    replicas: int
    renamed: bool  # renameByDefault: advertised as <name>.shared

    @property
    def advertised_name(self) -> str:
        return self.name + RENAME_SUFFIX if self.renamed else self.name


@record(frozen=True)
class SharingConfig:
    """What one config of the ConfigMap makes the plugin do."""

    strategy: str  # "none" | "time-slicing" | "mps"
    resources: tuple[Replicated, ...] = ()
    fail_requests_greater_than_one: bool = False
    mig_strategy: str | None = None  # flags.migStrategy when the config sets it
    notes: tuple[str, ...] = field(default=())  # what the plugin ignores, with a warning

    def replicated(self, resource: str) -> Replicated | None:
        for r in self.resources:
            if r.name == resource:
                return r
        return None


def _replicated(
    section: object, mps: bool
) -> tuple[tuple[Replicated, ...], bool, list[str], str | None]:
    """``ReplicatedResources.UnmarshalJSON`` then ``disableResoureRenaming``."""
    if not isinstance(section, Mapping):
        return (), False, [], "no resources specified"
    rename_default = section.get("renameByDefault") is True
    fail = section.get("failRequestsGreaterThanOne")
    resources = section.get("resources")
    if not isinstance(resources, list) or not resources:
        return (), False, [], "no resources specified"
    out: list[Replicated] = []
    notes: list[str] = []
    for item in resources:
        if not isinstance(item, Mapping) or "name" not in item:
            return (), False, [], "no resource name specified"
        if "replicas" not in item:
            return (), False, [], "no replicas specified"
        replicas = item.get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            return (), False, [], f"replicas must be an integer, not {replicas!r}"
        if replicas < 2:
            return (), False, [], "number of replicas must be >= 2"
        if item.get("rename") and item.get("rename") != f"{item.get('name')}{RENAME_SUFFIX}":
            notes.append("the 'rename' field is not yet supported and is ignored")
        if item.get("devices") not in (None, "all"):
            notes.append("the 'devices' field is not yet supported and is ignored")
        out.append(Replicated(str(item.get("name")), replicas, rename_default))
    failing = fail is True or (fail is None and mps)
    return tuple(out), failing, notes, None


def parse_sharing_config(data: object) -> tuple[SharingConfig | None, str | None]:
    """One device-plugin config (the YAML of one ConfigMap key, already parsed)."""
    if data is None:
        return SharingConfig("none"), None
    if not isinstance(data, Mapping):
        return None, "the config is not a YAML mapping"
    version = data.get("version")
    if version not in (None, "", "v1"):
        return None, f"unknown version: {version}"
    flags = data.get("flags")
    mig = flags.get("migStrategy") if isinstance(flags, Mapping) else None
    mig_strategy = mig if isinstance(mig, str) else None
    sharing = data.get("sharing")
    if sharing is None:
        return SharingConfig("none", mig_strategy=mig_strategy), None
    if not isinstance(sharing, Mapping):
        return None, "sharing must be a mapping"
    for key, mps in (("mps", True), ("timeSlicing", False)):
        if key not in sharing:
            continue
        resources, failing, notes, error = _replicated(sharing.get(key), mps)
        if error is not None:
            return None, f"sharing.{key}: {error}"
        strategy = "mps" if mps else "time-slicing"
        return SharingConfig(strategy, resources, failing, mig_strategy, tuple(notes)), None
    return SharingConfig("none", mig_strategy=mig_strategy), None


def advertised(config: SharingConfig, resource: str, devices: int) -> dict[str, int]:
    """The resources the plugin advertises for ``devices`` devices of ``resource``."""
    shared = config.replicated(resource)
    if shared is None:
        return {resource: devices}
    return {shared.advertised_name: devices * shared.replicas}


def shared_product(config: SharingConfig, product: str, resource: str = "nvidia.com/gpu") -> str:
    """``nvidia.com/gpu.product`` as GFD writes it under this config."""
    shared = config.replicated(resource)
    if shared is None or shared.renamed or product.endswith(SHARED_SUFFIX):
        return product
    return product + SHARED_SUFFIX


def config_name_for_node(labels: Mapping[str, str], default: str | None) -> str | None:
    """The ConfigMap key the config manager selects on a node; None: the empty config."""
    value = labels.get(CONFIG_LABEL)
    if value:
        return value
    return default or None
