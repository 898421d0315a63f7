"""GPU034 mig-config: a node's `nvidia.com/mig.config` names no MIG config, or one that cannot
fit its GPU, or a workload asks for MIG devices the strategy never advertises.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.located import Path
from gpudrv_check.model.mig import GPU_COUNT_LABEL, MISSING_KEY, MigState, build_mig
from gpudrv_check.model.node import Node
from gpudrv_check.model.pending import node_names, resource_request_path
from gpudrv_check.nvidia.device_plugin import PRODUCT_LABEL
from gpudrv_check.nvidia.mig import (
    MIG_CONFIG_LABEL,
    gpu_layout,
    profile_memory_gb,
    single_strategy_error,
)
from gpudrv_check.rules.context import Context

ID = "GPU034"
MEMORY_LABEL = "nvidia.com/gpu.memory"


def _node_findings(ctx: Context, state: MigState) -> Iterator[Finding]:
    for node in ctx.repo.nodes:
        name = state.nodes.get(node.name)
        if name is None:
            continue
        path = node.label_path(MIG_CONFIG_LABEL)
        if name not in state.profiles:
            import difflib  # a misnamed config only: not on every run's start-up path

            close = difflib.get_close_matches(name, sorted(state.profiles), n=3, cutoff=0.7)
            hint = f"Did you mean {', '.join(close)}?" if close else None
            yield ctx.finding(
                ID,
                node,
                path,
                f"node {node.name} asks for MIG config {name} ({MIG_CONFIG_LABEL}), which "
                f"{state.source} does not have: the mig-manager fails "
                "(nvidia.com/mig.config.state=failed) and the GPUs stay as they were",
                hint=hint or "Name a config of the mig-parted config, e.g. all-disabled.",
            )
            continue
        yield from _fit(ctx, state, node, name, path)
        finding = _single_finding(ctx, state, node, name, path)
        if finding is not None:
            yield finding


def _fit(ctx: Context, state: MigState, node: Node, name: str, path: Path) -> Iterator[Finding]:
    memory = node.labels.get(MEMORY_LABEL, "")
    if not memory.isdigit() or len(memory) > 9:
        return
    profiles = {p: None for entry in state.profiles[name] for p in entry.mig or ()}
    gpu_gb = int(memory) / 1024
    too_big = [p for p in profiles if (gb := profile_memory_gb(p)) is not None and gb > gpu_gb + 1]
    if too_big:
        yield ctx.finding(
            ID,
            node,
            path,
            f"node {node.name} asks for MIG config {name}, whose {', '.join(too_big)} "
            f"device(s) need more memory than its GPU has ({memory} MiB, {MEMORY_LABEL}): the "
            "mig-manager cannot create them (nvidia.com/mig.config.state=failed)",
            hint="Choose a profile of this GPU model (the 7g profile holds the whole GPU).",
        )


#: the fix of a config the device plugin refuses under `single`, by its error (nvidia/mig.py)
_SINGLE_HINTS = {
    "more than one MIG device type present on node": (
        "Use mig.strategy: mixed (each profile is then its own nvidia.com/mig-<profile>), or a "
        "config with one profile on every GPU."
    ),
    "all devices on the node must be configured with the same migEnabled value": (
        "Enable MIG on every GPU of the node or on none, or use mig.strategy: mixed."
    ),
}
_EMPTY_HINT = "Give every MIG-enabled GPU its mig-devices, or use mig.strategy: mixed."


def _single_finding(
    ctx: Context, state: MigState, node: Node, name: str, path: Path
) -> Finding | None:
    """A config the device plugin refuses under ``single`` (device_map.go
    ``buildDeviceMapFromConfigResources``, ``assertAllMigDevicesAreValid``)."""
    if state.strategy_of(node) != "single":
        return None
    config = state.profiles[name]
    count = node.labels.get(GPU_COUNT_LABEL, "")
    if count.isdigit() and len(count) <= 4:
        layout = gpu_layout(config, int(count))
    elif all(entry.devices is None for entry in config):
        layout = gpu_layout(config, 1)  # every GPU alike: one stands for all
    else:
        return None
    error = single_strategy_error(layout) if layout else None
    if error is None:
        return None
    # GFD labels such a node invalid (internal/lm/mig-strategy.go newInvalidMigStrategyLabeler)
    product = node.labels.get(PRODUCT_LABEL, "").split("-MIG-")[0] or "<model>"
    return ctx.finding(
        ID,
        node,
        path,
        f"node {node.name} asks for MIG config {name}, which the device plugin refuses with "
        f'{state.strategy_text(node)} ("invalid MIG configuration: {error}"): it advertises no '
        f"nvidia.com/gpu there, and GFD sets {PRODUCT_LABEL} to {product}-MIG-INVALID and "
        "nvidia.com/gpu.count to 0",
        hint=_SINGLE_HINTS.get(error, _EMPTY_HINT),
    )


def _request_findings(ctx: Context, state: MigState) -> Iterator[Finding]:
    nodes = [n for n in ctx.repo.nodes if n.name in state.nodes]
    strategies = {state.strategy_of(n) for n in nodes}
    if "mixed" in strategies or not nodes:
        return
    texts = sorted({state.strategy_text(n) for n in nodes})
    if strategies == {"single"}:
        what = "MIG devices as nvidia.com/gpu"
    else:
        what = "no MIG device" if strategies == {"none"} else "no nvidia.com/mig-* resource"
    for workload in ctx.repo.workloads:
        if not workload.has_pods:
            continue
        mig = sorted(r for r in workload.requests if r.startswith("nvidia.com/mig-"))
        if not mig:
            continue
        yield ctx.finding(
            ID,
            workload.manifest,
            resource_request_path(workload, mig[0]) or workload.spec_path,
            f"{workload.title} requests {mig[0]}, but with {' or '.join(texts)} the device "
            f"plugin advertises {what}: no node ever offers {mig[0]}",
            hint="Request nvidia.com/gpu (single strategy), or set mig.strategy: mixed.",
        )


#: the fix of a mig-parted config mig-parted refuses, by what it says (nvidia/mig.py
#: `mig_configs`, after the `mig-configs.<name>[i]: ` of an entry's error)
_CONFIG_HINTS = (
    ("unable to parse with missing 'version'", "Add `version: v1` at the top of config.yaml."),
    ("unknown version", "Set `version: v1`, the only version mig-parted reads."),
    (
        "unexpected field",
        "Remove the field: mig-parted reads `version` and `mig-configs`, and in an entry "
        "`devices`, `mig-enabled`, `mig-devices` and `device-filter`.",
    ),
    (
        "missing required field:",
        "Give every entry `devices: all` (or a list of GPU indexes) and `mig-enabled`.",
    ),
    (
        "missing required field 'mig-devices'",
        "Add `mig-devices: {<profile>: <count>}` to the entry, or set `mig-enabled: false`.",
    ),
    ("MIG devices included", "Set `mig-enabled: true`, or remove the entry's `mig-devices`."),
    ("invalid string input for 'devices'", "Write `devices: all` or a list of GPU indexes."),
    ("devices must be", "Write `devices: all` or a list of GPU indexes."),
    ("at least one entry", "Give each config at least one entry (`- devices: all` ...)."),
)
_CONFIG_HINT = (
    "Write config.yaml as mig-parted reads it: `version: v1` and `mig-configs:`, a mapping of "
    "config names to lists of entries (`devices`, `mig-enabled`, `mig-devices`)."
)


def _config_finding(ctx: Context, state: MigState) -> Finding | None:
    manifest, error = state.manifest, state.error
    if manifest is None or error is None:
        return None
    if error == MISSING_KEY:
        data = manifest.get("data")
        return ctx.finding(
            ID,
            manifest,
            ("data",) if data else ("metadata",),
            f"{state.source}: {error}; the mig-manager cannot apply any MIG config",
            "Put the mig-parted config under the key config.yaml (`kubectl create configmap "
            f"{manifest.name} --from-file=config.yaml`).",
        )
    cause = error.split("]: ", 1)[-1]
    hint = next((h for start, h in _CONFIG_HINTS if cause.startswith(start)), _CONFIG_HINT)
    nodes = node_names(sorted(state.nodes))
    return ctx.finding(
        ID,
        manifest,
        ("data", "config.yaml"),
        f"{state.source}: mig-parted refuses its config.yaml ({error}), so the mig-manager "
        f"applies no MIG config: nvidia.com/mig.config.state=failed on {nodes}",
        hint,
    )


def check(ctx: Context) -> Iterator[Finding]:
    state = build_mig(ctx.repo)
    if state is None:
        return
    if state.error is not None and state.manifest is not None:
        finding = _config_finding(ctx, state)
        if finding is not None:
            yield finding
        return
    yield from _node_findings(ctx, state)
    yield from _request_findings(ctx, state)
