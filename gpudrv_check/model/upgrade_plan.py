"""The ordered driver upgrade of one node, each step ready or blocked, from the repo alone.

The order is the lab's (step 7): (1) secure the image - the precompiled tag the node needs
with the new driver, and whether the support matrix has it; (2) make headroom - every
PodDisruptionBudget over pods that can run on the node, with its numbers and the change that
would allow the evictions, and replicas that required anti-affinity strands; (3) drain with
`--ignore-daemonsets --delete-emptydir-data --timeout` (unmanaged pods block it); (4) swap
the driver - the driver labels the node reports afterwards; (5) uncordon.

What "can run on the node" means is the placement (model/placement.py): the plan does not
know where pods run now, so it is conservative - every workload that may land on the node is
considered, except where only certainty should block (an unmanaged pod blocks the drain only
when it can run nowhere else).
"""

from __future__ import annotations

import re
from dataclasses import field, replace

from gpudrv_check.core.finding import Location, quoted
from gpudrv_check.core.records import record
from gpudrv_check.k8s.disruption import (
    EVICTION_BUDGET_VIOLATION_MESSAGE,
    EVICTION_BUDGET_VIOLATION_STATUS,
    EVICTION_MULTIPLE_PDBS_MESSAGE,
    EVICTION_MULTIPLE_PDBS_STATUS,
)
from gpudrv_check.model.disruption import WorkloadPods
from gpudrv_check.model.driver import driver_managed, label_keys, planned_driver
from gpudrv_check.model.node import GPU_PRESENT, Node
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.upgrade_flow import CONTROLLER, POLICY_PATH, UpgradeFlow, upgrade_flow
from gpudrv_check.model.workload import Workload
from gpudrv_check.nvidia.driver_image import (
    DEPLOY_DRIVER_LABEL,
    DEPLOY_OPERANDS_LABEL,
    DEPRECATED_DRIVER_MAJOR_LABEL,
    DEPRECATED_DRIVER_MINOR_LABEL,
    DEPRECATED_DRIVER_REV_LABEL,
    DRIVER_VERSION_FULL_LABEL,
    DRIVER_VERSION_MAJOR_LABEL,
    DRIVER_VERSION_MINOR_LABEL,
    DRIVER_VERSION_REVISION_LABEL,
    driver_facts,
    os_tag,
    precompiled_tag,
)

_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?\Z")  # ASCII digits only
UNMANAGED_POD_ERROR = "cannot delete Pods that declare no controller (use --force to override)"

READY, BLOCKED = "ready", "blocked"


@record(frozen=True)
class DriverVersion:
    """A target driver version as written: `550.90.07` -> 550 / 90 / 07."""

    text: str
    major: str
    minor: str
    revision: str  # "" for a two-part version, as GFD writes it

    @classmethod
    def parse(cls, text: str) -> DriverVersion | None:
        match = _VERSION_RE.match(text.strip())
        if match is None:
            return None
        return cls(text.strip(), match.group(1), match.group(2), match.group(3) or "")


@record(frozen=True)
class Item:
    """One reason or note of a step: what, where, and what to change there."""

    message: str
    location: Location | None = None
    change: str | None = None
    fix: str | None = None  # what `plan --write` does to remove this blocker, if it can


@record(frozen=True)
class Step:
    number: int
    name: str
    summary: str
    blockers: tuple[Item, ...] = ()
    notes: tuple[Item, ...] = ()

    @property
    def status(self) -> str:
        return BLOCKED if self.blockers else READY


@record(frozen=True)
class LabelChange:
    key: str
    old: str
    new: str
    location: Location


@record
class Plan:
    node: Node
    target: DriverVersion
    current: str | None  # the node's driver version, from its labels
    tag: str | None  # the precompiled tag the node needs with the target driver
    matrix_row: tuple[str, str, str] | None = None  # to append (None: present or unknown)
    label_changes: list[LabelChange] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return all(step.status == READY for step in self.steps)

    @property
    def blocked_steps(self) -> list[int]:
        return [step.number for step in self.steps if step.status == BLOCKED]

    def blockers_write_cannot_fix(self) -> list[tuple[Step, Item]]:
        return [(s, b) for s in self.steps for b in s.blockers if b.fix is None]

    def with_fixes_written(self) -> Plan:
        """The plan after `--write` made its changes: fixable blockers become notes."""
        steps = []
        for step in self.steps:
            fixed = tuple(
                Item(f"--write {b.fix}", b.location) for b in step.blockers if b.fix is not None
            )
            if not fixed:
                steps.append(step)
                continue
            summary = (
                f"{self.tag} is in the support matrix now"
                if step.name == "image"
                else (step.summary)
            )
            steps.append(
                replace(
                    step,
                    summary=summary,
                    blockers=tuple(b for b in step.blockers if b.fix is None),
                    notes=fixed + step.notes,
                )
            )
        return replace(self, steps=steps)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _title(member: WorkloadPods) -> str:
    w = member.workload
    who = f"{w.kind} {w.namespace}/{w.name or '?'}"
    return f"{who} {w.role}" if w.role else who


def _driver_label_targets(repo: Repo, version: DriverVersion) -> dict[str, str]:
    """Every driver label key GFD (or the config) uses -> its value for ``version``."""
    targets = {
        DRIVER_VERSION_FULL_LABEL: version.text,
        DRIVER_VERSION_MAJOR_LABEL: version.major,
        DRIVER_VERSION_MINOR_LABEL: version.minor,
        DRIVER_VERSION_REVISION_LABEL: version.revision,
        DEPRECATED_DRIVER_MAJOR_LABEL: version.major,
        DEPRECATED_DRIVER_MINOR_LABEL: version.minor,
        DEPRECATED_DRIVER_REV_LABEL: version.revision,
    }
    for key in repo.config.labels.driver_branch:
        targets.setdefault(key, version.major)
    return targets


def _image_step(repo: Repo, node: Node, version: DriverVersion, plan: Plan) -> Step:
    keys = label_keys(repo.config)
    blockers: list[Item] = []
    notes: list[Item] = []
    if not node.is_gpu:
        blockers.append(
            Item(
                f'{node.name} is not a GPU node ({GPU_PRESENT} is not "true")',
                node.label_location(GPU_PRESENT),
            )
        )
    planned = planned_driver(node, repo)
    if planned is not None and not planned.managed:
        blockers.append(
            Item(
                f"the GPU Operator installs no driver on {node.name}: {planned.reason}",
                node.location(node.name_path),
            )
        )
    elif planned is None and not driver_managed(node):
        off = node.labels.get(DEPLOY_DRIVER_LABEL) == "false"
        key = DEPLOY_DRIVER_LABEL if off else DEPLOY_OPERANDS_LABEL
        blockers.append(
            Item(
                f"the GPU Operator does not manage the driver of {node.name} ({key}=false): "
                "it is installed on the host and upgraded outside the operator",
                node.label_location(key),
            )
        )
    facts, _ = driver_facts(node.labels, keys)
    missing = [
        key
        for key, value in (
            (str(keys["kernel"]), facts.kernel),
            (str(keys["os_id"]), facts.os_id),
            (str(keys["os_version_id"]), facts.os_version_id),
        )
        if value is None
    ]
    ostag = os_tag(facts.os_id, facts.os_version_id, repo.config.operator.version)
    tag = precompiled_tag(version.major, facts.kernel, ostag) if not missing else None
    plan.tag = tag
    if missing:
        blockers.append(
            Item(
                f"{node.name} lacks label(s) {', '.join(missing)}: the image tag cannot be formed",
                node.label_location(missing[0]),
                "add the label(s) Node Feature Discovery sets",
            )
        )
        return Step(1, "image", "the precompiled driver image for the new driver", tuple(blockers))
    if tag is None:
        blockers.append(Item(f"cannot form a valid image tag for {node.name}"))
        return Step(1, "image", "the precompiled driver image for the new driver", tuple(blockers))
    matrix = repo.matrix
    assert matrix is not None
    row = matrix.find(version.major, facts.kernel or "", ostag or "")
    if row is not None:
        summary = f"{tag} is in the support matrix"
        notes.append(
            Item(f"matrix row {','.join(row.key)}", Location(file=matrix.file, line=row.line))
        )
    else:
        plan.matrix_row = (version.major, facts.kernel or "", ostag or "")
        text = ",".join(plan.matrix_row)
        summary = f"{tag} is not in the support matrix"
        blockers.append(
            Item(
                f"driver image {tag} has not been built: the new driver pod on {node.name} would "
                "fail to pull it",
                Location(file=matrix.file, line=matrix.end_line + 1),
                f"build and push {tag}, then append `{text}`",
                fix=f"appended `{text}` (recording that {tag} was built and pushed)",
            )
        )
    notes.extend(_configured_version_notes(repo, node, version))
    return Step(1, "image", summary, tuple(blockers), tuple(notes))


def _configured_version_notes(repo: Repo, node: Node, version: DriverVersion) -> list[Item]:
    """The version the operator configuration installs on the node: the owning NVIDIADriver's,
    else the ClusterPolicy's ``driver.version`` (``model/driver_plan.py``)."""
    planned = planned_driver(node, repo)
    if planned is None or planned.source is None:
        return []
    source = planned.source
    cr = source.cr
    operator = repo.operator  # a source with no CR is (or comes from) its driver section
    if cr is not None:
        configured = cr.version
    else:
        configured = operator.get("driver", "version") if operator is not None else None
    if not isinstance(configured, str) or configured in (version.text, version.major):
        return []
    where = f"NVIDIADriver {source.name}" if source.kind == "nvidiadriver" else source.name
    return [
        Item(
            f"the {where} sets {'version' if cr is not None else 'driver.version'} "
            f"{configured}: the operator deploys that version on "
            f"{node.name}" + ("" if cr is not None else " and every node whose driver it manages"),
            source.location("version"),
            f"set its version to {version.text} (or {version.major} with precompiled "
            "drivers) for the driver to change",
        )
    ]


def _headroom_step(repo: Repo, node: Node) -> Step:
    disruption = repo.disruption
    flow = upgrade_flow(repo)  # the controller's default flow evicts GPU pods only
    candidates = [
        disruption.pods(w)
        for w in repo.workloads
        if disruption.pods(w).evicted_by_drain
        and disruption.pods(w).healthy > 0
        and any(n.name == node.name for n in disruption.pods(w).eligible)
        and flow.evicts(w)
    ]
    blockers: list[Item] = []
    notes: list[Item] = []
    if flow.kind == CONTROLLER and flow.config is not None:
        notes.append(
            Item(
                f"flow: {flow.describe()}; only the pods it evicts are counted",
                flow.config.location(("driver", "upgradePolicy")),
            )
        )
    seen: set[int] = set()
    candidate_ids = {id(m.workload) for m in candidates}
    for member in candidates:
        pdbs = disruption.covering(member.workload)
        if len(pdbs) > 1:
            listed = ", ".join(f"{p.namespace}/{p.name}" for p in pdbs)
            blockers.append(
                Item(
                    f"{_title(member)} is covered by {len(pdbs)} PodDisruptionBudgets ({listed}): "
                    f"evicting its pods fails with HTTP {EVICTION_MULTIPLE_PDBS_STATUS} "
                    f'"{EVICTION_MULTIPLE_PDBS_MESSAGE}"',
                    member.workload.location(member.workload.spec_path),
                    "keep one PodDisruptionBudget for these pods",
                )
            )
        for pdb in pdbs:
            if id(pdb) in seen:
                continue
            seen.add(id(pdb))
            coverage = disruption.coverage(pdb)
            if coverage is None:
                continue
            # pods that can run only here cannot come back healthy elsewhere during the drain
            pinned = sum(
                m.healthy
                for m in coverage.members
                if id(m.workload) in candidate_ids and [n.name for n in m.eligible] == [node.name]
            )
            wanted = max(1, pinned)
            budget = coverage.budget
            location = pdb.manifest.location(pdb.rule_path)
            if budget.disruptions_allowed >= wanted:
                notes.append(Item(f"{pdb.title}: {budget.describe()}", location))
                continue
            change = coverage.change(wanted)
            need = "" if wanted == 1 else f" ({wanted} of its pods can run only on {node.name})"
            blockers.append(
                Item(
                    f"{pdb.title}: {budget.describe()}{need}: evicting its pods from {node.name} "
                    f"is refused with HTTP {EVICTION_BUDGET_VIOLATION_STATUS} "
                    f'"{EVICTION_BUDGET_VIOLATION_MESSAGE}"',
                    location,
                    f"set {change.describe()} → {_plural(change.allowed, 'disruption')} allowed"
                    if change is not None
                    else None,
                )
            )
    for member in candidates:
        spread = member.spread
        if spread is not None and spread.strands_on_drain(node.name):
            unit = "node" if spread.per_node else f"{spread.term.topology_key} domain"
            already = (
                f"; {_plural(spread.pending, 'replica')} {'is' if spread.pending == 1 else 'are'}"
                " Pending already"
                if spread.pending
                else ""
            )
            notes.append(
                Item(
                    f"draining {node.name} leaves 1 replica of {_title(member)} Pending until "
                    f"uncordon: required anti-affinity on {spread.term.topology_key} allows one "
                    f"per {unit}, {spread.replicas} replicas over "
                    f"{_plural(spread.capacity, 'eligible ' + unit)}{already}",
                    member.workload.location(spread.topology_key_path),
                )
            )
        elif [n.name for n in member.eligible] == [node.name] and not disruption.covering(
            member.workload
        ):
            notes.append(
                Item(
                    f"{_title(member)} can run only on {node.name}: its pods stay Pending until "
                    "uncordon",
                    member.workload.location(member.workload.spec_path),
                )
            )
    covered = len(seen)
    summary = (
        f"{_plural(covered, 'PodDisruptionBudget')} over pods that can run on {node.name}"
        if covered
        else f"no PodDisruptionBudget covers pods that can run on {node.name}"
    )
    return Step(2, "headroom", summary, tuple(blockers), tuple(notes))


def _drain_step(repo: Repo, node: Node, timeout: str, headroom: Step) -> Step:
    command = (
        f"kubectl drain {node.name} --ignore-daemonsets --delete-emptydir-data --timeout={timeout}"
    )
    flow = upgrade_flow(repo)
    if flow.kind == CONTROLLER:
        blockers, notes = _controller_removal(repo, node, flow)
    else:
        blockers, notes = _unmanaged_pods(repo, node)
    if headroom.blockers:
        notes.append(
            Item(
                f"until step 2 is resolved this drain is refused and gives up after {timeout}, "
                f"leaving {node.name} cordoned (`kubectl uncordon {node.name}` undoes it)"
            )
        )
    return Step(3, "drain", command, tuple(blockers), tuple(notes))


def _unmanaged_pods(repo: Repo, node: Node) -> tuple[list[Item], list[Item]]:
    """The lab's drain: a pod without controller stops it (kubectl's unreplicatedFilter)."""
    disruption = repo.disruption
    blockers: list[Item] = []
    notes: list[Item] = []
    for workload in repo.workloads:
        member = disruption.pods(workload)
        if not member.bare or not member.evicted_by_drain or member.healthy == 0:
            continue
        eligible = [n.name for n in member.eligible]
        if node.name not in eligible:
            continue
        ref = f"{workload.namespace}/{workload.name or '?'}"
        where = workload.location(("metadata", "name"))
        if eligible == [node.name]:
            blockers.append(
                Item(
                    f"Pod {ref} can run only on {node.name} and has no controller: drain stops "
                    f'with "{UNMANAGED_POD_ERROR}"',
                    where,
                    "delete the pod first (nothing recreates it), or manage it with a Job or "
                    "Deployment",
                )
            )
        else:
            notes.append(
                Item(
                    f"Pod {ref} has no controller and may be running on {node.name}; if it is, "
                    f'drain stops with "{UNMANAGED_POD_ERROR}"',
                    where,
                )
            )
    return blockers, notes


def _controller_removal(repo: Repo, node: Node, flow: UpgradeFlow) -> tuple[list[Item], list[Item]]:
    """The upgrade controller's own pod removal (its podDeletion, then drain, policy): what
    sends the node to upgrade-failed blocks when certain (the pods can run only here, or a
    DaemonSet's), else is noted; what the drain takes over is noted."""
    spec = flow.policy["podDeletion"]
    at = flow.config.location((*POLICY_PATH, "podDeletion")) if flow.config else None
    notes = [
        Item(
            f"the upgrade controller removes the GPU pods itself, with podDeletion force "
            f"{_yaml_bool(spec.get('force'))}, deleteEmptyDir "
            f"{_yaml_bool(spec.get('deleteEmptyDir'))}, timeoutSeconds "
            f"{spec.get('timeoutSeconds')}, not with this command's flags",
            at,
        )
    ]
    blockers: list[Item] = []
    disruption = repo.disruption
    for workload in repo.workloads:
        member = disruption.pods(workload)
        if member.healthy == 0 or all(n.name != node.name for n in member.eligible):
            continue
        refused = _controller_refusal(flow, workload)
        if refused is None:
            continue
        why, fails, change = refused
        where = workload.location(("metadata", "name"))
        here = [n.name for n in member.eligible] == [node.name] or not member.evicted_by_drain
        if fails and here:
            blockers.append(Item(f"{workload.title}: {why}", where, change))
        elif fails:
            notes.append(Item(f"{workload.title} may run on {node.name}; if it does, {why}", where))
        else:
            notes.append(Item(f"{workload.title}: {why}", where))
    return blockers, notes


def _controller_refusal(flow: UpgradeFlow, workload: Workload) -> tuple[str, bool, str] | None:
    """Why the controller cannot remove the workload's pods from a node as planned: (the
    reason, whether the node ends in upgrade-failed, the change that avoids it), or None.
    pod_manager.go SchedulePodEviction sends a failure to drain-required with drain.enable
    (updateNodeToDrainOrFailed), where the drain's own force and deleteEmptyDir apply."""
    drain_off = "the node goes to upgrade-failed (drain.enable is off)"
    if flow.stops_deletion(workload):
        what = "mirror" if workload.mirror_pod else "DaemonSet"
        skipped = (
            f"asks for a GPU, so pod deletion counts its pod, but the drain helper skips {what} "
            'pods: "Cannot delete all required pods"'
        )
        if flow.drain_enabled:
            return f"{skipped}; the node is drained instead (drain.enable)", False, ""
        return f"{skipped}; {drain_off}", True, "set drain.enable: true (the drain skips such pods)"
    if flow.deletes(workload):
        why = flow.undeletable(workload, "podDeletion")
        if why is None:
            return None
        fix = _UNDELETABLE_FIX[why]
        if not flow.drain_enabled:
            return f"podDeletion: {why}; {drain_off}", True, f"set podDeletion.{fix}"
        if not flow.drains(workload):
            return (
                f"podDeletion: {why}; the drain does not select it (drain.podSelector)",
                False,
                "",
            )
        again = flow.undeletable(workload, "drain")
        if again is None:
            return f"podDeletion: {why}; the drain removes it (drain.enable)", False, ""
        return (
            f"podDeletion: {why}, and drain: {again}: the node goes to upgrade-failed",
            True,
            f"set podDeletion.{fix} (or drain.{_UNDELETABLE_FIX[again]})",
        )
    drained = flow.undeletable(workload, "drain") if flow.drains(workload) else None
    if drained is not None:
        return f"if pod deletion fails and the node is drained, drain: {drained}", False, ""
    return None


#: the policy field that lets the drain helper remove a pod it refuses (filters.go)
_UNDELETABLE_FIX = {
    "cannot delete Pods with local storage (emptyDir)": "deleteEmptyDir: true",
    "cannot delete Pods that declare no controller": "force: true",
}


def _yaml_bool(value: object) -> str:
    return "true" if value is True else "false"


def _relabel_step(repo: Repo, node: Node, version: DriverVersion, plan: Plan) -> Step:
    targets = _driver_label_targets(repo, version)
    changes = []
    present = [key for key in node.labels if key in targets]
    for key in present:
        old = node.labels[key]
        if old != targets[key]:
            changes.append(LabelChange(key, old, targets[key], node.label_location(key)))
    plan.label_changes = changes
    if not present:
        return Step(
            4,
            "relabel",
            f"{node.name} carries no driver version label",
            (
                Item(
                    f"{node.name} has none of the driver labels ({', '.join(sorted(targets))})",
                    node.label_location(DRIVER_VERSION_MAJOR_LABEL),
                    "export the node again with the labels GPU Feature Discovery sets",
                ),
            ),
        )
    if not changes:
        return Step(
            4,
            "relabel",
            f"the driver labels of {node.name} ({', '.join(present)}) already match {version.text}",
        )
    summary = f"kubectl label node {node.name} --overwrite " + " ".join(
        f"{c.key}={c.new}" for c in changes
    )
    notes = tuple(Item(f"{c.key}: {quoted(c.old)} → {quoted(c.new)}", c.location) for c in changes)
    return Step(4, "relabel", summary, (), notes)


def _uncordon_step(node: Node) -> Step:
    notes = []
    if node.unschedulable:
        notes.append(
            Item(
                f"the inventory records {node.name} as cordoned (spec.unschedulable: true)",
                node.location(node.unschedulable_path),
            )
        )
    return Step(5, "uncordon", f"kubectl uncordon {node.name}", (), tuple(notes))


def plan_upgrade(repo: Repo, node: Node, version: DriverVersion, timeout: str = "300s") -> Plan:
    """The five steps of upgrading ``node`` to ``version`` (the repo must have a matrix)."""
    facts, _ = driver_facts(node.labels, label_keys(repo.config))
    plan = Plan(node=node, target=version, current=facts.driver_version, tag=None)
    image = _image_step(repo, node, version, plan)
    headroom = _headroom_step(repo, node)
    drain = _drain_step(repo, node, timeout, headroom)
    relabel = _relabel_step(repo, node, version, plan)
    plan.steps = [image, headroom, drain, relabel, _uncordon_step(node)]
    return plan
