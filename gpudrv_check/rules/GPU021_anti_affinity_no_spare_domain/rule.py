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
        if spread.pending:
            message = (
                f"{title} asks for {spread.replicas} replicas, but its required pod "
                f"anti-affinity on {key} allows one per {unit} and it can land on only "
                f"{_domains_text(spread)}: {plural(spread.pending, 'replica')} "
                f"{'stays' if spread.pending == 1 else 'stay'} Pending already, "
                "and each drain for a driver upgrade strands one more"
            )
            hint = (
                f"Lower replicas to {spread.capacity}, make more nodes eligible, or relax the "
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
        lone = [n for n in spread.single_node_domains() if n in gpu]
        if spread.replicas < spread.capacity or not lone:
            continue
        message = (
            f"{title} runs {spread.replicas} replicas on exactly {_domains_text(spread)} with "
            f"required pod anti-affinity on {key} (one per {unit}): draining "
            f"{'any one of' if len(lone) == len(spread.eligible) else 'GPU node'} "
            f"{names(lone)} for a driver upgrade leaves its replica Pending until the node is "
            "uncordoned, since no spare domain is left"
        )
        fewer = spread.replicas - 1
        hint = (
            f"Keep a spare: make one more {unit} eligible"
            + (f", or run {plural(fewer, 'replica')}" if fewer > 0 else "")
            + "; otherwise expect one replica down per drained node."
        )
        yield ctx.finding(
            ID,
            workload.manifest,
            spread.topology_key_path,
            message,
            hint,
            severity=Severity.WARNING,
        )
