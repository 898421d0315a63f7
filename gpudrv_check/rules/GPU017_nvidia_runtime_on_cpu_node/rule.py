"""GPU017 nvidia-runtime-on-cpu-node: the nvidia RuntimeClass on a CPU-capable pod."""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.node import Node
from gpudrv_check.model.operands import TOOLKIT, Cell, OperandPlacement
from gpudrv_check.model.pending import node_names
from gpudrv_check.model.placement import Placement
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.nvidia.operands import OPERANDS
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


def _toolkit_cell(operands: OperandPlacement, node: Node) -> Cell | None:
    """The container toolkit's cell on the node when the repo deploys the toolkit (its
    DaemonSet or the operator configuration), else None: then GPUs stand for the runtime."""
    if TOOLKIT not in operands.operands:
        return None
    cell = operands.cells.get(node.name, {}).get(TOOLKIT)
    if cell is not None and cell.disabled:
        return None  # toolkit.enabled: false: installed on the hosts, not by the operator
    return cell


def _has_runtime(node: Node, placement: Placement, operands: OperandPlacement) -> bool:
    """Whether the nvidia runtime handler exists on the node: where the toolkit runs, which is
    not every GPU node (vm-passthrough and vm-vgpu nodes get no toolkit)."""
    if TOOLKIT not in operands.operands:
        return has_gpu(node, placement)
    cell = operands.cells.get(node.name, {}).get(TOOLKIT)
    if cell is None:
        return False  # a node no operand reaches or is labelled for
    if cell.disabled:
        return has_gpu(node, placement)  # toolkit.enabled: false: the hosts provide it
    return cell.running


def _no_toolkit_detail(operands: OperandPlacement, nodes: list[Node]) -> str:
    """`pt-a: <why the toolkit does not run there> (file:line)`, for the first node."""
    cell = _toolkit_cell(operands, nodes[0])
    why = cell.causes[0].cited() if cell is not None and cell.causes else "no toolkit pod"
    return f"{nodes[0].name}: {why}"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if not repo.nodes:
        return
    placement = repo.placement
    operands = None  # the operands' placement, made for the first pod with an nvidia handler
    for workload in repo.workloads:
        if not workload.placeable or workload.gpus:
            continue
        handler = _handler(ctx, workload)
        if handler is None:
            continue
        if operands is None:
            operands = repo.operand_placement
        nodes = placement.eligible(workload)
        bare = [n for n in nodes if not _has_runtime(n, placement, operands)]
        if not bare:
            continue
        # GPU nodes the toolkit does not run on: the runtime is missing there too
        no_toolkit = [n for n in bare if has_gpu(n, placement)]
        every = len(bare) == len(nodes)
        where = (
            "every node it can land on has"
            if every
            else (
                f"{len(bare)} of the {len(nodes)} nodes it can land on "
                f"{'has' if len(bare) == 1 else 'have'}"
            )
        )
        head = (
            f"{workload.title} runs with RuntimeClass {workload.pod_spec['runtimeClassName']} "
            f"(handler {handler}) but requests no {GPU_RESOURCE}, and {where} "
        )
        failure = f'so there the pod sandbox fails with `no runtime for "{handler}" is configured`'
        if not no_toolkit:
            message = (
                f"{head}no GPU ({node_names(bare)}): the NVIDIA runtime is configured only on "
                f"GPU nodes, {failure}"
            )
            hint = None
        else:
            message = (
                f"{head}no NVIDIA container toolkit ({node_names(bare)}; "
                f"{_no_toolkit_detail(operands, no_toolkit)}): the toolkit configures the "
                f"NVIDIA runtime only on the nodes it runs on, {failure}"
            )
            hint = (
                f"Keep the pod on nodes the container toolkit runs on (`nodeSelector: "
                f'{{{OPERANDS[TOOLKIT].deploy_label}: "true"}}`, or `scheduling.nodeSelector` '
                "on the RuntimeClass), or drop `runtimeClassName` if the pod needs no GPU."
            )
        yield ctx.finding(
            ID,
            workload.manifest,
            (*workload.spec_path, "runtimeClassName"),
            message,
            hint=hint,
            severity=Severity.ERROR if every else Severity.WARNING,
        )
