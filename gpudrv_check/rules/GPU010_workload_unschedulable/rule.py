"""GPU010 workload-unschedulable: a workload's pods can land on no node of the inventory.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.located import field_path_text
from gpudrv_check.k8s.taints import TAINT_NODE_UNSCHEDULABLE
from gpudrv_check.model.admission import EXTENDED_RESOURCE_TOLERATION, extended_resources
from gpudrv_check.model.pending import (
    CAUSE_AFFINITY,
    CAUSE_GPU,
    CAUSE_NODE_NAME,
    CAUSE_TAINT,
    Pending,
    explain_pending,
    resource_request_path,
)
from gpudrv_check.model.workload import GPU_RESOURCE, Workload
from gpudrv_check.rules.context import Context

ID = "GPU010"


def _subject(workload: Workload) -> str:
    who = workload.title
    if workload.template_only:
        return f"{who}: the pods made from it would stay Pending"
    if workload.node_name is not None:
        return f"{who} never runs"
    if workload.kind == "DaemonSet":
        return f"{who} runs on no node"
    if workload.kind == "Pod":
        return f"{who} stays Pending"
    return f"{who}: its pods stay Pending"


def _hint(workload: Workload, pending: Pending) -> str:
    if pending.cause == CAUSE_AFFINITY and pending.pinned:
        return (
            "Name a node of the inventory in the matchFields metadata.name values, or drop the "
            "pin: no label makes a node match a name; `gpudrv-check place --workload "
            f"{workload.key}` shows every node's verdict."
        )
    if pending.cause == CAUSE_AFFINITY:
        return (
            "Relax this constraint, or label a node so that it matches; `gpudrv-check place "
            f"--workload {workload.key}` shows every node's verdict."
        )
    if pending.cause == CAUSE_TAINT:
        taint = pending.taint
        if taint and taint.get("key") == TAINT_NODE_UNSCHEDULABLE:
            return (
                "The nodes it may use are cordoned: uncordon one (`kubectl uncordon NODE`) once "
                "its maintenance is over, or widen the constraints."
            )
        if taint and taint.get("key"):
            hint = (
                f"Tolerate the taint, e.g. `- {{key: {taint['key']}, operator: Exists, effect: "
                f"{taint.get('effect')}}}` under tolerations, or take it off the nodes."
            )
            if _plugin_would_tolerate(workload, taint):
                hint += (
                    f" If the API server runs the {EXTENDED_RESOURCE_TOLERATION} admission "
                    f"plugin (GKE and EKS do), say so: `cluster.admission: "
                    f"[{EXTENDED_RESOURCE_TOLERATION}]` in .gpudrv-check.yaml."
                )
            return hint
        return "Add a toleration for the nodes' taints, or take the taints off."
    if pending.cause == CAUSE_GPU and workload.node_name is not None:
        # bound: the scheduler is bypassed, only that node's kubelet admits it (another node
        # added to the cluster changes nothing)
        bound_short = pending.resource or GPU_RESOURCE
        if bound_short == "pods":
            return (
                "Bind the pod to a node that takes more pods, or drop spec.nodeName and let the "
                "scheduler choose."
            )
        return (
            f"Request less {bound_short} per pod, or bind it to a node with enough {bound_short} "
            "free, or drop spec.nodeName and let the scheduler choose."
        )
    if pending.cause == CAUSE_GPU:  # a resource the nodes lack: the one at the finding's key
        short = pending.resource
        if short is None or short == GPU_RESOURCE:
            return f"Request fewer {GPU_RESOURCE} per pod, or add a node with enough GPUs."
        if short == "pods":
            return (
                "The nodes take no more pods (their allocatable pods): add a node, or raise the "
                "kubelet's maxPods on them."
            )
        return f"Request less {short} per pod, or add a node with enough {short}."
    if pending.cause == CAUSE_NODE_NAME:
        return (
            "Name a node of the inventory in spec.nodeName, or drop it and let the scheduler "
            "choose."
        )
    return "Change the constraint at this line."


def _plugin_would_tolerate(workload: Workload, taint: Mapping[str, Any]) -> bool:
    """The taint is on an extended resource the pod requests, with the effect the
    ExtendedResourceToleration plugin tolerates, and the config does not say it runs."""
    return (
        not workload.admitted_by(EXTENDED_RESOURCE_TOLERATION)
        and taint.get("effect") == "NoSchedule"
        and taint.get("key") in extended_resources(workload)
    )


def _admission_detail(ctx: Context, workload: Workload, pending: Pending) -> str | None:
    """What a taint-caused GPU010 says about the toleration no manifest shows."""
    taint = pending.taint
    if (
        pending.cause != CAUSE_TAINT
        or not taint
        or taint.get("key") not in extended_resources(workload)
    ):
        return None
    key, effect = taint.get("key"), taint.get("effect")
    if EXTENDED_RESOURCE_TOLERATION in ctx.repo.config.cluster.admission:
        return (
            f"the {EXTENDED_RESOURCE_TOLERATION} admission plugin the config lists tolerates "
            f"{key} with effect NoSchedule only, not {effect}"
        )
    if effect != "NoSchedule":
        return None
    return (
        f"on a cluster running the {EXTENDED_RESOURCE_TOLERATION} admission plugin (GKE, EKS) "
        f"the API server would add this toleration for the {key} the pods request, but "
        "`cluster.admission` in the config does not list it"
    )


def finding_for(ctx: Context, workload: Workload) -> Finding | None:
    placement = ctx.repo.placement
    pending = explain_pending(workload, placement)
    if pending is None:
        return None
    message = f"{_subject(workload)}: {pending.message}"
    details = list(pending.details)
    extra = _admission_detail(ctx, workload, pending)
    if extra is not None:
        details.append(extra)
    path = pending.path
    if workload.admitted:
        details.append("set outside the pod template: " + "; ".join(workload.admitted))
        if workload.admitted_at is not None and workload.manifest.get(*path) is None:
            path = workload.admitted_at  # the constraint is not written: point at its source
    if details:
        message += (" " if message.endswith(".") else ". ") + "Why: "
        message += "; ".join(details) + "."
    return ctx.finding(ID, workload.manifest, path, message, _hint(workload, pending))


def pending_replicas_finding(ctx: Context, workload: Workload) -> Finding | None:
    """Some replicas run, the others find every node's room taken (model/occupancy.py)."""
    replicas = ctx.repo.occupancy.replicas(workload)
    if replicas is None or not replicas.pending or not replicas.short:
        return None  # anti-affinity alone: GPU021's finding
    pending = replicas.pending
    names = ", ".join(replicas.pod_name(i) for i in pending[:3])
    names += f" and {len(pending) - 3} more" if len(pending) > 3 else ""
    resource = replicas.short[0]
    message = (
        f"{workload.title}: {len(pending)} of "
        f"{len(replicas.nodes)} pods stay Pending ({names}), the nodes they may use being full: "
        f"{replicas.message}"
    )
    path = resource_request_path(workload, resource) or workload.spec_path
    shows = f"(`gpudrv-check place --workload {workload.key}` shows who holds what)"
    count = _count_text(workload)
    if resource == "pods":  # no pod requests it: the nodes' allocatable pods are taken
        hint = (
            f"Lower {count}, or add nodes: the pods that run already fill every node this "
            f"one may use up to its allocatable pods {shows}."
        )
    else:
        hint = (
            f"Lower {count} or the {resource} each pod requests, or add nodes: the pods "
            f"that run already hold the {resource} of every node this one may use {shows}."
        )
    return ctx.finding(ID, workload.manifest, path, message, hint)


def _count_text(workload: Workload) -> str:
    """The key the pod count comes from (a RayCluster group's minReplicas when it raises the
    replicas, a Job's completions when they cap parallelism), else "the replicas"."""
    path = workload.replicas_path
    return f"`{field_path_text(path)}`" if path else "the replicas"


def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.repo.nodes:
        return
    for workload in ctx.repo.workloads:
        if not workload.placeable:
            continue
        finding = finding_for(ctx, workload) or pending_replicas_finding(ctx, workload)
        if finding is not None:
            yield finding
