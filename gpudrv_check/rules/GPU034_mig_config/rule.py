"""GPU034 mig-config: a node's `nvidia.com/mig.config` names no MIG config, or one that cannot
fit its GPU, or a workload asks for MIG devices the strategy never advertises.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.located import Path
from gpudrv_check.model.mig import MISSING_KEY, MigState, build_mig
from gpudrv_check.model.node import Node
from gpudrv_check.nvidia.mig import MIG_CONFIG_LABEL, profile_memory_gb
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


def _fit(ctx: Context, state: MigState, node: Node, name: str, path: Path) -> Iterator[Finding]:
    memory = node.labels.get(MEMORY_LABEL, "")
    devices = state.profiles.get(name) or {}
    if not memory.isdigit() or len(memory) > 9:
        return
    gpu_gb = int(memory) / 1024
    too_big = [p for p in devices if (gb := profile_memory_gb(p)) is not None and gb > gpu_gb + 1]
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


def _request_findings(ctx: Context, state: MigState) -> Iterator[Finding]:
    if state.strategy == "mixed":
        return
    for workload in ctx.repo.workloads:
        if not workload.has_pods:
            continue
        mig = sorted(r for r in workload.requests if r.startswith("nvidia.com/mig-"))
        if not mig:
            continue
        from gpudrv_check.model.pending import resource_request_path

        yield ctx.finding(
            ID,
            workload.manifest,
            resource_request_path(workload, mig[0]) or workload.spec_path,
            f"{workload.title} requests {mig[0]}, but with "
            f"mig.strategy {state.strategy} the device plugin advertises "
            + ("MIG devices as nvidia.com/gpu" if state.strategy == "single" else "no MIG device")
            + f": no node ever offers {mig[0]}",
            hint="Request nvidia.com/gpu (single strategy), or set mig.strategy: mixed.",
        )


def check(ctx: Context) -> Iterator[Finding]:
    state = build_mig(ctx.repo)
    if state is None:
        return
    if state.error is not None and state.manifest is not None:
        missing = state.error == MISSING_KEY
        data = state.manifest.get("data")
        yield ctx.finding(
            ID,
            state.manifest,
            ("data", "config.yaml") if not missing else ("data",) if data else ("metadata",),
            f"{state.source}: {state.error}; the mig-manager cannot apply any MIG config",
            "Put the mig-parted config under the key config.yaml (`kubectl create configmap "
            f"{state.manifest.name} --from-file=config.yaml`)."
            if missing
            else None,
        )
        return
    yield from _node_findings(ctx, state)
    yield from _request_findings(ctx, state)
