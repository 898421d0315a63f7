"""PodDisruptionBudgets over the repo's workloads: which pods each covers and what it allows.

A PDB covers the pods of a workload when it is in the workload's namespace and its selector
matches the pod template's labels (k8s/disruption.py `pdb_covers`). Pods are grouped per owning
workload (`PodGroup`), as the disruption controller counts each controller's scale once, and
the budget is computed at full health: every pod that can run is Ready. "Can run" is the
placement (no eligible node: all Pending) and the anti-affinity cap (model/spread.py: replicas
beyond the topology domains stay Pending and are never healthy).

Pod counts per kind: Deployment, ReplicaSet, StatefulSet, ReplicationController their
`replicas`; Job its `parallelism` capped by `completions`, none while suspended (unless
Kueue admits it); CronJob its job template's likewise, none while the CronJob is suspended
(pods that exist while a run is active); DaemonSet one per eligible node; a bare Pod one,
with no controller (a Pod manifest in a repo is never owned: ownerReferences are set by
controllers), except a static pod's mirror, which the kubelet makes controlled by its Node
(pkg/kubelet/pod/mirror_client.go `CreateMirrorPod`), an owner without a scale.

A selector is matched against the labels a pod has, not only its template's: the controller
adds its own (`pdb_pod_labels`), as the disruption controller (`getPodsForPdb`) and the eviction
API (eviction.go `getPodDisruptionBudgets`) match the pod's labels. A PDB selecting a Job's
pods by `job-name` covers them; one reading a value the repo cannot know (a
`pod-template-hash`) matches it through `Exists`/`NotIn` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding, ObjectRef
from gpudrv_check.core.located import Path, field_path_text, locate
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.k8s.disruption import (
    Budget,
    BudgetChange,
    PodGroup,
    budget_change,
    disruption_budget,
    pdb_scope,
    validate_pdb_spec,
)
from gpudrv_check.k8s.labels import MAPPINGS, Problem
from gpudrv_check.k8s.labelselector import EVERYTHING, SelectorKey, selector_key
from gpudrv_check.k8s.podaffinity import NO_SIBLING_LABELS, sibling_pod_labels
from gpudrv_check.model.node import Node
from gpudrv_check.model.occupancy import pod_count
from gpudrv_check.model.spread import (
    DomainCache,
    Spread,
    namespace_labels,
    sibling_labels,
    workload_spread,
)
from gpudrv_check.model.workload import SCALABLE_KINDS, Workload
from gpudrv_check.read.policy import builtin

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo

PDB_KIND = "PodDisruptionBudget"
PDB_API_VERSIONS = frozenset(("policy/v1", "policy/v1beta1"))


@record
class PDB:
    """One PodDisruptionBudget object and the problems the API server would reject it for."""

    manifest: Manifest
    problems: list[Problem] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.manifest.name or "?"

    @property
    def namespace(self) -> str:
        return self.manifest.namespace or "default"

    @property
    def spec(self) -> Mapping | None:
        spec = self.manifest.get("spec")
        return spec if isinstance(spec, MAPPINGS) else None

    @property
    def valid(self) -> bool:
        """In force: the API server accepts it (an object without a spec covers nothing)."""
        return not self.problems and self.spec is not None

    @property
    def ref(self) -> ObjectRef:
        return self.manifest.ref

    @property
    def title(self) -> str:
        return f"PodDisruptionBudget {self.namespace}/{self.name}"

    def covers(self, workload: Workload, labels: Mapping[str, str] | None = None) -> bool:
        """Whether the eviction API applies this PDB to the workload's pods. ``labels``: the
        pods' labels (`pdb_pod_labels`, computed once per workload by callers matching many
        PDBs); worked out here when not given."""
        scope = self._covering_scope
        if scope is None or scope[0] != workload.namespace:
            return False
        # str -> str entries only (model/workload.py pod_labels): no cleaning needed
        return scope[1].matches_clean(pdb_pod_labels(workload) if labels is None else labels)

    @cached_property
    def _covering_scope(self) -> tuple[str, SelectorKey] | None:
        """The namespace and selector of a PDB that can cover pods (None when it covers none),
        worked out once for every workload it is matched against."""
        if not self.valid:
            return None
        spec = self.spec or {}
        v1beta1 = self.manifest.api_version == "policy/v1beta1"
        if v1beta1 and selector_key(spec.get("selector")) == EVERYTHING:
            return None  # policy/v1beta1: an empty selector selects no pod
        return self._scope

    @cached_property
    def _scope(self) -> tuple[str, SelectorKey] | None:
        """pdb_covers' namespace and selector, compiled once for every workload it is matched
        against."""
        # the namespace it is applied in (a kustomization's `namespace:` sets it), as its own
        # title and the workloads' namespaces read it
        return pdb_scope(self.manifest.data, namespace=self.namespace)

    @property
    def rule_path(self) -> Path:
        """Where the budget is written: minAvailable, maxUnavailable, else spec."""
        spec = self.spec or {}
        for key in ("minAvailable", "maxUnavailable"):
            if spec.get(key) is not None:
                return ("spec", key)
        return ("spec",)

    def location_text(self) -> str:
        return self._location_text

    @cached_property
    def listing(self) -> str:
        """``ns/name (file:line:column)``, as findings list the budgets covering a pod."""
        return f"{self.namespace}/{self.name} ({self._location_text})"

    @cached_property
    def _location_text(self) -> str:
        return str(self.manifest.location(self.rule_path))


def pdb_pod_labels(workload: Workload) -> Mapping[str, str]:
    """The labels of the workload's pods as a PDB selector sees them: the template's, and what
    the controller adds when it creates each pod (k8s/podaffinity.py `controller_labels`: a
    Job's `job-name` and `batch.kubernetes.io/job-name` unless the template sets them, pkg/
    registry/batch/job/strategy.go `generateSelector`; a Deployment's `pod-template-hash`; a
    StatefulSet's `controller-revision-hash` and per-pod name and index). A value the repo
    cannot know (a hash, a uid) is a placeholder no selector value equals, so only `Exists`
    and `NotIn` match it; a per-pod key holds another placeholder (each pod its own value: a
    selector naming one pod's value covers no pod of the model, see the README)."""
    siblings = sibling_labels(workload)
    if siblings is NO_SIBLING_LABELS or not (siblings.shared or siblings.per_pod):
        return workload.pod_labels
    return sibling_pod_labels(workload.pod_labels, siblings)


def _problem_path(manifest: Manifest, problem: Problem) -> Path:
    """The key a spec problem is about; for both fields set, the one written second."""
    if not problem.path and "both" in problem.message:
        later = max(
            ("minAvailable", "maxUnavailable"),
            key=lambda key: locate(manifest.data, ("spec", key)),
        )
        return ("spec", later)
    return ("spec", *problem.path)


def _pdb_fix(path: tuple, message: str) -> str:
    """The fix of one PodDisruptionBudget problem (k8s/disruption.py `validate_pdb_spec`)."""
    field = path[0] if path else None
    if "cannot be both set" in message:
        return "Set exactly one of minAvailable or maxUnavailable."
    if field in ("minAvailable", "maxUnavailable"):
        return f"Write {field} as an integer of 0 or more, or a percentage up to 100% like `25%`."
    if field == "selector":
        return (
            "Write a valid label selector: matchLabels, or matchExpressions with In/NotIn and "
            "values, Exists/DoesNotExist without."
        )
    if field == "unhealthyPodEvictionPolicy":
        return "Write unhealthyPodEvictionPolicy: IfHealthyBudget or AlwaysAllow."
    return (
        "Set exactly one of minAvailable or maxUnavailable, each an integer or a percentage like "
        "`25%`, and a valid label selector."
    )


def build_pdbs(manifests: list[Manifest]) -> tuple[list[PDB], list[Finding]]:
    """Every PodDisruptionBudget of the repo, and a GPU040 finding per invalid field."""
    pdbs: list[PDB] = []
    findings: list[Finding] = []
    for manifest in manifests:
        if manifest.kind != PDB_KIND or manifest.api_version not in PDB_API_VERSIONS:
            continue
        spec = manifest.get("spec")
        problems = validate_pdb_spec(spec) if "spec" in manifest.data else []
        pdb = PDB(manifest, problems)
        pdbs.append(pdb)
        for problem in problems:
            path = _problem_path(manifest, problem)
            where = field_path_text(path)
            findings.append(
                Finding(
                    rule=builtin("invalid-field").id,
                    severity=builtin("invalid-field").severity,
                    message=f"{pdb.title}: {where}: {problem.message}; the API server rejects "
                    "it, so no budget is in force",
                    hint=_pdb_fix(problem.path, problem.message),
                    location=manifest.location(path),
                    object=manifest.ref,
                    path=list(path),
                )
            )
    return pdbs, findings


@record(frozen=True, slots=True)
class WorkloadPods:
    """A workload's pods as a PDB sees them at full health."""

    workload: Workload
    pods: int  # pods the workload asks for
    healthy: int  # of those, the ones that can be Running and Ready
    eligible: tuple[Node, ...]
    spread: Spread | None = None
    #: the GPU nodes among ``eligible``, and their names: shared by every workload with the
    #: same constraint set (computed once per set, not once per workload)
    gpu: tuple[Node, ...] = ()
    gpu_names: frozenset[str] = frozenset()
    _group: PodGroup | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def group(self) -> PodGroup:
        """The pods as the disruption controller groups them (built once per workload, not
        once per PDB matched against it)."""
        if self._group is None:
            object.__setattr__(self, "_group", self._owner_group())
        assert self._group is not None
        return self._group

    def _owner_group(self) -> PodGroup:
        kind = self.workload.kind
        name = self.workload.name or "?"
        if self.workload.owner_kind:  # a custom resource's template (policies/workloads.yaml)
            owner = self.workload.owner_kind
            scale = self.workload.owner_replicas if self.workload.owner_scalable else None
            return PodGroup(owner, self.workload.owner_name or name, scale, self.pods, self.healthy)
        if kind == "Pod":
            if self.workload.mirror_pod:
                # the kubelet makes the Node the mirror pod's controller (mirror_client.go
                # CreateMirrorPod); a Node has no scale (disruption.go getScaleController)
                node = self.workload.manifest.get("spec", "nodeName")
                node_name = node if isinstance(node, str) and node else "?"
                return PodGroup("Node", node_name, None, self.pods, self.healthy)
            return PodGroup("", name, None, self.pods, self.healthy)
        if kind == "CronJob":
            return PodGroup("Job", name, None, self.pods, self.healthy)
        replicas = self.workload.replicas if kind in SCALABLE_KINDS else None
        return PodGroup(kind, name, replicas, self.pods, self.healthy)

    @property
    def gpu_nodes(self) -> tuple[Node, ...]:
        return self.gpu

    @property
    def bare(self) -> bool:
        return self.workload.kind == "Pod"

    @property
    def evicted_by_drain(self) -> bool:
        """kubectl drain --ignore-daemonsets leaves DaemonSet and mirror pods alone."""
        return self.workload.kind != "DaemonSet" and not self.workload.mirror_pod


@record(frozen=True)
class Coverage:
    """A PDB in force, the workloads it covers, and its budget at full health."""

    pdb: PDB
    members: tuple[WorkloadPods, ...]
    budget: Budget

    def change(self, wanted: int = 1) -> BudgetChange | None:
        return budget_change(self.pdb.manifest.data, self.budget, wanted)

    @property
    def blocks(self) -> bool:
        """0 disruptions allowed while some covered pod is healthy (so evictions get 429)."""
        return self.budget.disruptions_allowed == 0 and self.budget.current_healthy > 0


class _LabelIndex:
    """Workloads by namespace and by label pair, so a PDB is matched against few of them."""

    def __init__(self, workloads: list[Workload], labels: dict[int, Mapping[str, str]]) -> None:
        self.by_namespace: dict[str, list[Workload]] = {}
        self.by_label: dict[tuple[str, str, str], list[Workload]] = {}
        for workload in workloads:
            self.by_namespace.setdefault(workload.namespace, []).append(workload)
            for key, value in labels[id(workload)].items():
                self.by_label.setdefault((workload.namespace, key, value), []).append(workload)

    def label(self, pdb: PDB) -> tuple[str, str, str] | None:
        """(namespace, key, value) when the selector of ``pdb`` is one label (`matchLabels:
        {k: v}`, as most are): the index lists exactly the workloads it covers, in repo
        order (`by_label`). None otherwise."""
        scope = pdb._covering_scope
        if scope is None or scope[0] != pdb.namespace or scope[1].kind != "requirements":
            return None
        requirements = scope[1].requirements
        if len(requirements) != 1 or requirements[0].operator != "In":
            return None
        req = requirements[0]
        if len(req.values) != 1:
            return None
        return (pdb.namespace, req.key, req.values[0])

    def candidates(self, pdb: PDB) -> list[Workload]:
        """A superset of the workloads ``pdb`` can cover, in repo order."""
        everyone = self.by_namespace.get(pdb.namespace, [])
        key = selector_key((pdb.spec or {}).get("selector"))
        if key.kind != "requirements":
            return everyone if key.kind == "everything" else []
        for req in key.requirements:
            if req.operator == "In":
                if len(req.values) == 1:  # matchLabels: the index lists them in repo order
                    return self.by_label.get((pdb.namespace, req.key, req.values[0]), [])
                found = {
                    id(w)
                    for value in req.values
                    for w in self.by_label.get((pdb.namespace, req.key, value), [])
                }
                return [w for w in everyone if id(w) in found]
        return everyone


def _budget_key(pdb: PDB, label: tuple[str, str, str] | None) -> tuple | None:
    """What a valid PDB's budget depends on when one label selects its pods: the label and
    minAvailable and maxUnavailable as written (type and value); None otherwise."""
    spec = pdb.spec
    if label is None or spec is None:
        return None
    written = []
    for field_name in ("minAvailable", "maxUnavailable"):
        value = spec.get(field_name)
        if value is not None and value.__class__ not in (int, str):
            return None
        written.append((value.__class__.__name__, value))
    return (label, *written)


def _in_force(pdbs: list[PDB]) -> set[int]:
    """The ids of the PDBs in force: the valid ones, and the same namespace and name written
    twice in one file (copies in several files are one object already, model/identity.py)
    once, the last one applied (`kubectl apply` writes each document in turn): the API server
    holds one object, not two budgets whose pods the eviction API refuses with HTTP 500
    (GPU024). A copy the API server rejects changes nothing: the one before stays."""
    last: dict[tuple[str, str, str], int] = {}
    kept: set[int] = set()
    for pdb in pdbs:
        if not pdb.valid:
            continue
        name = pdb.manifest.name
        if not isinstance(name, str) or not name or name.endswith("*"):
            # generateName (`name*`): each apply creates another object
            kept.add(id(pdb))
            continue
        last[(pdb.manifest.file, pdb.namespace, name)] = id(pdb)
    kept.update(last.values())
    return kept


class Disruption:
    """PDB coverage and budgets over the whole repo, computed once."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._pods: dict[int, WorkloadPods] = {}
        namespaces = namespace_labels(repo)
        domain_cache: DomainCache = {}
        # per eligible-node list (one per constraint set, placement memoises it): the tuple,
        # its GPU nodes and their names, built once and shared
        shared: dict[int, tuple[list[Node], tuple[Node, ...], tuple[Node, ...], frozenset]] = {}
        from gpudrv_check.model.kueue import never_admitted

        held = never_admitted(repo)  # Kueue never admits them: they have no pods to evict
        for workload in repo.workloads:
            listed = repo.placement.eligible(workload)
            entry = shared.get(id(listed))
            if entry is None:
                gpu = tuple(n for n in listed if n.is_gpu)
                entry = shared[id(listed)] = (
                    listed,
                    tuple(listed),
                    gpu,
                    frozenset(n.name for n in gpu),
                )
            _, eligible, gpu, gpu_names = entry
            pods = 0 if held and id(workload) in held else pod_count(workload, len(eligible))
            spread = workload_spread(repo, workload, namespaces, domain_cache)
            healthy = 0 if not eligible else pods
            if spread is not None:
                healthy = min(healthy, spread.capacity)
            running = repo.occupancy.replicas(workload)
            if running is not None:  # the nodes' room, shared with the other pods
                healthy = min(healthy, running.placed)
            self._pods[id(workload)] = WorkloadPods(
                workload, pods, healthy, eligible, spread, gpu, gpu_names
            )
        # the PDBs covering each workload, as sources merged on first asking (`covering`): the
        # one list of the PDBs selecting by each label (shared by every workload the label
        # selects: appending each PDB to each of them cost pdbs x workloads per label, 4 M
        # appends at 40k workloads), and a list of its own for the PDBs selecting otherwise
        self._sources: dict[int, list[list[PDB]]] = {}
        self._covering: dict[int, list[PDB]] = {}
        self._order: dict[int, int] = {}
        sources = self._sources
        indexed = [w for w in repo.workloads if not w.template_only]
        # the labels each workload's pods have, as selectors see them (computed once)
        labels = {id(w): pdb_pod_labels(w) for w in indexed}
        index = _LabelIndex(indexed, labels)
        self.coverages: list[Coverage] = []
        # budgets of PDBs with one label and the same minAvailable and maxUnavailable: one
        # computation (the budget reads nothing else of a valid spec, and the label names
        # the covered pods)
        budgets: dict[tuple, Budget] = {}
        # PDBs selecting by the same one label cover the same pods: one members tuple and one
        # list of those PDBs for all of them (the same objects: rules memoise by identity)
        by_label: dict[tuple[str, str, str], tuple[tuple[WorkloadPods, ...], list[PDB]]] = {}
        own: dict[int, list[PDB]] = {}
        pods_of = self._pods
        in_force = _in_force(repo.pdbs)
        for order, pdb in enumerate(repo.pdbs):
            if id(pdb) not in in_force:
                continue
            self._order[id(pdb)] = order
            label = index.label(pdb)
            members: tuple[WorkloadPods, ...]
            if label is None:
                found: list[WorkloadPods] = []
                for workload in index.candidates(pdb):
                    if pdb.covers(workload, labels[id(workload)]):
                        found.append(pods_of[id(workload)])
                        mine = own.get(id(workload))
                        if mine is None:
                            mine = own[id(workload)] = []
                            sources.setdefault(id(workload), []).append(mine)
                        mine.append(pdb)
                members = tuple(found)
            else:
                same = by_label.get(label)
                if same is None:
                    covered = index.by_label.get(label, [])
                    same = by_label[label] = (tuple(pods_of[id(w)] for w in covered), [])
                    for w in covered:
                        sources.setdefault(id(w), []).append(same[1])
                members = same[0]
                same[1].append(pdb)
            key = _budget_key(pdb, label)
            budget = budgets.get(key) if key is not None else None
            if budget is None:
                groups = [m.group for m in members if m.pods]
                budget = disruption_budget(pdb.manifest.data, groups)
                if key is not None:
                    budgets[key] = budget
            self.coverages.append(Coverage(pdb, members, budget))
        self._coverage = {id(c.pdb): c for c in self.coverages}

    def pods(self, workload: Workload) -> WorkloadPods:
        return self._pods[id(workload)]

    def spread(self, workload: Workload) -> Spread | None:
        return self._pods[id(workload)].spread

    def covering(self, workload: Workload) -> list[PDB]:
        """The PDBs in force that cover the workload's pods, in file order (do not mutate the
        result: workloads one label selects share it)."""
        found = self._covering.get(id(workload))
        if found is None:
            listed = self._sources.get(id(workload))
            if not listed:
                return []
            if len(listed) == 1:
                found = listed[0]
            else:  # each source is in file order: sorting merges them
                order = self._order
                found = sorted(
                    (pdb for pdbs in listed for pdb in pdbs), key=lambda pdb: order[id(pdb)]
                )
            self._covering[id(workload)] = found
        return found

    def coverage(self, pdb: PDB) -> Coverage | None:
        return self._coverage.get(id(pdb))
