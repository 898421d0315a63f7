"""GPU012 gpu-request-without-gpu-node: a workload requests `nvidia.com/gpu`, but every node it
can land on has no GPU.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.kueue import never_admitted
from gpudrv_check.model.node import GPU_PRESENT, Node
from gpudrv_check.model.pending import node_names
from gpudrv_check.model.placement import Placement
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.rules.context import Context

ID = "GPU012"


def has_gpu(node: Node, placement: Placement) -> bool:
    count = placement.gpu_count(node)
    return count > 0 if count is not None else node.is_gpu


def _bound_finding(ctx: Context, workload: Workload, who: str, listed: bool) -> Finding:
    """A pod bound with spec.nodeName to a node without a GPU: no scheduler places it. `listed`:
    the inventory gives the node's allocatable, without the GPU resource (the kubelet admits
    the pod and runs it without a GPU); else what the node lists is not known."""
    node = workload.node_name
    bound = f"{who} requests {workload.gpus} {GPU_RESOURCE} per pod and is bound with spec.nodeName"
    if listed:
        message = (
            f"{bound} to {node}, whose allocatable does not list {GPU_RESOURCE}: the kubelet "
            "admits it anyway (it drops extended resources the node does not list, "
            "lifecycle/predicate.go removeMissingExtendedResources) and it runs without a GPU"
        )
    else:
        message = (
            f"{bound} to {node}, which the inventory does not show with a GPU ({GPU_PRESENT} is "
            f'not "true" and no {GPU_RESOURCE} capacity is given): no scheduler places it; the '
            f"node's kubelet runs it without a GPU when the node does not list {GPU_RESOURCE}, "
            "and rejects it when it lists too few"
        )
    return ctx.finding(
        ID,
        workload.manifest,
        workload.gpu_request_path() or (*workload.spec_path, "nodeName"),
        message,
        hint="Bind the pod to a GPU node (or drop spec.nodeName and let the scheduler choose); a "
        "node without a running device plugin advertises no GPU.",
        severity=Severity.WARNING if listed else None,
    )


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if not repo.nodes:
        return
    placement = repo.placement
    held = never_admitted(repo)  # Kueue never admits them: no pod ever asks for a node
    for workload in repo.workloads:
        if not workload.placeable or not workload.gpus or (held and id(workload) in held):
            continue
        nodes = placement.eligible(workload)
        if not nodes or any(has_gpu(n, placement) for n in nodes):
            continue
        who = workload.title
        if workload.node_name is not None:
            listed = placement.allocatable(nodes[0]) is not None
            yield _bound_finding(ctx, workload, who, listed)
            continue
        yield ctx.finding(
            ID,
            workload.manifest,
            workload.gpu_request_path() or workload.spec_path,
            f"{who} requests {workload.gpus} {GPU_RESOURCE} per pod, but none of the nodes it "
            f'can land on has a GPU ({node_names(nodes)}: {GPU_PRESENT} is not "true" and no '
            f"{GPU_RESOURCE} capacity is given); its pods would stay Pending with "
            f'"Insufficient {GPU_RESOURCE}"',
        )
