"""GPU011 cuda-driver-too-old: a CUDA image can land on nodes whose driver is too old for it.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.cuda import CudaFit, cuda_fits, excluding_expression, expression_text
from gpudrv_check.model.kueue import Held, never_admitted
from gpudrv_check.model.node import Node
from gpudrv_check.model.pending import node_names
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, names

ID = "GPU011"


def _listed(pairs: list[tuple[Node, str]]) -> str:
    shown = sorted(pairs, key=lambda p: p[0].name)[:MAX_NAMES]
    return names([f"{n.name} ({v})" for n, v in shown], total=len(pairs))


def _hint(
    excluded: list[tuple[Node, str]],
    floor: str,
    nodes: list[Node],
    stays: bool,
    memo: dict,
    unknown: list[Node] | None = None,
) -> str:
    """Exclude the nodes by affinity when some node would be left, else upgrade their driver.
    `unknown`: nodes it can land on whose driver no label says (none known to run it)."""
    names = node_names([n for n, _ in excluded])
    upgrade = f"upgrade the driver on {names} to {floor} or newer"
    if unknown and not stays:
        return (
            f"No node it can land on is known to run it ({node_names(unknown)} "
            f"{'carries' if len(unknown) == 1 else 'carry'} no driver label, the GPU Feature "
            f"Discovery labels nvidia.com/cuda.driver-version.*): {upgrade}, or label the "
            "drivers of the others so they are checked."
        )
    expression = (
        excluding_expression(floor, [n for n, _ in excluded], nodes, memo) if stays else None
    )
    if expression is None and stays:
        # some node runs it, but no one expression sets the old ones apart (a branch between
        # them, or a few host names)
        return (
            "Keep it off those nodes with a required node affinity on a label that only they "
            f"(or only the others) carry; or {upgrade}."
        )
    if expression is None:
        return f"No node it can land on has a new enough driver: {upgrade}."
    return (
        "Add to the pod template's required node affinity (every nodeSelectorTerm) the "
        f"expression {expression_text(expression)}, so it is scheduled only where it runs; or "
        f"{upgrade}."
    )


def _compat_floor(floor: str, before: str = "") -> str:
    """The minor-version-compatibility floor as the table gives it: a branch (`branch 525`,
    after `before`), or a full version where the family needs one (`driver 450.80.02`: CUDA
    11.0 shipped with an older 450 driver)."""
    return f"driver {floor}" if "." in floor else f"{before}branch {floor}"


def _verdict(fit: CudaFit, nodes: list[Node], memo: dict) -> tuple[str, str, Severity]:
    """(message after the workload's name, hint, severity): the same for every workload whose
    image and node set are the same."""
    need = fit.need
    image = f"image {fit.container.image} carries CUDA {need.cuda_version}"
    if fit.too_old:
        compat = fit.floor != need.min_driver
        floor = (
            f"{_compat_floor(fit.floor, 'driver ')} or newer (minor version compatibility"
            + (f"; {need.min_driver} for full support)" if need.min_driver else ")")
            if compat
            else f"driver {fit.floor} or newer"
        )
        if fit.all_too_old:
            message = (
                f"{image}, which needs {floor}; every node it can land on is older: "
                f"{_listed(fit.too_old)}; it would be scheduled and fail at run time"
            )
            severity = Severity.ERROR
        else:
            message = (
                f"{image}, which needs {floor}; {len(fit.too_old)} of the {len(nodes)} "
                f"nodes it can land on {'is' if len(fit.too_old) == 1 else 'are'} older: "
                f"{_listed(fit.too_old)}; a pod placed there fails at run time"
            )
            severity = Severity.WARNING
        stays = bool(fit.limited or fit.fine)
        hint = _hint(fit.too_old, fit.floor, nodes, stays=stays, memo=memo, unknown=fit.unknown)
    else:
        message = (
            f"{image}, which needs driver {need.min_driver} for full support; "
            f"{_listed(fit.limited)} {'runs' if len(fit.limited) == 1 else 'run'} it only under "
            f"CUDA minor version compatibility ({_compat_floor(fit.floor)} or newer): newer PTX "
            "cannot be JIT-compiled there and APIs that need a newer driver fail"
        )
        severity = Severity.INFO
        hint = _hint(
            fit.limited, need.min_driver or fit.floor, nodes, stays=bool(fit.fine), memo=memo
        )
    return message, hint, severity


def _unknown_images(ctx: Context, held: Held) -> Iterator[Finding]:
    """Info, once per image and namespace (at its first container requesting GPUs there), when
    the table cannot say which CUDA it carries: unknown is said, never taken for a fit. Per
    namespace, so that what is said of a namespace depends on it alone (the partition cache).
    Not of a workload Kueue never admits (`held`): its pods never land on a node, so there is
    no driver to check them against (GPU010 says why)."""
    from gpudrv_check.nvidia.cuda import driver_requirement

    table = ctx.repo.cuda_table
    seen: set[tuple[str, str]] = set()
    for workload in ctx.repo.workloads:
        if not workload.placeable or (held and id(workload) in held):
            continue
        for container in workload.containers:
            image = container.image
            if not container.gpus or not image or (workload.namespace, image) in seen:
                continue
            seen.add((workload.namespace, image))
            if driver_requirement(table, image) is not None:
                continue
            yield ctx.finding(
                ID,
                workload.manifest,
                (*container.path, "image"),
                f"{workload.title}: the CUDA version of image {image} is not known (no rule of "
                "the CUDA table matches its tag), so whether the drivers of the nodes it lands "
                "on run it is not checked",
                "Add the image to `cuda: {images: [...]}` in .gpudrv-check.yaml (an exact tag or "
                "a tag_regex with its CUDA version), or use a tag that names its CUDA build "
                "(-cu128, cuda12.8).",
                severity=Severity.INFO,
            )


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if not repo.nodes:
        return
    held = never_admitted(repo)  # Kueue never admits them: their pods never start (GPU010)
    yield from _unknown_images(ctx, held)
    minor_compat = ctx.params(ID).get("minor_version_compatibility", True) is not False
    table = repo.cuda_table
    placement = repo.placement
    for workload in repo.workloads:
        if not workload.placeable or (held and id(workload) in held):
            continue
        nodes = placement.eligible(workload)
        if not nodes:
            continue  # GPU010
        # the node set by the list's identity: constraint sets that keep the same nodes share
        # one list for the run (placement.py `eligible`), and a fit and its verdict depend on
        # the image and the nodes alone
        key = ("nodes", id(nodes))
        fits = cuda_fits(workload, nodes, table, minor_compat, placement.memo, key)
        fits = [f for f in fits if f.too_old or f.limited]
        if not fits:
            continue
        fit = fits[0]
        memo_key = (ID, key, fit.container.image, minor_compat)
        verdict = placement.memo.get(memo_key)
        if verdict is None:
            verdict = placement.memo[memo_key] = _verdict(fit, nodes, placement.memo)
        message, hint, severity = verdict
        who = workload.title
        path = (*fit.container.path, "image")
        yield ctx.finding(ID, workload.manifest, path, f"{who}: {message}", hint, severity=severity)
