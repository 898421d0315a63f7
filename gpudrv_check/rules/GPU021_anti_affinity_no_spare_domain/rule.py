"""GPU021 anti-affinity-no-spare-domain: required pod anti-affinity leaves no spare node.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.spread import Spread
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, clauses, names, plural

ID = "GPU021"
DOMAINS_SHOWN = 4  # domains written out, each with its nodes


def _domains_text(spread: Spread) -> str:
    """The eligible nodes, or the first four domains with the first MAX_NAMES nodes of each, the
    rest counted (a domain's every node made a message longer than a finding holds, cut before
    it said how many replicas stay Pending: core/finding.py MAX_MESSAGE)."""
    if spread.per_node:
        return f"{plural(spread.capacity, 'eligible node')} ({names(list(spread.eligible))})"
    by_value = spread.domains.by_value
    values = [
        f"{v}: {names(list(nodes[:MAX_NAMES]), total=len(nodes))}"
        for v, nodes in islice(by_value.items(), DOMAINS_SHOWN)
    ]
    # domains apart by semicolons: their node lists hold commas (and counts) of their own
    return (
        f"{plural(spread.capacity, 'eligible ' + spread.term.topology_key + ' domain')} "
        f"({clauses(values, 'domain', DOMAINS_SHOWN, total=len(by_value))})"
    )


def _job(spread: Spread) -> bool:
    """A Job or CronJob: its pods side by side are its parallelism, not replicas."""
    return spread.workload.kind in ("Job", "CronJob") and not spread.workload.owner_kind


def _dropped(spread: Spread) -> str:
    """Why a term with matchLabelKeys/mismatchLabelKeys still keeps the pods apart."""
    if not spread.keys_dropped:
        return ""
    return (
        " (the API server drops its matchLabelKeys/mismatchLabelKeys before Kubernetes 1.31, "
        "the release scheduler_version names)"
    )


def _drain_text(spread: Spread, lone: list[str]) -> str:
    """The GPU nodes whose drain strands a pod: those alone in their domain."""
    which = "any one of" if len(lone) == len(spread.eligible) else "GPU node"
    return f"draining {which} {names(lone)} for a driver upgrade"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    gpu = {n.name for n in repo.gpu_nodes}
    for workload in repo.workloads:
        spread = repo.disruption.spread(workload)
        if spread is None or not gpu.intersection(spread.eligible):
            continue
        title = workload.short_title
        key = spread.term.topology_key
        unit = "node" if spread.per_node else f"{key} domain"
        job = _job(spread)
        pod = "pod" if job else "replica"
        count = "parallelism" if job else "replicas"
        # draining a node alone in its domain takes that domain away: one more pod stays
        # Pending; a node whose domain keeps another node leaves its pod that node
        lone = [n for n in spread.single_node_domains() if n in gpu]
        if spread.pending:
            asks = (
                f"runs {spread.replicas} pods at once"
                if job
                else f"asks for {spread.replicas} replicas"
            )
            drains = f", and {_drain_text(spread, lone)} strands one more" if lone else ""
            message = (
                f"{title} {asks}, but its required pod anti-affinity on {key}{_dropped(spread)} "
                f"allows one per {unit} and it can land on only {_domains_text(spread)}: "
                f"{plural(spread.pending, pod)} {'stays' if spread.pending == 1 else 'stay'} "
                f"Pending already{drains}"
            )
            hint = (
                f"Lower {count} to {spread.capacity}, make more nodes eligible, or relax the "
                "term (preferredDuringScheduling, or topologySpreadConstraints with "
                "whenUnsatisfiable: ScheduleAnyway)."
            )
            yield ctx.finding(
                ID,
                workload.manifest,
                spread.topology_key_path,
                message,
                hint,
                severity=Severity.ERROR,
            )
            continue
        if spread.replicas < spread.capacity or not lone:
            continue
        runs = f"{spread.replicas} pods at once" if job else f"{spread.replicas} replicas"
        message = (
            f"{title} runs {runs} on exactly {_domains_text(spread)} with "
            f"required pod anti-affinity on {key}{_dropped(spread)} (one per {unit}): "
            f"{_drain_text(spread, lone)} leaves its {pod} Pending until the node is "
            "uncordoned, since no spare domain is left"
        )
        fewer = spread.replicas - 1
        hint = (
            f"Keep a spare: make one more {unit} eligible"
            + (
                (f", or set {count} to {fewer}" if job else f", or run {plural(fewer, pod)}")
                if fewer > 0
                else ""
            )
            + f"; otherwise expect one {pod} down per drained node."
        )
        yield ctx.finding(
            ID,
            workload.manifest,
            spread.topology_key_path,
            message,
            hint,
            severity=Severity.WARNING,
        )
