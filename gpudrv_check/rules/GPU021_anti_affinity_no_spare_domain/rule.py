"""GPU021 anti-affinity-no-spare-domain: required pod anti-affinity leaves no spare node.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.k8s.podaffinity import required_anti_affinity_terms
from gpudrv_check.model.occupancy import anti_affinity_refusals
from gpudrv_check.model.spread import DomainCache, Spread, namespace_labels, own_anti_affinity
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


def _lower_hint(count: str, allowed: int) -> str:
    return (
        f"Lower {count} to {allowed}, make more nodes eligible, or relax the term "
        "(preferredDuringScheduling, or topologySpreadConstraints with "
        "whenUnsatisfiable: ScheduleAnyway)."
    )


def _error(ctx: Context, spread: Spread, message: str, hint: str) -> Finding:
    """The finding at the binding term's topologyKey, an error: replicas stay Pending."""
    return ctx.finding(
        ID,
        spread.workload.manifest,
        spread.topology_key_path,
        message,
        hint,
        severity=Severity.ERROR,
    )


def _mixed_finding(ctx: Context, spread: Spread) -> Finding | None:
    """A term some eligible nodes lack the key of (model/spread.py `OwnAntiAffinity.mixed`):
    they take any number of the pods, the other nodes one per domain (filtering.go
    `satisfyPodAntiAffinity` finds no topology pair of the term on a node without its key).
    The domains bind when the capacity simulation leaves pods Pending while it refuses them a
    node with room in a domain the workload holds (model/occupancy.py): the nodes without the
    key took all they could."""
    workload = spread.workload
    replicas = ctx.repo.occupancy.replicas(workload)
    if replicas is None or not replicas.pending:
        return None
    if not anti_affinity_refusals(replicas.message):
        return None  # nothing but room (or another filter) keeps them Pending: GPU010's
    key = spread.term.topology_key
    job = _job(spread)
    pod = "pod" if job else "replica"
    count = "parallelism" if job else "replicas"
    pending = len(replicas.pending)
    asks = f"runs {spread.replicas} pods at once" if job else f"asks for {spread.replicas} replicas"
    free = list(spread.domains.unconstrained)
    message = (
        f"{workload.short_title} {asks}, but its required pod anti-affinity on {key}"
        f"{_dropped(spread)} allows one per {key} domain and it can land on only "
        f"{_domains_text(spread)}, besides {plural(len(free), 'node')} without {key} "
        f"({names(free[:MAX_NAMES], total=len(free))}) that take{'s' if len(free) == 1 else ''} "
        f"no more of them: {plural(pending, pod)} {'stays' if pending == 1 else 'stay'} "
        "Pending already"
    )
    return _error(ctx, spread, message, _lower_hint(count, replicas.placed))


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    gpu = {n.name for n in repo.gpu_nodes}
    namespaces: dict[str, dict[str, str]] | None = None
    cache: DomainCache = {}
    for workload in repo.workloads:
        spread = repo.disruption.spread(workload)
        if (spread is None or not spread.pending) and required_anti_affinity_terms(
            workload.pod_spec
        ):
            if namespaces is None:
                namespaces = namespace_labels(repo)
            own = own_anti_affinity(repo, workload, namespaces, cache)
            mixed = None if own is None else own.mixed
            if mixed is not None and gpu.intersection(mixed.eligible):
                found = _mixed_finding(ctx, mixed)
                if found is not None:
                    yield found
                    continue
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
            yield _error(ctx, spread, message, _lower_hint(count, spread.capacity))
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
