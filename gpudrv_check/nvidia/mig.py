"""MIG as the GPU Operator's mig-manager and the device plugin see it.

- NVIDIA/mig-parted config (``version: v1``, ``mig-configs: {<name>: [{devices, mig-enabled,
  mig-devices: {"<profile>": count}}]}``): the node label ``nvidia.com/mig.config`` names one of
  its ``mig-configs`` (the mig-manager sets ``nvidia.com/mig.config.state=failed`` otherwise);
- NVIDIA/k8s-device-plugin internal/rm/rm.go: with the ``mixed`` strategy each MIG device is
  advertised as ``nvidia.com/mig-<profile>`` (``+`` in a profile becomes ``.``:
  ``1g.5gb+me`` → ``nvidia.com/mig-1g.5gb.me``); with ``single`` every MIG device is a
  ``nvidia.com/gpu``; with ``none`` MIG devices are not advertised;
- a profile ``<g>g.<m>gb`` holds ``m`` GB of the GPU's memory: it cannot exist on a GPU with
  less (the one fit this checker can tell from GFD's ``nvidia.com/gpu.memory`` label, in MiB).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "MIG_CONFIG_LABEL",
    "mig_configs",
    "advertised_mig",
    "profile_memory_gb",
    "resource_for_profile",
]

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GPU = "nvidia.com/gpu"
_PROFILE = re.compile(r"(\d+)g\.(\d+)gb")


def mig_configs(data: object) -> tuple[dict[str, dict[str, int] | None], str | None]:
    """A mig-parted config → {name: MIG devices per GPU (None: MIG disabled)}, or an error."""
    if not isinstance(data, Mapping):
        return {}, "the mig-parted config is not a YAML mapping"
    configs = data.get("mig-configs")
    if not isinstance(configs, Mapping):
        return {}, "the mig-parted config has no mig-configs"
    out: dict[str, dict[str, int] | None] = {}
    for name, entries in configs.items():
        out[str(name)] = _devices(entries)
    return out, None


def _devices(entries: object) -> dict[str, int] | None:
    """The MIG devices of a config's first entry that applies to every device, summed."""
    if not isinstance(entries, list):
        return {}
    devices: dict[str, int] = {}
    enabled = False
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("device-filter") is not None:
            return {}  # differs per device: not known without the hardware
        if entry.get("mig-enabled") is not True:
            continue
        enabled = True
        found = entry.get("mig-devices")
        for profile, count in found.items() if isinstance(found, Mapping) else ():
            if isinstance(count, int) and not isinstance(count, bool):
                devices[str(profile)] = devices.get(str(profile), 0) + count
    return devices if enabled else None


def resource_for_profile(profile: str) -> str:
    return "nvidia.com/mig-" + profile.replace("+", ".")


def advertised_mig(devices: Mapping[str, int] | None, strategy: str, gpus: int) -> dict[str, int]:
    """What the device plugin advertises on ``gpus`` GPUs that all carry ``devices``."""
    if devices is None:
        return {GPU: gpus}  # MIG disabled: whole GPUs
    if strategy == "mixed":
        return {resource_for_profile(p): n * gpus for p, n in sorted(devices.items())}
    if strategy == "single":
        return {GPU: sum(devices.values()) * gpus}
    return {}


def profile_memory_gb(profile: str) -> int | None:
    match = _PROFILE.search(profile)
    return int(match.group(2)) if match else None
