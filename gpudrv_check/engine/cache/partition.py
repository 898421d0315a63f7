"""One changed file, one namespace checked again: the partition cache of `check`.

What a finding about a namespaced workload or a PodDisruptionBudget says depends on that object,
on the other such objects of its namespace (which budgets cover which pods), and on the
cluster-wide objects: nodes, the support matrix, the operator configuration, DaemonSets,
Namespaces, as long as no rule reads that kind across namespaces, and on the other namespaces'
workloads only through the nodes' capacity they share (model/occupancy.py). Which kinds
qualify is derived from the rules' declarations (`partition_kinds`, rules/plan.py): read at
`scope: namespace` and by nothing at `scope: cluster`. A rule may read them across namespaces
only `when:` a condition holds (GPU025: an endless waitForCompletion selector, over the
Deployments, StatefulSets, ... of every namespace); in a run where it holds, the engine reads every
namespace (engine/run.py `load`), so the cache never hides an object from such a rule.

Shared capacity: every partition's key also digests every file's *capacity demand* (what its
workloads request, how many pods, where they may go, in which order), so a change of anyone's
demand makes the run a full one, while other edits (an image, a label the placement does not
read) stay within their partition. A partial run takes the capacity outcome (who runs, who stays
Pending) of the last full run with the same demands; without one it is a full run.

So a file whose objects are all of those kinds and all in one namespace belongs to that
namespace's *partition*; every other file (nodes, DaemonSets, ConfigMaps, files mixing kinds or
namespaces, files that did not parse) is *shared*. A namespace is shared as a whole when it has
a DaemonSet (a budget there may cover DaemonSet pods, which the operand rules also read) or when
any of its workloads or budgets sits in a shared file (that file is evaluated on every run, and
what it says may involve the namespace's other objects: a budget covering them, an ignore
annotation on an object of the same identity).

The key of a partition is the digest of the run's context (tool version, arguments, config,
matrix, policies: everything but the manifest files), of every shared file, and of the
partition's own files. A run reads (decodes) the shared files and the files of partitions whose
key changed, evaluates every rule on them exactly as a full run would, and takes the findings
of the other partitions from the cache. Any change to a shared file or to the context changes
every key, and the run is a full one. Findings are cached after severities and exemptions were
applied, and merged back in the order a full run sorts them (see tests/performance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


def partition_kinds() -> frozenset[str]:
    """The kinds whose findings depend only on their own namespace (and the shared objects):
    derived from what the rules declare they read, and at which scope (rules/plan.py)."""
    from gpudrv_check.rules.plan import partition_kinds as declared

    return declared()


#: a namespace holding one of these is shared as a whole
SHARED_NAMESPACE_KINDS = frozenset(("DaemonSet",))
CACHE_KIND = "partitions"
#: the shared-capacity outcome of the last full run, keyed by everything it depends on
OCCUPANCY_KIND = "occupancy"

# per file: ((kind, namespace or None) per object, documents skipped); None when unknown
Summary = tuple[tuple[tuple[str, Any], ...], int]


#: a pseudo-object in the summary of a file with `${…}` placeholders: such a file is shared
#: (every run reads it), since what its placeholders stand for depends on the Flux
#: Kustomizations of the whole repo and the run names them all (model/placeholders.py)
PLACEHOLDERS = ("${}", None)


#: the pseudo-kind of a summary entry holding the digest of the file's capacity demand
CAPACITY = "#capacity"
#: the parts of a pod spec that decide how much room its pods take and where
_DEMAND_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "nodeName",
    "runtimeClassName",
    "resources",
    "overhead",
    "priorityClassName",
)


def _demand(manifest: Any) -> Any:
    """What of one workload the shared capacity depends on: for a core kind, the parts of its
    pod spec that decide room and place; for a kind of the workload table, its whole spec (its
    templates and replica counts sit at kind-specific paths)."""
    from gpudrv_check.k8s.podspec import POD_SPEC_PATHS

    identity = (manifest.kind, manifest.namespace, manifest.name, manifest.api_version)
    path = POD_SPEC_PATHS.get(manifest.kind)
    if path is None:
        spec = manifest.get("spec")
        return (*identity, spec) if isinstance(spec, dict) else None
    spec = manifest.get(*path)
    if not isinstance(spec, dict):
        return None
    containers = []
    for kind in ("initContainers", "containers"):
        items = spec.get(kind)
        for c in items if isinstance(items, list) else []:
            if isinstance(c, dict):
                containers.append((kind, c.get("resources"), c.get("restartPolicy")))
    labels = manifest.get(*path[:-1], "metadata", "labels") if len(path) > 1 else None
    scale = manifest.get("spec", "replicas"), manifest.get("spec", "parallelism")
    return (*identity, scale, labels, [spec.get(f) for f in _DEMAND_FIELDS], containers)


def capacity_digest(manifests: list[Any]) -> str | None:
    """The digest of a file's workloads' capacity demand; None when it holds no workload."""
    import json

    from gpudrv_check.engine.cache.store import digest

    kinds = partition_kinds()
    demands = [_demand(m) for m in manifests if m.kind in kinds]
    if not any(d is not None for d in demands):
        return None
    return digest(json.dumps(demands, sort_keys=True, default=str))


def summarize(result: Any, placeholders: bool = False) -> Summary:
    """What planning needs of a FileResult, without its trees."""
    objects = tuple((m.kind, m.namespace) for m in result.manifests)
    if placeholders:
        objects += (PLACEHOLDERS,)
    demand = capacity_digest(result.manifests)
    if demand is not None:
        objects += ((CAPACITY, demand),)
    return (objects, len(result.skipped))


def object_count(summary: Summary) -> int:
    """The objects a summarized file holds (its pseudo-entries left out)."""
    return sum(1 for kind, _ in summary[0] if kind not in (CAPACITY, PLACEHOLDERS[0]))


def valid_summary(summary: Any) -> bool:
    """Whether a cached value has the shape of a Summary (cache entries are checked, never
    trusted to be of the right type)."""
    return (
        isinstance(summary, tuple)
        and len(summary) == 2
        and isinstance(summary[0], tuple)
        and isinstance(summary[1], int)
        and all(isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) for o in summary[0])
    )


class PartitionEntry(NamedTuple):
    """What the cache holds for one namespace: the key it was evaluated under and its findings
    (and suppressed findings) as JSON dumps, after severities and exemptions were applied."""

    key: str
    findings: list[Any]
    suppressed: list[Any]

    @classmethod
    def loaded(cls, value: Any) -> PartitionEntry | None:
        """The entry of a stored value, or None when it has not the shape of one."""
        if not (isinstance(value, tuple) and len(value) == 3):
            return None
        key, findings, suppressed = value
        if not (
            isinstance(key, str) and isinstance(findings, list) and isinstance(suppressed, list)
        ):
            return None
        return cls(key, findings, suppressed)

    def stored(self) -> tuple[str, list[Any], list[Any]]:
        """As `marshal` stores it: a plain tuple."""
        return (self.key, self.findings, self.suppressed)

    def validated(self) -> tuple[list, list] | None:
        """The (findings, suppressed) as Findings, or None if they do not validate."""
        from gpudrv_check.core.finding import Finding

        try:
            return (
                [Finding.from_record(d) for d in self.findings],
                [Finding.from_record(d) for d in self.suppressed],
            )
        except ValueError:  # not an entry of ours
            return None


def _namespace(kind: str, namespace: Any) -> str:
    return namespace if isinstance(namespace, str) and namespace else "default"


@dataclass
class Plan:
    """Which files a run decodes, and the cached findings of the partitions it does not."""

    cache: Any
    name: str
    partition_of: dict[str, str] = field(default_factory=dict)  # rel -> namespace
    keys: dict[str, str] = field(default_factory=dict)  # namespace -> key of this run
    stored: dict[str, PartitionEntry] = field(default_factory=dict)  # namespace -> cached entry
    clean: set[str] = field(default_factory=set)  # namespaces taken from the cache
    findings: dict[str, tuple[list, list]] = field(default_factory=dict)  # of the clean ones
    #: digest of the context, the shared files and every file's capacity demand
    base: str = ""
    #: the capacity outcome stored under ``base`` (model/occupancy.py records), when reused
    occupancy: dict | None = None

    @property
    def partial(self) -> bool:
        return bool(self.clean)

    def decode(self, rel: str) -> bool:
        """Whether this run needs the file's objects."""
        return self.partition_of.get(rel) not in self.clean


def plan(
    cache: Any,
    name: str,
    context: str,
    files: list[tuple[str, str, Summary | None]],
) -> Plan:
    """Partition the files (path, how it was read, summary; summary None: shared) and find
    which partitions the cache still answers for. "How it was read" is the content digest with
    anything else that changes what the file yields (Helm template, Kustomize patch, error)."""
    from gpudrv_check.engine.cache.store import digest

    # a file of one namespace's workloads and budgets only: a candidate for that partition
    candidate = {rel: _single_namespace(summary) for rel, _, summary in files}
    # a namespace is shared as a whole when it has a DaemonSet, or when any of its workloads
    # or budgets sits in a shared file: that file is evaluated every run, and its findings may
    # involve the namespace's other objects (a budget covering them, an annotation on an object
    # of the same identity), so they must all be read with it
    shared_namespaces: set[str] = set()
    demands: list[tuple[str, str]] = []
    kinds = partition_kinds()
    for rel, _, summary in files:
        for kind, ns in summary[0] if summary is not None else ():
            if kind == CAPACITY:
                demands.append((rel, str(ns)))
            elif kind in SHARED_NAMESPACE_KINDS or (kind in kinds and candidate[rel] is None):
                shared_namespaces.add(_namespace(kind, ns))
    out = Plan(cache, name)
    shared: list[tuple[str, str]] = []
    members: dict[str, list[tuple[str, str]]] = {}
    for rel, file_digest, _ in files:
        namespace = candidate[rel]
        if namespace is None or namespace in shared_namespaces:
            shared.append((rel, file_digest))
        else:
            out.partition_of[rel] = namespace
            members.setdefault(namespace, []).append((rel, file_digest))
    base = digest(context, shared, sorted(demands))
    out.base = base
    out.keys = {ns: digest(base, ns, listed) for ns, listed in members.items()}
    # a partial run cannot share the nodes' capacity among workloads it does not read: it
    # takes the outcome of the full run with the same demands, and without one it is full
    out.occupancy = cache.load(OCCUPANCY_KIND, name, base, valid=lambda v: isinstance(v, dict))
    if out.occupancy is None:
        return out
    stored = cache.load(CACHE_KIND, name, "", valid=lambda v: isinstance(v, dict)) or {}
    for ns, key in out.keys.items():
        entry = PartitionEntry.loaded(stored.get(ns))
        if entry is not None and entry.key == key:
            findings = entry.validated()
            if findings is not None:
                out.stored[ns] = entry
                out.findings[ns] = findings
                out.clean.add(ns)
    return out


def _single_namespace(summary: Summary | None) -> str | None:
    """The namespace of a file whose objects are all workloads or budgets of one namespace."""
    if summary is None or not summary[0]:
        return None
    namespaces = set()
    kinds = partition_kinds()
    for kind, ns in summary[0]:
        if kind == CAPACITY:
            continue
        if kind not in kinds:
            return None
        namespaces.add(_namespace(kind, ns))
    return namespaces.pop() if len(namespaces) == 1 else None


def merge(run: Any) -> None:
    """After a run's evaluation: store the partitions it evaluated, add the cached findings of
    the others, and sort as a full run does."""
    from gpudrv_check.core.finding import Finding

    plan_ = run.content.plan
    if plan_ is None:
        return
    evaluated: dict[str, tuple[list[Any], list[Any]]] = {
        ns: ([], []) for ns in plan_.keys if ns not in plan_.clean
    }
    for index, findings in ((0, run.findings), (1, run.suppressed)):
        for finding in findings:
            ns = plan_.partition_of.get(finding.location.file)
            if ns in evaluated:
                evaluated[ns][index].append(finding.record())
    entries = {ns: plan_.stored[ns] for ns in plan_.clean}
    for ns, (found, suppressed) in evaluated.items():
        entries[ns] = PartitionEntry(plan_.keys[ns], found, suppressed)
    if plan_.clean:
        for ns in sorted(plan_.clean):
            found, suppressed = plan_.findings[ns]
            run.findings.extend(found)
            run.suppressed.extend(suppressed)
        run.findings.sort(key=Finding.sort_key)
        run.suppressed.sort(key=Finding.sort_key)
    if evaluated or len(entries) != len(plan_.stored):
        stored = {ns: entry.stored() for ns, entry in entries.items()}
        plan_.cache.store(CACHE_KIND, plan_.name, "", stored)
    if not plan_.partial and plan_.base:
        plan_.cache.store(OCCUPANCY_KIND, plan_.name, plan_.base, run.repo.occupancy.records())
