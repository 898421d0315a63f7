"""GPU020 pdb-blocks-drain: a PodDisruptionBudget allows 0 disruptions even at full health.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.k8s.disruption import (
    EVICTION_BUDGET_VIOLATION_MESSAGE,
    EVICTION_BUDGET_VIOLATION_STATUS,
)
from gpudrv_check.model.disruption import Coverage, WorkloadPods
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import MAX_NAMES, names, plural

ID = "GPU020"


def workload_title(member: WorkloadPods) -> str:
    return member.workload.short_title


def pending_note(coverage: Coverage) -> str:
    """Why some covered pods can never be healthy, or ''. The first MAX_NAMES workloads
    with such pods are described, the rest counted (a budget over a hundred workloads made a
    message longer than a finding holds, core/finding.py MAX_MESSAGE)."""
    notes: list[str] = []
    more = 0
    for member in coverage.members:
        missing = member.pods - member.healthy
        if missing <= 0:
            continue
        if len(notes) == MAX_NAMES:
            more += 1
            continue
        spread = member.spread
        if spread is None or spread.capacity >= member.pods:
            notes.append(
                f"{missing} of {member.pods} pods of {workload_title(member)} stay Pending: the "
                "scheduler finds no node for them (GPU010)"
            )
            continue
        unit = "node" if spread.per_node else f"{spread.term.topology_key} domain"
        notes.append(
            f"{missing} of {member.pods} replicas of {workload_title(member)} can never be "
            f"scheduled: required pod anti-affinity on {spread.term.topology_key} allows one "
            f"per {unit} and only {plural(spread.capacity, 'eligible ' + unit)} exist (GPU021)"
        )
    if more:
        notes.append(
            f"and {plural(more, 'more covered workload')} "
            f"{'has' if more == 1 else 'have'} pods that can never be healthy"
        )
    return "; ".join(notes)


class _GpuNodeNames:
    """The GPU nodes any of a budget's drained workloads can land on, as the message names them:
    the first MAX_NAMES in sorted order and a count of the rest ('' for none).

    Members share few distinct GPU-node sets (one per constraint set), and budgets many
    combinations of them. Each distinct set becomes a bit mask over the sorted names of the
    nodes placement judges (every set is of their names), so a combination is a few ORs, its
    count a `bit_count` and its first names its lowest bits (a fleet's thousands of names were
    united and sorted per combination: 8,000 nodes, 0.2 s)."""

    def __init__(self, nodes: list) -> None:
        self.order = sorted({n.name for n in nodes})
        self.index = {name: i for i, name in enumerate(self.order)}
        self.masks: dict[int, tuple[frozenset, int]] = {}
        self.texts: dict[frozenset, str] = {}

    def _mask(self, names_: frozenset) -> int:
        found = self.masks.get(id(names_))
        if found is None:
            bits = bytearray(len(self.order) // 8 + 1)
            index = self.index
            for name in names_:
                i = index[name]
                bits[i >> 3] |= 1 << (i & 7)
            # the entry keeps the set, so its id is not reused meanwhile
            found = self.masks[id(names_)] = (names_, int.from_bytes(bits, "little"))
        return found[1]

    def text(self, drained: list[WorkloadPods]) -> str:
        distinct = {id(m.gpu_names): m.gpu_names for m in drained if m.gpu_names}
        key = frozenset(distinct)
        found = self.texts.get(key)
        if found is None:
            union = 0
            for names_ in distinct.values():
                union |= self._mask(names_)
            shown: list[str] = []
            rest = union
            while rest and len(shown) < MAX_NAMES:
                low = rest & -rest
                shown.append(self.order[low.bit_length() - 1])
                rest ^= low
            found = self.texts[key] = names(shown, total=union.bit_count())
        return found


def _controller_message(pdb_title: str, budget: str, covered: str, gpu_nodes: str) -> str:
    return (
        f"{pdb_title} allows 0 disruptions even with every covered pod healthy ({budget}). "
        f"It covers {covered}, which the GPU Operator's upgrade controller evicts from GPU "
        f"node(s) {gpu_nodes}: each eviction is refused with HTTP "
        f'{EVICTION_BUDGET_VIOLATION_STATUS} "{EVICTION_BUDGET_VIOLATION_MESSAGE}" until '
        "podDeletion.timeoutSeconds, then the node goes to drain-required (drain.enable) or "
        "upgrade-failed; with timeoutSeconds 0 it waits in pod-deletion-required for ever"
    )


def check(ctx: Context) -> Iterator[Finding]:
    from gpudrv_check.model.upgrade_flow import CONTROLLER, upgrade_flow

    disruption = ctx.repo.disruption
    flow = upgrade_flow(ctx.repo)
    gpu_node_names = _GpuNodeNames(ctx.repo.placement.nodes)
    # per workload (by its WorkloadPods, which a coverage shares with the others covering the
    # same pods): whether an upgrade's drain evicts healthy pods of it
    evicted: dict[int, bool] = {}
    # per members tuple (budgets selecting by the same label share one, model/disruption.py):
    # the covered workloads' text, the GPU nodes' names and the pending note
    described: dict[int, tuple[str, str, str]] = {}
    for coverage in disruption.coverages:
        if not coverage.blocks:
            continue
        found_text = described.get(id(coverage.members))
        if found_text is None:
            drained = []
            for m in coverage.members:
                found = evicted.get(id(m))
                if found is None:
                    found = evicted[id(m)] = (
                        m.evicted_by_drain and m.healthy > 0 and flow.evicts(m.workload)
                    )
                if found:
                    drained.append(m)
            gpu_names = gpu_node_names.text(drained)
            found_text = described[id(coverage.members)] = (
                names([workload_title(m) for m in drained]) if gpu_names else "",
                gpu_names,
                pending_note(coverage) if gpu_names else "",
            )
        covered, gpu_nodes, pending = found_text
        if not gpu_nodes:
            continue
        pdb = coverage.pdb
        message = (
            f"{pdb.title} allows 0 disruptions even with every "
            f"{'schedulable ' if pending else ''}covered pod healthy "
            f"({coverage.budget.describe()}). It covers {covered}, which can run on GPU "
            f"node(s) {gpu_nodes}: a driver-upgrade drain of those nodes is refused "
            f'with HTTP {EVICTION_BUDGET_VIOLATION_STATUS} "{EVICTION_BUDGET_VIOLATION_MESSAGE}" '
            "and, without --timeout, kubectl drain retries forever with the node cordoned"
        )
        if flow.kind == CONTROLLER:
            message = _controller_message(pdb.title, coverage.budget.describe(), covered, gpu_nodes)
        if pending:
            message += f". Note: {pending}"
        change = coverage.change()
        if change is not None:
            hint = (
                f"Set {change.describe()}: at full health that lets "
                f"{plural(change.allowed, 'pod')} be evicted at a "
                "time, so a drain can proceed node by node."
            )
        else:
            hint = None
        yield ctx.finding(ID, pdb.manifest, pdb.rule_path, message, hint=hint)
