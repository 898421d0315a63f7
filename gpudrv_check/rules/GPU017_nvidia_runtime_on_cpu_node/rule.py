"""GPU017 nvidia-runtime-on-cpu-node: the nvidia RuntimeClass on a CPU-capable pod."""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.pending import node_names
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.GPU012_gpu_request_without_gpu_node.rule import has_gpu

ID = "GPU017"
NVIDIA_HANDLER_PREFIX = "nvidia"


def _handler(ctx: Context, workload: Workload) -> str | None:
    """The nvidia handler the pod's RuntimeClass names, or None."""
    spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
    name = spec.get("runtimeClassName")
    if not isinstance(name, str) or not name:
        return None
    for manifest in ctx.repo.of_kind("RuntimeClass"):
        if manifest.name == name and manifest.api_version.startswith("node.k8s.io/"):
            handler = manifest.get("handler")
            ok = isinstance(handler, str) and handler.startswith(NVIDIA_HANDLER_PREFIX)
            return handler if ok else None
    return name if name.startswith(NVIDIA_HANDLER_PREFIX) else None


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if not repo.nodes:
        return
    placement = repo.placement
    for workload in repo.workloads:
        if not workload.placeable or workload.gpus:
            continue
        handler = _handler(ctx, workload)
        if handler is None:
            continue
        nodes = placement.eligible(workload)
        bare = [n for n in nodes if not has_gpu(n, placement)]
        if not bare:
            continue
        every = len(bare) == len(nodes)
        where = (
            "every node it can land on has"
            if every
            else (
                f"{len(bare)} of the {len(nodes)} nodes it can land on "
                f"{'has' if len(bare) == 1 else 'have'}"
            )
        )
        yield ctx.finding(
            ID,
            workload.manifest,
            (*workload.spec_path, "runtimeClassName"),
            f"{workload.title} runs with RuntimeClass {workload.pod_spec['runtimeClassName']} "
            f"(handler {handler}) but requests no {GPU_RESOURCE}, and {where} no GPU "
            f"({node_names(bare)}): the NVIDIA runtime is configured only on GPU nodes, so "
            f'there the pod sandbox fails with `no runtime for "{handler}" is configured`',
            severity=Severity.ERROR if every else Severity.WARNING,
        )
