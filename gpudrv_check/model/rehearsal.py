"""A rehearsal of the GPU Operator's driver upgrade over the whole fleet, reconcile by reconcile.

Each reconcile applies k8s-operator-libs ``ClusterUpgradeStateManagerImpl.ApplyState`` in its
order, to the states read at the start of the reconcile (so a node moves one state per
reconcile): ProcessDoneOrUnknownNodes, ProcessUpgradeRequiredNodes (admission:
nvidia/upgrade_controller.py), ProcessCordonRequiredNodes, ProcessWaitForJobsRequiredNodes,
ProcessPodDeletionRequiredNodes, ProcessDrainNodes, ProcessPodRestartNodes,
ProcessUpgradeFailedNodes, ProcessValidationRequiredNodes, ProcessUncordonRequiredNodes.

Pods: each workload the flow evicts (model/upgrade_flow.py) starts with its replicas spread over
its eligible nodes (the placement engine), one per node under required self anti-affinity on
the hostname. An eviction goes through the PDBs in force (the budget's desired healthy count,
the live healthy count); the replacement goes to an eligible node that is not cordoned, or
stays Pending until a node is uncordoned. A refused eviction retries until
``podDeletion.timeoutSeconds`` (0: for ever), then the node goes to drain-required
(``drain.enable``) or upgrade-failed (pod_manager.go ``updateNodeToDrainOrFailed``).
The new driver pod needs its image in the support matrix (else ImagePullBackOff, which counts
no restarts, so the node waits in pod-restart-required for ever) and a Ready node.
validation-required waits for the operator-validator pod on the node (none: for ever), which is
not Ready while the operand chain below it is broken (600 s, then upgrade-failed).
The rehearsal ends when every managed node is upgrade-done or skipped, or when a reconcile
changes nothing and no timeout is pending: a stall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import field
from itertools import islice
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Location
from gpudrv_check.core.records import record
from gpudrv_check.k8s.disruption import (
    EVICTION_MULTIPLE_PDBS_MESSAGE,
    EVICTION_MULTIPLE_PDBS_STATUS,
)
from gpudrv_check.k8s.selector_string import parse_selector
from gpudrv_check.model.disruption import PDB, Coverage
from gpudrv_check.model.node import Node
from gpudrv_check.model.upgrade_flow import POLICY_PATH, UpgradeFlow
from gpudrv_check.model.workload import Workload
from gpudrv_check.nvidia.upgrade import UPGRADE_STATE_LABEL, skip_requested, upgrade_state
from gpudrv_check.nvidia.upgrade_controller import (
    NEVER_COMPLETE_KINDS,
    POD_DELETION_SPEC_EMPTY,
    VALIDATION_TIMEOUT_SECONDS,
    drain_selector,
    max_unavailable_error,
    max_unavailable_limit,
    total_managed,
    upgrades_available,
)

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

MAX_RECONCILES = 100_000
VALIDATOR = "operator-validator"
#: upgrade_requestor.go: the maintenance operator, not this controller, moves these on
_REQUESTOR_STATES = frozenset(("node-maintenance-required", "post-maintenance-required"))


@record
class Stall:
    node: str
    state: str
    reason: str
    location: Location | None = None


@record
class Wave:
    reconcile: int
    seconds: int
    nodes: list[dict[str, str]] = field(default_factory=list)  # node, from, to
    evictions: list[dict[str, Any]] = field(default_factory=list)  # pod, node, to
    blocks: list[dict[str, Any]] = field(default_factory=list)  # node, by, message, location


@record
class Rehearsal:
    flow: UpgradeFlow
    nodes: int  # managed nodes
    admitted: list[str] = field(default_factory=list)
    upgrades_available: int = 0
    max_unavailable: int = 0
    waves: list[Wave] = field(default_factory=list)
    stalls: list[Stall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.stalls


@record
class _Pod:
    member: Workload
    index: int
    node: str | None  # None: Pending

    @property
    def name(self) -> str:
        w = self.member
        return f"{w.kind}/{w.namespace}/{w.name or '?'}#{self.index}"


@record
class _NodeRun:
    node: Node
    order: int
    state: str
    cordoned: bool
    ready: bool
    initially_cordoned: bool
    needs_upgrade: bool
    image_ok: bool
    skip: bool
    deadline: int | None = None  # a timeout that moves the node on at this clock
    on_timeout: str = ""
    waiting: str = ""  # why it does not move (kept for the stall)
    waiting_at: Location | None = None
    failed_because: tuple[str, Location | None] | None = None
    tag: str | None = None  # the precompiled image tag the new driver needs


def node_ready(node: Node) -> bool:
    """NodeReady not False/Unknown (isNodeConditionReady: a node without it is ready)."""
    data = node.object_data()
    status = data.get("status") if isinstance(data, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


class _Engine:
    """The cluster state during the rehearsal and one method per ApplyState step."""

    def __init__(self, repo: Repo, flow: UpgradeFlow, runs: list[_NodeRun]) -> None:
        self.repo = repo
        self.flow = flow
        self.policy = flow.policy
        self.runs = runs
        self.by_name = {r.node.name: r for r in runs}
        self.clock = 0
        self.wave = Wave(0, 0)
        self.pods_on: dict[str, list[_Pod]] = {}
        self.pending: list[_Pod] = []
        self.healthy: dict[int, int] = {}  # id(pdb) -> healthy covered pods now
        self.used: dict[int, set[str]] = {}  # id(workload) -> nodes holding a replica
        self.cursor: dict[int, int] = {}
        self.running: dict[int, int] = {}  # id(workload) -> replicas running
        # the runs per state, in the order they entered it (kept by move, so a reconcile
        # costs the nodes in motion, not the fleet)
        self.groups: dict[str, dict[int, _NodeRun]] = {}
        for run in runs:
            self.groups.setdefault(run.state, {})[run.order] = run
        self.unavailable = sum(1 for r in runs if r.cordoned or not r.ready)
        self.cordoned_waiting = sum(1 for r in runs if r.cordoned and r.state == "upgrade-required")
        # done nodes whose driver pod is out of date: only the ones the repo starts with
        self.stale_done = [r for r in runs if r.state == "upgrade-done" and r.needs_upgrade]
        self.kept_gpu_pods = self._kept_gpu_pods()
        self._place_initial()

    def _kept_gpu_pods(self) -> dict[str, Workload]:
        """Node -> the first workload whose GPU pod there pod deletion counts but cannot
        delete (UpgradeFlow.stops_deletion): found once, not per node and reconcile."""
        kept: dict[str, Workload] = {}
        for workload in self.repo.workloads:
            if self.flow.stops_deletion(workload):
                for node in self._eligible(workload):
                    kept.setdefault(node.name, workload)
        return kept

    # --- pods -----------------------------------------------------------------------------
    def _eligible(self, workload: Workload) -> tuple[Node, ...]:
        return self.repo.disruption.pods(workload).eligible

    def _per_node(self, workload: Workload) -> bool:
        spread = self.repo.disruption.spread(workload)
        return spread is not None and spread.per_node

    def _place_initial(self) -> None:
        disruption = self.repo.disruption
        for workload in self.repo.workloads:
            if not self.flow.evicts(workload):
                continue
            member = disruption.pods(workload)
            eligible = member.eligible
            self.used[id(workload)] = set()
            for index in range(member.pods):
                target = None
                if eligible and (index < len(eligible) or not self._per_node(workload)):
                    target = eligible[index % len(eligible)].name
                pod = _Pod(workload, index, None)
                self._put(pod, target)
        for coverage in disruption.coverages:
            self.healthy[id(coverage.pdb)] = sum(
                self.running.get(id(m.workload), 0) if self.flow.evicts(m.workload) else m.healthy
                for m in coverage.members
            )

    def _put(self, pod: _Pod, target: str | None) -> None:
        pod.node = target
        if target is None:
            self.pending.append(pod)
        else:
            self.pods_on.setdefault(target, []).append(pod)
            self.used[id(pod.member)].add(target)
            self.running[id(pod.member)] = self.running.get(id(pod.member), 0) + 1

    def _reschedule(self, pod: _Pod) -> str | None:
        workload = pod.member
        eligible = self._eligible(workload)
        if not eligible or workload.kind == "Pod":
            return None
        per_node = self._per_node(workload)
        start = self.cursor.get(id(workload), 0)
        for step in range(len(eligible)):
            node = eligible[(start + step) % len(eligible)].name
            run = self.by_name.get(node)
            if run is not None and run.cordoned:
                continue
            if per_node and node in self.used[id(workload)]:
                continue
            self.cursor[id(workload)] = (start + step + 1) % len(eligible)
            return node
        return None

    def _covering(self, workload: Workload) -> list[PDB]:
        return self.repo.disruption.covering(workload)

    def refusal(self, pod: _Pod) -> tuple[str, PDB] | None:
        """Why the eviction API refuses the pod now (429 / 500, see ``final``), or None."""
        pdbs = self._covering(pod.member)
        if len(pdbs) > 1:
            names = ", ".join(f"{p.namespace}/{p.name}" for p in pdbs)
            return (
                f"covered by {len(pdbs)} PodDisruptionBudgets ({names}): HTTP "
                f'{EVICTION_MULTIPLE_PDBS_STATUS} "{EVICTION_MULTIPLE_PDBS_MESSAGE}"',
                pdbs[0],
            )
        for pdb in pdbs:
            coverage: Coverage | None = self.repo.disruption.coverage(pdb)
            if coverage is None:
                continue
            budget = coverage.budget
            # a failed sync writes 0 (failSafe), and so does updatePdbStatus when no pods
            # are expected (neither rule set): no eviction passes, however many are healthy
            if budget.outcome in ("fail-safe", "no-expected-pods"):
                return f"{pdb.title}: {budget.describe()}: HTTP 429", pdb
            allowed = self.healthy[id(pdb)] - budget.desired_healthy
            if allowed < 1:
                return (
                    f"{pdb.title} allows 0 disruptions ({self.healthy[id(pdb)]} healthy, "
                    f"{budget.desired_healthy} required): HTTP 429",
                    pdb,
                )
        return None

    def final(self, pod: _Pod) -> bool:
        """The refusal is not retried: kubectl drain evictPods retries only 429
        (IsTooManyRequests); the 500 of a pod under two PDBs ends that pod's eviction."""
        return len(self._covering(pod.member)) > 1

    def evict(self, pod: _Pod, node: str) -> None:
        self.pods_on[node].remove(pod)
        self.used[id(pod.member)].discard(node)
        self.running[id(pod.member)] -= 1
        for pdb in self._covering(pod.member):
            self.healthy[id(pdb)] -= 1
        target = self._reschedule(pod)
        self.wave.evictions.append({"pod": pod.name, "node": node, "to": target})
        self._put(pod, target)
        if target is not None:
            for pdb in self._covering(pod.member):
                self.healthy[id(pdb)] += 1

    def place_pending(self) -> None:
        waiting, self.pending = self.pending, []
        for pod in waiting:
            target = self._reschedule(pod)
            self._put(pod, target)
            if target is not None:
                for pdb in self._covering(pod.member):
                    self.healthy[id(pdb)] += 1

    # --- states ---------------------------------------------------------------------------
    def move(self, run: _NodeRun, state: str) -> None:
        self.wave.nodes.append({"node": run.node.name, "from": run.state, "to": state})
        if state == "upgrade-failed" and run.waiting:
            run.failed_because = (f"upgrade-failed after: {run.waiting}", run.waiting_at)
        del self.groups[run.state][run.order]
        self.groups.setdefault(state, {})[run.order] = run
        if run.cordoned and "upgrade-required" in (run.state, state):
            self.cordoned_waiting += 1 if state == "upgrade-required" else -1
        run.state = state
        run.deadline = None
        run.waiting = ""

    def block(self, run: _NodeRun, why: str, where: Location | None, by: str = "") -> None:
        if run.waiting != why:
            self.wave.blocks.append(
                {"node": run.node.name, "by": by, "message": why, "location": _text(where)}
            )
        run.waiting, run.waiting_at = why, where

    def wait_or_fail(self, run: _NodeRun, timeout: int, next_state: str) -> None:
        if timeout and run.deadline is None:
            run.deadline, run.on_timeout = self.clock + timeout, next_state

    def fail_to(self) -> str:
        return "drain-required" if self.flow.drain_enabled else "upgrade-failed"


def _text(location: Location | None) -> str | None:
    return str(location) if location is not None else None


# --- the ApplyState steps, each over the nodes in its state at the start of the reconcile ----


def _done_or_unknown(engine: _Engine, run: _NodeRun) -> None:
    """ProcessDoneOrUnknownNodes: an out-of-date driver pod -> upgrade-required."""
    if run.needs_upgrade:
        engine.move(run, "upgrade-required")
    elif run.state == "":
        engine.move(run, "upgrade-done")


def _admit(engine: _Engine, waiting: Iterable[_NodeRun], states: Counter, reh: Rehearsal) -> None:
    """ProcessUpgradeRequiredNodes (in-place mode), with GetUpgradesAvailable's numbers."""
    policy = engine.policy
    total = total_managed(states)
    limit = max_unavailable_limit(policy.get("maxUnavailable"), total) or 0
    available = upgrades_available(
        states, engine.unavailable, int(policy.get("maxParallelUpgrades") or 0), limit
    )
    first = available
    admitted = []
    for run in waiting:
        if run.skip:
            continue
        if available <= 0:
            if not engine.cordoned_waiting:
                break  # the rest could only go ahead cordoned
            if not run.cordoned:
                continue
        admitted.append(run)
        available -= 1
    if admitted and not reh.admitted:
        reh.admitted = [r.node.name for r in admitted]
        reh.upgrades_available, reh.max_unavailable = first, limit
    for run in admitted:
        engine.move(run, "cordon-required")


def _cordon(engine: _Engine, run: _NodeRun) -> None:
    if not run.cordoned and run.ready:
        engine.unavailable += 1
    run.cordoned = True
    engine.move(run, "wait-for-jobs-required")


def _wait_for_jobs(engine: _Engine, run: _NodeRun) -> None:
    """ProcessWaitForJobsRequiredNodes / ScheduleCheckOnPodCompletion."""
    spec = engine.policy["waitForCompletion"]
    selector = str(spec.get("podSelector") or "")
    if not selector:
        engine.move(run, "pod-deletion-required")
        return
    matcher = parse_selector(selector)
    if matcher is None:
        # ListPods sends it as the list's labelSelector, which the API server refuses:
        # ScheduleCheckOnPodCompletion returns the error, and so does ApplyState
        why = (
            f"waitForCompletion.podSelector {selector!r} is not a label selector: listing the "
            "node's pods fails, so every reconcile fails at wait-for-jobs-required and no step "
            "after it runs"
        )
        engine.block(run, why, _policy_location(engine, ("waitForCompletion", "podSelector")))
        return
    forever = [
        w
        for w in engine.repo.workloads
        if (w.kind in NEVER_COMPLETE_KINDS and not w.owner_kind) or w.completes is False
        if matcher(w.pod_labels) and _runs_on(engine, w, run.node)
    ]
    if not forever:
        engine.move(run, "pod-deletion-required")
        return
    timeout = int(spec.get("timeoutSeconds") or 0)
    if run.deadline is not None and engine.clock >= run.deadline:
        engine.move(run, "pod-deletion-required")
        return
    w = forever[0]
    why = (
        f"waitForCompletion.podSelector {selector!r} matches {w.title}, "
        "whose pods never complete" + ("" if timeout else "; timeoutSeconds 0 waits for ever")
    )
    engine.block(run, why, _policy_location(engine, ("waitForCompletion", "podSelector")))
    engine.wait_or_fail(run, timeout, "pod-deletion-required")


def _runs_on(engine: _Engine, workload: Workload, node: Node) -> bool:
    if workload.kind == "DaemonSet":
        return any(n.name == node.name for n in engine.repo.disruption.pods(workload).eligible)
    return any(p.member is workload for p in engine.pods_on.get(node.name, []))


def _policy_location(engine: _Engine, path: tuple[str, ...]) -> Location | None:
    config = engine.flow.config
    return config.location((*POLICY_PATH, *path)) if config is not None else None


def _evict_all(engine: _Engine, run: _NodeRun, pods: list[_Pod], step: str) -> bool:
    """Evict ``pods`` from the node with the policy's ``step`` (podDeletion or drain) spec;
    False (and a block) when a pod cannot go."""
    spec = engine.policy[step]
    for pod in pods:
        why = engine.flow.undeletable(pod.member, step)
        if why is not None:
            where = pod.member.location(("metadata", "name"))
            engine.block(run, f"{step}: {pod.name}: {why}", where, pod.name)
            engine.move(run, engine.fail_to() if step == "podDeletion" else "upgrade-failed")
            return False
    failed: tuple[_Pod, str, PDB] | None = None
    for pod in pods:
        refused = engine.refusal(pod)
        if refused is not None and engine.final(pod):
            # the helper evicts each pod in its own goroutine: the others go on
            failed = failed or (pod, *refused)
            continue
        if refused is not None:
            why, pdb = refused
            timeout = int(spec.get("timeoutSeconds") or 0)
            if run.deadline is not None and engine.clock >= run.deadline:
                engine.move(run, run.on_timeout)
                return False
            suffix = (
                f"; retried until {step}.timeoutSeconds {timeout}"
                if timeout
                else f"; {step}.timeoutSeconds 0 retries for ever"
            )
            engine.block(
                run,
                f"evicting {pod.name} is refused: {why}{suffix}",
                pdb.manifest.location(pdb.rule_path),
                pdb.title,
            )
            nxt = engine.fail_to() if step == "podDeletion" else "upgrade-failed"
            engine.wait_or_fail(run, timeout, nxt)
            return False
        engine.evict(pod, run.node.name)
    if failed is not None:
        pod, why, pdb = failed
        engine.block(
            run,
            f"evicting {pod.name} fails: {why}; only HTTP 429 is retried, so {step} fails at once",
            pdb.manifest.location(pdb.rule_path),
            pdb.title,
        )
        engine.move(run, engine.fail_to() if step == "podDeletion" else "upgrade-failed")
        return False
    return True


def _pod_deletion(engine: _Engine, run: _NodeRun) -> None:
    """ProcessPodDeletionRequiredNodes / SchedulePodEviction (GPU pods only)."""
    kept = engine.kept_gpu_pods.get(run.node.name)
    if kept is not None:
        # the counts differ before any eviction, so nothing is evicted
        what = "a mirror pod" if kept.mirror_pod else "a DaemonSet pod"
        engine.block(
            run,
            f"podDeletion: {kept.title} asks for a GPU, so pod deletion counts its pod on "
            f'{run.node.name}, but the drain helper skips {what}: "Cannot delete all '
            'required pods"',
            kept.location(("metadata", "name")),
            kept.title,
        )
        engine.move(run, engine.fail_to())
        return
    pods = [p for p in engine.pods_on.get(run.node.name, []) if engine.flow.deletes(p.member)]
    if _evict_all(engine, run, pods, "podDeletion"):
        engine.move(run, "pod-restart-required")


def _drain(engine: _Engine, run: _NodeRun) -> None:
    """ProcessDrainNodes: disabled -> pod-restart-required; else ScheduleNodesDrain."""
    if not engine.flow.drain_enabled:
        engine.move(run, "pod-restart-required")
        return
    if engine.flow.drain_matcher is None:
        # drain.go GetPodsForDeletion: labels.Parse fails, RunNodeDrain returns the error
        selector = drain_selector(str(engine.policy["drain"]["podSelector"] or ""))
        engine.block(
            run,
            f"drain: the pod selector {selector!r} is not a label selector, so the drain fails",
            _policy_location(engine, ("drain", "podSelector")),
            "policy",
        )
        engine.move(run, "upgrade-failed")
        return
    pods = [p for p in engine.pods_on.get(run.node.name, []) if engine.flow.drains(p.member)]
    if _evict_all(engine, run, pods, "drain"):
        engine.move(run, "pod-restart-required")


def _pod_restart(engine: _Engine, run: _NodeRun, matrix_at: Location | None) -> None:
    """ProcessPodRestartNodes: the new driver pod must pull its image and become Ready."""
    if not run.image_ok:
        engine.block(
            run,
            f"driver image {run.tag or '(no tag: kernel or OS labels missing)'} is not in the "
            "support matrix: the new driver pod stays in ImagePullBackOff (no restarts "
            "counted, so never upgrade-failed)",
            matrix_at,
            "image",
        )
        return
    if not run.ready:
        engine.block(
            run,
            f"{run.node.name} is NotReady: the new driver pod does not start",
            run.node.location(("status",)),
            "node",
        )
        return
    run.needs_upgrade = False  # the driver pod now runs the DaemonSet's template
    engine.move(run, "validation-required")


def _validation(engine: _Engine, run: _NodeRun) -> None:
    """ProcessValidationRequiredNodes / ValidationManager.Validate (600 s timeout)."""
    placement = engine.repo.operand_placement
    if not _validator_runs(engine, run.node):
        engine.block(
            run,
            f"no operator-validator pod runs on {run.node.name}: validation waits for ever "
            '("No validation pods found on the node")',
            run.node.label_location("nvidia.com/gpu.deploy.operator-validator"),
            "validator",
        )
        return
    breaks = placement.breaks.get(run.node.name, [])
    if breaks:
        if run.deadline is not None and engine.clock >= run.deadline:
            engine.move(run, "upgrade-failed")
            run.waiting = "the operator-validator pod was not Ready within 600 s"
            return
        engine.block(
            run,
            f"the operator-validator pod on {run.node.name} is not Ready (the operand chain "
            f"is broken there: {breaks[0].missing} missing); after "
            f"{VALIDATION_TIMEOUT_SECONDS} s the node goes upgrade-failed",
            run.node.label_location("nvidia.com/gpu.deploy.operator-validator"),
            "validator",
        )
        engine.wait_or_fail(run, VALIDATION_TIMEOUT_SECONDS, "upgrade-failed")
        return
    engine.move(run, "upgrade-done" if run.initially_cordoned else "uncordon-required")


def _validator_runs(engine: _Engine, node: Node) -> bool:
    """The operator-validator pod runs on the node (operand placement). Without an operator
    config or validator DaemonSet in the repo, the chart's DaemonSet is assumed, which its
    deploy label still switches off."""
    placement = engine.repo.operand_placement
    if engine.flow.config is None and not placement.daemonsets_of(VALIDATOR):
        return node.labels.get(f"nvidia.com/gpu.deploy.{VALIDATOR}") != "false"
    return VALIDATOR in placement.running(node.name)


def _uncordon(engine: _Engine, run: _NodeRun) -> None:
    if run.cordoned and run.ready:
        engine.unavailable -= 1
    run.cordoned = False
    engine.move(run, "upgrade-done")
    engine.place_pending()


def _failed(engine: _Engine, run: _NodeRun) -> None:
    """ProcessUpgradeFailedNodes: only a driver pod in sync and Ready moves the node on."""
    if not run.needs_upgrade and run.image_ok and run.ready:
        engine.move(run, "upgrade-done" if run.initially_cordoned else "uncordon-required")
        return
    if not run.waiting:
        run.waiting = (
            "upgrade-failed: the controller restarts no driver pod from here; the node needs "
            "manual attention"
        )
        run.waiting_at = run.node.label_location(UPGRADE_STATE_LABEL)
        if run.failed_because is not None:
            run.waiting, run.waiting_at = run.failed_because


_DONE = "upgrade-done"


def _reconcile(engine: _Engine, reh: Rehearsal, matrix_at: Location | None, no_spec: bool) -> None:
    """One ApplyState pass over the states read at its start."""
    # admission only reads the waiting nodes up to the free slots: no copy of that queue
    big = ("upgrade-required", _DONE)
    groups = {s: list(runs.values()) for s, runs in engine.groups.items() if s not in big}
    states = Counter({k: len(v) for k, v in engine.groups.items()})
    queued = states["upgrade-required"]  # nodes that enter it during this pass wait
    stale = [r for r in engine.stale_done if r.state == _DONE]
    for run in groups.get("", []) + stale:
        _done_or_unknown(engine, run)
    engine.stale_done = []
    waiting = islice(engine.groups.get("upgrade-required", {}).values(), queued)
    _admit(engine, waiting, states, reh)
    for run in groups.get("cordon-required", []):
        _cordon(engine, run)
    for run in groups.get("wait-for-jobs-required", []):
        _wait_for_jobs(engine, run)
    if groups.get("wait-for-jobs-required") and _wait_selector_invalid(engine):
        _frozen(engine, groups, "waitForCompletion.podSelector is not a label selector")
        return
    deleting = groups.get("pod-deletion-required", [])
    if deleting and no_spec:
        for run in deleting:  # SchedulePodEviction fails: ApplyState returns here
            engine.block(
                run,
                f'"{POD_DELETION_SPEC_EMPTY}": every reconcile fails at pod deletion, so no '
                "node gets past it",
                _policy_location(engine, ()),
                "policy",
            )
        return
    for run in deleting:
        _pod_deletion(engine, run)
    for run in groups.get("drain-required", []):
        _drain(engine, run)
    for run in groups.get("pod-restart-required", []):
        _pod_restart(engine, run, matrix_at)
    for run in groups.get("upgrade-failed", []):
        _failed(engine, run)
    for run in groups.get("validation-required", []):
        _validation(engine, run)
    for run in groups.get("uncordon-required", []):
        _uncordon(engine, run)


def _wait_selector_invalid(engine: _Engine) -> bool:
    selector = str(engine.policy["waitForCompletion"].get("podSelector") or "")
    return bool(selector) and parse_selector(selector) is None


#: the states ApplyState processes after wait-for-jobs-required
_AFTER_WAIT = (
    "pod-deletion-required",
    "drain-required",
    "pod-restart-required",
    "upgrade-failed",
    "validation-required",
    "uncordon-required",
)


def _frozen(engine: _Engine, groups: dict[str, list[_NodeRun]], cause: str) -> None:
    """The nodes whose step does not run because ApplyState returned before it."""
    where = _policy_location(engine, ("waitForCompletion", "podSelector"))
    for state in _AFTER_WAIT:
        for run in groups.get(state, []):
            engine.block(run, f"every reconcile fails before {state}: {cause}", where, "policy")


def _finished(engine: _Engine) -> bool:
    """Every node upgrade-done with a current driver pod, or kept back by the skip label."""
    done = engine.groups.get(_DONE, {})
    waiting = engine.groups.get("upgrade-required", {})
    if len(done) + len(waiting) != len(engine.runs):
        return False
    if any(not r.skip for r in waiting.values()):
        return False
    return not any(r.needs_upgrade for r in done.values())


def _slot_reason(engine: _Engine) -> tuple[str, Location | None]:
    policy = engine.policy
    busy = [r.node.name for r in engine.runs if r.state not in ("", _DONE, "upgrade-required")]
    if busy:
        return (
            f"waits for an upgrade slot: maxParallelUpgrades {policy['maxParallelUpgrades']}, "
            f"maxUnavailable {policy['maxUnavailable']}; held by {', '.join(busy[:5])}",
            _policy_location(engine, ("maxParallelUpgrades",)),
        )
    return (
        f"admitted by no reconcile: maxUnavailable {policy['maxUnavailable']} leaves no room "
        "(unavailable nodes use the budget)",
        _policy_location(engine, ("maxUnavailable",)),
    )


def _stalls(engine: _Engine) -> list[Stall]:
    stalls = []
    for run in engine.runs:
        if run.state == _DONE and not run.needs_upgrade:
            continue
        if run.state == "upgrade-required" and run.skip:
            continue
        if run.state == "upgrade-required" and not run.waiting:
            why, where = _slot_reason(engine)
        elif run.state in _REQUESTOR_STATES and not run.waiting:
            why = (
                f"{run.state} belongs to requestor mode: the maintenance operator's "
                "NodeMaintenance cordons and drains it, which the rehearsal does not model"
            )
            where = run.node.label_location(UPGRADE_STATE_LABEL)
        else:
            why = run.waiting or f"no step moves a node out of {run.state}"
            where = run.waiting_at
        stalls.append(Stall(run.node.name, run.state, why, where))
    return stalls


def rehearse(
    repo: Repo,
    flow: UpgradeFlow,
    runs: list[_NodeRun],
    matrix_at: Location | None,
    no_spec: bool,
) -> Rehearsal:
    """Step the controller until every managed node is done (or skipped) or nothing moves."""
    engine = _Engine(repo, flow, runs)
    reh = Rehearsal(flow, len(runs))
    error = max_unavailable_error(flow.raw_max_unavailable)
    if error is not None:
        where = _policy_location(engine, ("maxUnavailable",))
        reh.stalls = [
            Stall(r.node.name, r.state, f"every reconcile fails: maxUnavailable {error}", where)
            for r in runs
        ]
        return reh
    for number in range(1, MAX_RECONCILES):
        engine.wave = Wave(number, engine.clock)
        _reconcile(engine, reh, matrix_at, no_spec)
        wave = engine.wave
        if wave.nodes or wave.evictions or wave.blocks:
            reh.waves.append(wave)
        if _finished(engine):
            return reh
        if wave.nodes or wave.evictions:
            continue
        deadlines = [r.deadline for r in runs if r.deadline is not None]
        if not deadlines:
            break
        engine.clock = max(engine.clock, min(deadlines))
    reh.stalls = _stalls(engine)
    return reh


def node_runs(
    repo: Repo,
    nodes: list[Node],
    needs_upgrade: dict[str, bool],
    image_ok: dict[str, bool],
    tags: dict[str, str | None] | None = None,
) -> list[_NodeRun]:
    """The managed nodes' starting point, from their labels, cordon and Ready condition."""
    runs = []
    for order, node in enumerate(nodes):
        state = upgrade_state(node.labels)
        runs.append(
            _NodeRun(
                node=node,
                order=order,
                state=state,
                cordoned=node.unschedulable,
                ready=node_ready(node),
                initially_cordoned=node.unschedulable and state in ("", _DONE),
                needs_upgrade=needs_upgrade[node.name],
                image_ok=image_ok[node.name],
                skip=skip_requested(node.labels),
                tag=(tags or {}).get(node.name),
            )
        )
    return runs
