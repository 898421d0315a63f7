"""GPU017 nvidia-runtime-on-cpu-node: a pod uses the nvidia RuntimeClass, requests no GPU,
and can land on a node without GPUs.

The RuntimeClass is the pod's `runtimeClassName`: one in the repo whose `handler` starts with
`nvidia` (the toolkit installs `nvidia`, `nvidia-cdi`, `nvidia-legacy`), or, when the repo does
not hold it, a name starting with `nvidia`. A RuntimeClass's `scheduling` is already merged
into the pod (model/admission.py), so one that selects GPU nodes gives no finding. A node has
GPUs as GPU012 decides (allocatable or capacity above 0, else `nvidia.com/gpu.present=true`).
Error when every node the pod can land on lacks GPUs, warning when some do; the finding points
at `runtimeClassName`.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.pending import node_names
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.gpu_request_without_gpu_node import has_gpu

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
            else (f"{len(bare)} of the {len(nodes)} nodes it can land on have")
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
