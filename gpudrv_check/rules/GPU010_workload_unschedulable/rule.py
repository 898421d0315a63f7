"""GPU010 workload-unschedulable: a workload's pods can land on no node of the inventory.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpudrv_check.core.finding import Finding, names
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import field_path_text
from gpudrv_check.k8s.podaffinity import HOSTNAME_LABEL
from gpudrv_check.k8s.taints import TAINT_NODE_UNSCHEDULABLE
from gpudrv_check.k8s.topologyspread import FIELD as SPREAD_FIELD
from gpudrv_check.k8s.topologyspread import REASON_SPREAD
from gpudrv_check.model import kueue as kq
from gpudrv_check.model.admission import EXTENDED_RESOURCE_TOLERATION, extended_resources
from gpudrv_check.model.occupancy import Replicas, anti_affinity_refusals
from gpudrv_check.model.pending import (
    CAUSE_AFFINITY,
    CAUSE_GPU,
    CAUSE_NODE_NAME,
    CAUSE_TAINT,
    Pending,
    explain_pending,
    resource_request_path,
)
from gpudrv_check.model.placement import TAINT, UNSCHEDULABLE
from gpudrv_check.model.spread import counting_constraint
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
    """Some replicas run, the others find every node's room taken (model/occupancy.py), or,
    with topology spread that must hold, the domains with room at their skew limit."""
    replicas = ctx.repo.occupancy.replicas(workload)
    if replicas is None or not replicas.pending:
        return None
    if not replicas.short:
        if _SKEW.search(replicas.message) and not anti_affinity_refusals(replicas.message):
            return _skew_finding(ctx, workload, replicas)
        return None  # anti-affinity alone: GPU021's finding
    pending = replicas.pending
    shown = names([replicas.pod_name(i) for i in pending[:3]], 3, total=len(pending))
    resource = replicas.short[0]
    message = (
        f"{workload.title}: {len(pending)} of "
        f"{len(replicas.nodes)} pods stay Pending ({shown}), the nodes they may use being full: "
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


#: the PodTopologySpread filter's skew reason (plugin.go ErrReasonConstraintsNotMatch), not
#: its missing-label one, in the scheduler's message
_SKEW = lazy_compile(re.escape(REASON_SPREAD) + r"(?! \(missing)")


def _skew_finding(ctx: Context, workload: Workload, replicas: Replicas) -> Finding:
    """Replicas Pending because every domain with room already holds the fewest pods of any
    domain plus maxSkew (podtopologyspread filtering.go `Filter`), at the constraint's
    maxSkew."""
    placement = ctx.repo.placement
    counting = counting_constraint(workload, placement.release.minor)
    pending = replicas.pending
    shown = names([replicas.pod_name(i) for i in pending[:3]], 3, total=len(pending))
    path: tuple = workload.spec_path
    said = "its topologySpreadConstraints"
    if counting is not None:
        at = (*workload.spec_path, SPREAD_FIELD, counting.index, "maxSkew")
        if workload.manifest.get(*at) is not None:
            path = at
        said = (
            f"its topology spread over {counting.topology_key} (maxSkew {counting.max_skew}) "
            "lets a domain hold at most the fewest pods of any domain plus "
            f"{counting.max_skew}, and the domains with room are at that limit"
        )
    message = (
        f"{workload.title}: {len(pending)} of {len(replicas.nodes)} pods stay Pending "
        f"({shown}): {said}: {replicas.message}"
    )
    tainted = False  # a domain counted through nodes the pods do not tolerate (Ignore)
    if counting is not None and not counting.honor_taints:
        key, verdicts = counting.topology_key, placement.verdicts(workload)
        tainted = any(
            verdicts[n.name].reason in (TAINT, UNSCHEDULABLE)
            and (key in n.labels or key == HOSTNAME_LABEL)
            for n in placement.nodes
        )
    hint = (
        "Add room (GPU nodes) in the domains holding the fewest pods, raise maxSkew, or make "
        "the constraint `whenUnsatisfiable: ScheduleAnyway` (a preference)"
    )
    if tainted:
        hint += (
            "; a domain whose nodes these pods do not tolerate still counts with 0 pods "
            "(nodeTaintsPolicy defaults to Ignore): set `nodeTaintsPolicy: Honor` to leave "
            "those nodes out"
        )
    hint += f" (`gpudrv-check place --workload {workload.key}` shows where each pod went)."
    return ctx.finding(ID, workload.manifest, path, message, hint)


def _count_text(workload: Workload) -> str:
    """The key the pod count comes from (a RayCluster group's minReplicas when it raises the
    replicas, a Job's completions when they cap parallelism), else "the replicas"."""
    path = workload.replicas_path
    return f"`{field_path_text(path)}`" if path else "the replicas"


# --- Kueue never admits it --------------------------------------------------------------------


def _object_title(workload: Workload) -> str:
    return f"{workload.kind_text} {workload.namespace}/{workload.name}"


def _outcome(workload: Workload, queue: kq.Queue) -> str:
    """What happens to the pods, in Kueue's words for the integration that holds them."""
    if queue.pod_based:
        who = workload.title if workload.kind == "Pod" else f"the pods of {workload.title}"
        verb = "keeps" if workload.kind == "Pod" else "keep"
        return (
            f"{who} {verb} Kueue's scheduling gate {kq.SCHEDULING_GATE} and never "
            f"{'runs' if workload.kind == 'Pod' else 'run'}"
        )
    held = f"each Job of {_object_title(workload)}" if workload.kind == "CronJob" else None
    return f"Kueue keeps {held or _object_title(workload)} suspended and never creates its pods"


def _reason_text(refusal: kq.Refusal, about: Workload) -> str:
    cq = f"ClusterQueue {refusal.cluster_queue}"
    pods = f"the pods of its {about.role}" if about.role else "its pods"
    if refusal.cause == kq.NAMESPACE_NOT_SELECTED:
        return (
            f"the namespaceSelector of {cq} does not select namespace {about.namespace} "
            f"(labels {refusal.details[0] if refusal.details else 'unknown'})"
        )
    if refusal.cause == kq.UNCOVERED_RESOURCE:
        resources = ", ".join(refusal.details)
        one = len(refusal.details) == 1
        return (
            f"{pods} request {resources}, which no resourceGroup of {cq} covers "
            f'("resource {refusal.details[0]} unavailable in ClusterQueue"'
            f"{')' if one else ', …)'}"
        )
    if refusal.cause == kq.NO_FLAVOR_FITS:
        why = "; ".join(refusal.details)
        return f"no flavor of {cq} for {', '.join(refusal.resources)} fits {pods} ({why})"
    return refusal.reason


def _kueue_hint(kueue: kq.Kueue | None, refusal: kq.Refusal, about: Workload) -> str:
    cq = f"ClusterQueue {refusal.cluster_queue}"
    namespace = about.namespace
    if refusal.cause == kq.LOCAL_QUEUE_STOPPED:
        return (
            f"Remove `stopPolicy` from LocalQueue {refusal.local_queue} (or set it to None) when "
            "the hold is over, or send the workload to a LocalQueue that admits."
        )
    if refusal.cause == kq.CLUSTER_QUEUE_STOPPED:
        return (
            f"Remove `stopPolicy` from {cq} (or set it to None) when the hold is over, or send "
            "the workload to a LocalQueue of another ClusterQueue."
        )
    if refusal.cause == kq.NO_NAMESPACE_SELECTOR:
        return (
            f"Add `namespaceSelector: {{}}` (every namespace) to {cq}, or a selector that "
            f"matches namespace {namespace}, e.g. `namespaceSelector: {{matchLabels: "
            f"{{{kq.NAMESPACE_NAME_LABEL}: {namespace}}}}}`."
        )
    if refusal.cause == kq.NAMESPACE_NOT_SELECTED:
        labelled = kueue is not None and namespace in kueue.namespaces
        return (
            f"Make the namespaceSelector of {cq} select namespace {namespace} (`{{}}` selects "
            "every namespace)"
            + (f", or give Namespace {namespace} labels it matches" if labelled else "")
            + ", or send the workload to a LocalQueue of a ClusterQueue that selects it."
        )
    if refusal.cause == kq.UNCOVERED_RESOURCE:
        resources = ", ".join(refusal.details)
        return (
            f"Add {resources} to the coveredResources of a resourceGroup of {cq}, with a "
            "nominalQuota in each of its flavors, or stop requesting "
            f"{'it' if len(refusal.details) == 1 else 'them'} (Kueue's Configuration can also "
            "leave a resource out: resources.excludeResourcePrefixes)."
        )
    fixes = []
    if any(kq.MISFIT_TAINT in d for d in refusal.details):
        fixes.append("tolerate the flavor's nodeTaints in the pod template")
    if any(kq.MISFIT_AFFINITY in d for d in refusal.details):
        fixes.append("make the nodeSelector or required node affinity match a flavor's nodeLabels")
    if any(kq.MISFIT_QUOTA in d for d in refusal.details):
        fixes.append(
            "raise the flavor's nominalQuota to at least one pod's request (or put the "
            "ClusterQueue in a cohort to borrow from), or request less per pod"
        )
    fixes.append(f"add to {cq} a flavor the pods fit")
    text = "; ".join(fixes)
    return text[0].upper() + text[1:] + "."


def kueue_finding(ctx: Context, workload: Workload, held: kq.Held) -> Finding:
    """Kueue never admits the workload: its pods never exist, wherever they could land."""
    about, queue, refusal = held[id(workload)]
    cq = refusal.cluster_queue
    local = f"{'the namespace default ' if queue.defaulted else ''}LocalQueue {refusal.local_queue}"
    message = (
        f"{_reason_text(refusal, about)}: {_outcome(workload, queue)} ({local}"
        f"{f', ClusterQueue {cq}' if cq else ''})."
    )
    return ctx.finding(
        ID,
        workload.manifest,
        queue.path,
        message,
        _kueue_hint(kq.of_repo(ctx.repo), refusal, about),
    )


def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.repo.nodes:
        return
    held = kq.never_admitted(ctx.repo)
    reported: set[tuple[int, tuple]] = set()
    for workload in ctx.repo.workloads:
        if not workload.placeable:
            continue
        if held and id(workload) in held:  # no placement finding on pods that never exist
            _, queue, _ = held[id(workload)]
            key = (id(workload.manifest), queue.path)
            if key not in reported:
                reported.add(key)
                yield kueue_finding(ctx, workload, held)
            continue
        finding = finding_for(ctx, workload) or pending_replicas_finding(ctx, workload)
        if finding is not None:
            yield finding
