"""The NVIDIA device plugin's sharing configuration (time-slicing, MPS) and what it advertises.

Reproduced (not copied) from NVIDIA/k8s-device-plugin:

- api/config/v1/config.go ``parseConfigFrom``: a missing ``version`` is ``v1``, any other is
  "unknown version: <v>"; ``NewConfig``: MPS sets ``failRequestsGreaterThanOne`` when unset;
  ``DisableResourceNamingInConfig``: a ``rename`` is ignored (only ``renameByDefault`` renames,
  to ``<name>.shared``), and so are ``devices`` other than ``all``;
- api/config/v1/replicas.go ``ReplicatedResources.UnmarshalJSON`` ("no resources specified"),
  ``ReplicatedResource.UnmarshalJSON`` ("no resource name specified", "no replicas
  specified", "number of replicas must be >= 2") and ``ReplicatedDevices.UnmarshalJSON``
  (``devices``: ``all``, a count, or a list of indexes and UUIDs; "the only valid string input
  is 'all'"); both ``mps`` and ``timeSlicing`` are decoded, so either one's error refuses the
  config; api/config/v1/resources.go ``NewResourceName``: a resource name without
  ``nvidia.com/`` gets it;
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
from gpudrv_check.k8s.labels import dns1123_subdomain_errors

__all__ = [
    "CONFIG_LABEL",
    "SHARED_SUFFIX",
    "Replicated",
    "SharingConfig",
    "parse_sharing_config",
    "resource_name",
    "advertised",
    "shared_product",
    "config_name_for_node",
]

CONFIG_LABEL = "nvidia.com/device-plugin.config"
PRODUCT_LABEL = "nvidia.com/gpu.product"
SHARED_SUFFIX = "-SHARED"
RENAME_SUFFIX = ".shared"
PREFIX = "nvidia.com/"  # api/config/v1/consts.go ResourceNamePrefix
MAX_NAME = 63  # MaxResourceNameLength
#: said of an error in timeSlicing when mps, which applies, is there too
UNUSED_SECTION = " (the plugin reads this section too, although mps applies)"
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
        found, error = _resource(item)
        if error is not None:
            return (), False, [], error
        assert found is not None
        name, rename, devices = found
        if rename and rename != name + RENAME_SUFFIX:
            notes.append("the 'rename' field is not yet supported and is ignored")
        if devices != "all":
            notes.append("the 'devices' field is not yet supported and is ignored")
        out.append(Replicated(name, item["replicas"], rename_default))
    failing = fail is True or (fail is None and mps)
    return tuple(out), failing, notes, None


def _resource(item: object) -> tuple[tuple[str, str, object] | None, str | None]:
    """``ReplicatedResource.UnmarshalJSON``, in its order: the name, the devices, the
    replicas, the rename. Gives (name, rename, devices), names as ``NewResourceName`` makes
    them."""
    if not isinstance(item, Mapping) or "name" not in item:
        return None, "no resource name specified"
    name, error = resource_name(item.get("name"))
    if error is not None:
        return None, error
    devices = item.get("devices", "all")
    error = _devices_error(devices)
    if error is not None:
        return None, error
    if "replicas" not in item:
        return None, "no replicas specified"
    replicas = item.get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        return None, f"replicas must be an integer, not {replicas!r}"
    if replicas < 2:
        return None, "number of replicas must be >= 2"
    rename = ""
    if item.get("rename") is not None:
        rename, error = resource_name(item.get("rename"))
        if error is not None:
            return None, error
    return (name, rename, devices), None


def resource_name(value: object) -> tuple[str, str | None]:
    """api/config/v1/resources.go ``NewResourceName``: a name without the ``nvidia.com/``
    prefix gets it (``gpu`` is ``nvidia.com/gpu``), then the whole is at most 63 characters and
    the part after the first ``/`` a DNS-1123 subdomain."""
    if not isinstance(value, str):
        return "", f"a resource name must be a string, not {value!r}"
    name = value if value.startswith(PREFIX) else PREFIX + value
    if len(name) > MAX_NAME:
        return "", f"fully-qualified resource name must be {MAX_NAME} characters or less: {name}"
    errors = dns1123_subdomain_errors(name.split("/", 1)[1])
    if errors:
        return "", f"incorrect format for resource name '{name}': {'; '.join(errors)}"
    return name, None


def _devices_error(devices: object) -> str | None:
    """``ReplicatedDevices.UnmarshalJSON``: ``all``, a count above 0, or a list of GPU indexes,
    MIG indexes (``0:1``) and GPU or MIG UUIDs."""
    if isinstance(devices, str):
        if devices != "all":
            return f"devices set as '{devices}' but the only valid string input is 'all'"
        return None
    if isinstance(devices, int) and not isinstance(devices, bool):
        if devices <= 0:
            return f"devices set as '{devices}' but a count of devices must be > 0"
        return None
    if isinstance(devices, list):
        for item in devices:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
                continue
            if isinstance(item, str) and _device_ref(item):
                continue
            return f"unsupported type for device in devices list: {item}"
        return None
    return f"unrecognized type for devices spec: {devices}"


def _device_ref(ref: str) -> bool:
    """``ReplicatedDeviceRef``: ``IsGPUIndex``, ``IsMigIndex``, ``IsUUID``."""
    if ref.isdigit() or (ref.count(":") == 1 and all(p.isdigit() for p in ref.split(":"))):
        return ref.isascii()
    if ref.startswith("GPU-"):
        return _uuid(ref[4:])
    if not ref.startswith("MIG-"):
        return False
    rest = ref[4:]
    parts = rest.split("/")
    if len(parts) == 3:  # MIG-GPU-<uuid>/<gi>/<ci>
        return (
            _device_ref(parts[0])
            and parts[0].startswith("GPU-")
            and all(p.isascii() and p.isdigit() for p in parts[1:])
        )
    return _uuid(rest)


def _uuid(text: str) -> bool:
    from uuid import UUID  # (imports `platform`: only for a repo that names a device)

    try:
        UUID(text)
    except ValueError:
        return False
    return True


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
    # both sections are decoded and checked (sigs.k8s.io/yaml hands the decoder sorted keys:
    # mps first); the one that applies is mps when present (sharing.go ReplicatedResources)
    found: list[SharingConfig] = []
    for key, mps in (("mps", True), ("timeSlicing", False)):
        if key not in sharing or (mps and sharing.get(key) is None):
            continue  # `mps: null` leaves the pointer nil
        resources, failing, notes, error = _replicated(sharing.get(key), mps)
        if error is not None:
            unused = UNUSED_SECTION if found else ""
            return None, f"sharing.{key}: {error}{unused}"
        strategy = "mps" if mps else "time-slicing"
        found.append(SharingConfig(strategy, resources, failing, mig_strategy, tuple(notes)))
    return (found[0] if found else SharingConfig("none", mig_strategy=mig_strategy)), None


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
