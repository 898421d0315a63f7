"""MIG as the GPU Operator's mig-manager and the device plugin see it.

- NVIDIA/mig-parted api/spec/v1/spec.go (``version: v1``, ``mig-configs: {<name>: [{devices,
  mig-enabled, mig-devices: {"<profile>": count}}]}``): ``Spec.UnmarshalJSON`` and
  ``MigConfigSpec.UnmarshalJSON`` refuse a config without ``version``, with an unknown field,
  an entry without ``devices`` or ``mig-enabled``, ``devices`` other than ``all`` or a list of
  GPU indexes, ``mig-enabled: true`` without ``mig-devices`` (and ``false`` with some); the node
  label ``nvidia.com/mig.config`` names one of its ``mig-configs`` (the mig-manager sets
  ``nvidia.com/mig.config.state=failed`` otherwise);
- mig-parted cmd/nvidia-mig-parted/assert ``WalkSelectedMigConfigForEachGPU`` and
  api/spec/v1/helpers.go ``MatchesDevices``: each entry is applied, in order, to the GPUs its
  ``devices`` name (by index, or ``all``), so the last entry naming a GPU decides it; a GPU no
  entry names is left as it was;
- NVIDIA/k8s-device-plugin internal/rm/device_map.go ``buildDeviceMapFromConfigResources``:
  with ``none`` every GPU, MIG or not, is a ``nvidia.com/gpu``; with ``mixed`` a MIG-disabled GPU
  is a ``nvidia.com/gpu`` and each MIG device a ``nvidia.com/mig-<profile>`` (``+`` becomes
  ``.``: ``1g.5gb+me`` → ``nvidia.com/mig-1g.5gb.me``, internal/rm/rm.go); with ``single`` every
  MIG device is a ``nvidia.com/gpu``, and the plugin refuses to start (``invalid MIG
  configuration``, nothing advertised) on a node whose MIG-enabled GPU has no MIG device, whose
  MIG devices are of more than one type (``assertAllMigDevicesAreValid``), or whose GPUs are not
  all MIG-enabled or all MIG-disabled;
- a profile ``<g>g.<m>gb`` holds ``m`` GB of the GPU's memory: it cannot exist on a GPU with
  less (the one fit this checker can tell from GFD's ``nvidia.com/gpu.memory`` label, in MiB).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record

__all__ = [
    "MIG_CONFIG_LABEL",
    "MigEntry",
    "mig_configs",
    "gpu_layout",
    "single_strategy_error",
    "advertised_mig",
    "profile_memory_gb",
    "resource_for_profile",
]

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GPU = "nvidia.com/gpu"
_PROFILE = lazy_compile(r"(\d+)g\.(\d+)gb")

#: a GPU as the mig-manager leaves it: its MIG devices by profile, or None for MIG disabled
GpuState = Mapping[str, int] | None


@record(frozen=True)
class MigEntry:
    """One entry of a mig-parted config: the GPUs it applies to and what it makes of each."""

    devices: tuple[int, ...] | None  # GPU indexes; None: every GPU (`devices: all`)
    filtered: bool  # a device-filter: which GPUs it takes depends on their model
    mig: GpuState  # the MIG devices per GPU; None: MIG disabled


MigConfig = tuple[MigEntry, ...]


def mig_configs(data: object) -> tuple[dict[str, MigConfig], str | None]:
    """A mig-parted config → {name: its entries}, or why mig-parted refuses it."""
    if not isinstance(data, Mapping):
        return {}, "the mig-parted config is not a YAML mapping"
    error = _spec_error(data)
    if error is not None:
        return {}, error
    configs = data.get("mig-configs")
    if not isinstance(configs, Mapping):
        # upstream parses it, then finds no config of any name: no label can be applied
        return {}, "the mig-parted config has no mig-configs"
    return {str(name): tuple(_entry(e) for e in entries) for name, entries in configs.items()}, None


def _entry(entry: Mapping) -> MigEntry:
    devices = entry.get("devices")
    indexes = None if devices == "all" else tuple(devices or ())
    mig = entry.get("mig-devices") if entry.get("mig-enabled") is True else None
    found = {str(p): n for p, n in mig.items()} if isinstance(mig, Mapping) else None
    if entry.get("mig-enabled") is True and found is None:
        found = {}
    return MigEntry(indexes, entry.get("device-filter") is not None, found)


# --- what mig-parted refuses (Spec.UnmarshalJSON, MigConfigSpec.UnmarshalJSON) -----------------
# Upstream walks Go maps, so with several faults any one may be reported; here the first in
# the order written, after the version (checked first there too).


def _spec_error(data: Mapping) -> str | None:
    if "version" not in data and data:
        return "unable to parse with missing 'version' field"
    if data.get("version") != "v1":
        return f"unknown version: {_go(data.get('version'))}"
    for key, value in data.items():
        if key == "version":
            continue
        if key != "mig-configs":
            return f"unexpected field: {key}"
        if not isinstance(value, Mapping | None):
            return f"mig-configs must be a mapping of config names, not {_kind(value)}"
        if not value:
            return "at least one entry in 'mig-configs' is required"
        for name, entries in value.items():
            error = _config_error(str(name), entries)
            if error is not None:
                return error
    return None


def _config_error(name: str, entries: object) -> str | None:
    if not isinstance(entries, list | None):
        return f"mig-configs.{name} must be a list of entries, not {_kind(entries)}"
    if not entries:
        return f"at least one entry in '{name}' is required"
    for i, entry in enumerate(entries):
        error = _entry_error(entry)
        if error is not None:
            return f"mig-configs.{name}[{i}]: {error}"
    return None


_ENTRY_FIELDS = ("device-filter", "devices", "mig-enabled", "mig-devices")


def _entry_error(entry: object) -> str | None:
    if not isinstance(entry, Mapping):
        return f"an entry must be a mapping, not {_kind(entry)}"
    for required in ("devices", "mig-enabled"):
        if required not in entry:
            return f"missing required field: {required}"
    for key, value in entry.items():
        error = (
            _field_error(str(key), value) if key in _ENTRY_FIELDS else f"unexpected field: {key}"
        )
        if error is not None:
            return error
    enabled, devices = entry.get("mig-enabled"), entry.get("mig-devices")
    if enabled is True and "mig-devices" not in entry:  # `mig-devices: null` is an empty map
        return "missing required field 'mig-devices' when 'mig-enabled' is true"
    if enabled is False and devices:
        return "MIG devices included when 'mig-enabled' is false"
    return None


def _field_error(key: str, value: object) -> str | None:
    if key == "device-filter":
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            return None
        return f"device-filter must be a string or a list of strings, not {_go(value)}"
    if key == "devices":
        if isinstance(value, str):
            return None if value == "all" else f"invalid string input for 'devices': {value}"
        if isinstance(value, list) and all(_is_int(v) for v in value):
            return None
        return f"devices must be 'all' or a list of GPU indexes, not {_go(value)}"
    if key == "mig-enabled":
        if isinstance(value, bool):
            return None
        return f"mig-enabled must be true or false, not {_go(value)}"
    return _mig_devices_error(value)


_INVALID = "error validating values in 'mig-devices' field: "


def _mig_devices_error(value: object) -> str | None:
    """types.MigConfig.AssertValidFormat (the profile names' own format is not checked)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return f"mig-devices must be a mapping of profile to count, not {_go(value)}"
    for profile, count in value.items():
        if not _is_int(count):
            return f"mig-devices: the count of '{profile}' must be an integer, not {_go(count)}"
        if count < 0:
            return f"{_INVALID}invalid count for '{profile}'"
    if value and not any(count > 0 for count in value.values()):
        return f"{_INVALID}all counts for all MigProfiles are 0"
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return type(value).__name__ if value is not None else "null"


def _go(value: object) -> str:
    return "" if value is None else str(value)


# --- what a node's GPUs become, and what the device plugin advertises --------------------------


def gpu_layout(config: Sequence[MigEntry], gpus: int) -> list[GpuState] | None:
    """Per GPU index, its state once the mig-manager applied ``config``; None when that is not
    known offline (a device-filter, or a GPU no entry names, which keeps its current state)."""
    if any(entry.filtered for entry in config):
        return None
    layout: list[GpuState] = [None] * gpus
    named: set[int] = set()
    for entry in config:
        for index in range(gpus) if entry.devices is None else entry.devices:
            if 0 <= index < gpus:  # an index past the node's GPUs matches nothing
                layout[index] = entry.mig
                named.add(index)
    return layout if len(named) == gpus else None


def single_strategy_error(layout: Sequence[GpuState]) -> str | None:
    """Why the device plugin (``single``) refuses these GPUs, as it says it; None: it accepts."""
    enabled = [state for state in layout if state is not None]
    if not enabled:
        return None
    for index, state in enumerate(layout):
        if state is not None and not any(n > 0 for n in state.values()):
            return f"device {index} has no MIG devices configured"
    types = {p for state in enabled for p, n in state.items() if n > 0}
    if len(types) > 1:
        return "more than one MIG device type present on node"
    if len(enabled) != len(layout):
        return "all devices on the node must be configured with the same migEnabled value"
    return None


def resource_for_profile(profile: str) -> str:
    return "nvidia.com/mig-" + profile.replace("+", ".")


def advertised_mig(layout: Sequence[GpuState], strategy: str) -> dict[str, int]:
    """What the device plugin advertises for these GPUs (``{nvidia.com/gpu: 0}``: it refuses
    them and advertises nothing)."""
    if strategy == "single":
        if single_strategy_error(layout) is not None:
            return {GPU: 0}
        return {GPU: sum(sum(s.values()) if s is not None else 1 for s in layout)}
    if strategy != "mixed":  # none: MIG or not, every GPU is a whole nvidia.com/gpu
        return {GPU: len(layout)}
    out: dict[str, int] = {}
    for state in layout:
        for resource, n in ({GPU: 1} if state is None else _mixed(state)).items():
            out[resource] = out.get(resource, 0) + n
    return dict(sorted(out.items()))


def _mixed(state: Mapping[str, int]) -> dict[str, int]:
    return {resource_for_profile(p): n for p, n in state.items() if n > 0}


def profile_memory_gb(profile: str) -> int | None:
    match = _PROFILE.search(profile)
    return int(match.group(2)) if match else None
