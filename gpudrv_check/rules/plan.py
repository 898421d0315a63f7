"""What the rules read, as they declare it: the skim plan and the partition kinds.

Every rule.yaml (and the model's own `model/reads.yaml`) says which kinds it reads, which
fields of them and at which scope. From those declarations, and nothing the parser knows:

- `skim_plan()`: what the reader may leave out. A kind of SKIM_CANDIDATES no declaration names;
  a key of a Node's `status` (NODE_STATUS_FIELDS) or of a container (CONTAINER_FIELDS) no
  declaration reads. A rule that starts reading one declares it, which takes it out of the plan.
- `partition_kinds()`: the kinds whose findings depend only on their own namespace (and
  cluster-wide objects), which the namespace cache (engine/cache/partition.py) may reuse: read
  by some declaration of scope `namespace` and by none of scope `cluster` (but one that reads
  them only `when:` a condition holds, which the engine checks on every run).

A field path is dotted: `*` is any key or item, `{podspec}` the pod spec of a workload kind
(k8s/podspec.py), `{template}` the pod template holding it (the Pod itself for a Pod). The kind
`workloads` names every kind with a pod template; `*` is every kind as far as the reader builds
it, so it names no kind (keeps none from being skimmed) and holds no field of the plan.
`apiVersion`, `kind` and `metadata` are always read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import cache

from gpudrv_check.core.reads import SkimPlan
from gpudrv_check.core.records import record
from gpudrv_check.k8s.podspec import CONTAINER_LISTS, POD_SPEC_PATHS
from gpudrv_check.k8s.scope import CLUSTER_SCOPED_KINDS
from gpudrv_check.read.policy import Reads, built_in, catalog

ALWAYS_READ = frozenset(("apiVersion", "kind", "metadata"))
ANY = "*"


def _table_kinds() -> tuple[str, ...]:
    """The kinds of the workload-kinds table (policies/workloads.yaml): workloads too."""
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    return tuple(sorted({k.kind for k in builtin_kind_table().kinds}))


@cache
def _table_prefixes(kind: str) -> tuple[tuple[str, ...], ...]:
    """Where the table's templates of `kind` sit: the fixed head of each template path (a list
    of templates: the list), or the whole `spec` when a template has no path of its own."""
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    out: set[tuple[str, ...]] = set()
    for entry in builtin_kind_table().kinds:
        if entry.kind != kind:
            continue
        for rule in entry.templates:
            path = rule.each or rule.template or rule.pod_spec or ("spec",)
            head = tuple(str(p) for p in path if isinstance(p, str) and p != ANY)
            out.add(head[: len(path)] if head else ("spec",))
        if entry.uses is not None or entry.overrides:
            out.add(("spec",))  # a TrainJob: its own spec reaches into the runtime's templates
    return tuple(sorted(out))


@cache
def table_names() -> frozenset[str]:
    """Every kind name of the table, also those a core kind shares (Volcano's and batch's Job).
    Read when first asked, not at import: importing the plan costs no file."""
    return frozenset(_table_kinds())


@cache
def table_kinds() -> tuple[str, ...]:
    """The table's kinds that no core kind shares a name with."""
    return tuple(sorted(table_names() - set(POD_SPEC_PATHS)))


@cache
def kind_groups() -> dict[str, tuple[str, ...]]:
    """A `kinds:` name that stands for several: `workloads`, every kind with a pod template
    (made once: every declaration's kinds are expanded by it; not to be changed)."""
    return {"workloads": (*POD_SPEC_PATHS, *table_kinds())}


#: kinds worth leaving out when nothing reads them: large or numerous in GitOps repos (CRDs are
#: most of the bytes of a typical one), and of no use to the checker unless a rule says so
SKIM_CANDIDATES = frozenset(
    (
        "APIService",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Endpoints",
        "EndpointSlice",
        "HorizontalPodAutoscaler",
        "Ingress",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "NetworkPolicy",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
        "StorageClass",
        "ValidatingWebhookConfiguration",
    )
)
#: the fields of a Node's status (k8s.io/api core/v1 types.go `NodeStatus`); a `kubectl get
#: nodes -o yaml` export lists every cached image of every node, often most of the file
NODE_STATUS_FIELDS = frozenset(
    (
        "addresses",
        "allocatable",
        "capacity",
        "conditions",
        "config",
        "daemonEndpoints",
        "features",
        "images",
        "nodeInfo",
        "phase",
        "runtimeHandlers",
        "volumesAttached",
        "volumesInUse",
    )
)
#: the fields of a container (k8s.io/api core/v1 types.go `Container`)
CONTAINER_FIELDS = frozenset(
    (
        "args",
        "command",
        "env",
        "envFrom",
        "image",
        "imagePullPolicy",
        "lifecycle",
        "livenessProbe",
        "name",
        "ports",
        "readinessProbe",
        "resizePolicy",
        "resources",
        "restartPolicy",
        "securityContext",
        "startupProbe",
        "stdin",
        "stdinOnce",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeDevices",
        "volumeMounts",
        "workingDir",
    )
)


@record(frozen=True)
class Declared:
    """One `reads:` entry of a rule (or of the model), its scope settled."""

    owner: str  # a rule id, or "model"
    kinds: frozenset[str]  # groups expanded; `*` left as is
    fields: tuple[str, ...]
    scope: str
    when: str | None = None


def expand_kinds(kinds: Iterable[str]) -> frozenset[str]:
    return frozenset(k for kind in kinds for k in kind_groups().get(kind, (kind,)))


@cache
def model_reads() -> tuple[Reads, ...]:
    """The model's own declaration (gpudrv_check/model/reads.yaml)."""
    from gpudrv_check.core.resources import package_dir
    from gpudrv_check.read.yaml_docs import parse_text

    text = package_dir().joinpath("model").joinpath("reads.yaml").read_text("utf-8")
    parsed = parse_text(text)
    if parsed.problems or not parsed.docs:
        raise RuntimeError(f"broken model/reads.yaml: {parsed.problems}")
    return tuple(built_in(Reads, r, "model/reads.yaml") for r in parsed.docs[0].data["reads"])


@cache
def declarations() -> tuple[Declared, ...]:
    """Every `reads:` entry of the built-in rules and of the model."""
    out = [
        Declared(policy.id, expand_kinds(r.kinds), tuple(r.fields), r.scope or policy.scope, r.when)
        for policy in catalog().values()
        for r in policy.reads
    ]
    out += [
        Declared("model", expand_kinds(r.kinds), tuple(r.fields), r.scope or "cluster")
        for r in model_reads()
    ]
    return tuple(out)


def field_paths(kind: str, fields: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """The declared paths as key paths inside an object of `kind` (`{podspec}` resolved; a
    path through a pod spec the kind does not have is dropped)."""
    spec = POD_SPEC_PATHS.get(kind)
    for text in fields:
        steps: list[str] = []
        if kind in table_names() and text.startswith(("{podspec}", "{template}")):
            # a table kind's templates sit where its table entry says (model/workload_kinds.py),
            # several to an object: a path through them reads the subtree that holds them
            # a kind of its own reads its whole spec (counts, fallbacks and defaults sit beside
            # the templates); one a core kind shares (Volcano's Job) the template subtrees only,
            # so the core kind's own paths stay as narrow as they were
            yield from _table_prefixes(kind) if spec is not None else [("spec",)]
            if spec is None:
                continue
        for step in text.split("."):
            if step in ("{podspec}", "{template}"):
                if spec is None:
                    break
                steps.extend(spec if step == "{podspec}" else spec[:-1])
            else:
                steps.append(step)
        else:
            yield tuple(steps)


def _read_keys(prefixes: Iterable[tuple[str, ...]], under: tuple[str, ...], universe) -> set[str]:
    """The keys of `universe` read below `under` by paths starting there (all of them for a
    path that ends at `under` or above it, or that steps through `*`)."""
    out: set[str] = set()
    for path in prefixes:
        head, rest = path[: len(under)], path[len(under) :]
        if not all(p in (ANY, u) for p, u in zip(head, under, strict=False)):
            continue
        if len(path) <= len(under) or rest[0] == ANY:
            return set(universe)
        out.add(rest[0])
    return out & set(universe)


def _paths(kinds: Iterable[str]) -> list[tuple[str, ...]]:
    """Each declared path once: many rules read the same paths (start-up time)."""
    wanted = set(kinds)
    found = {
        path
        for d in declarations()
        if ANY not in d.kinds
        for kind in d.kinds & wanted
        for text in d.fields
        for path in _text_paths(kind, text)
    }
    return sorted(found)


@cache
def _text_paths(kind: str, text: str) -> tuple[tuple[str, ...], ...]:
    """`field_paths` of one declared path, made once per kind: the rules declare the same
    few paths over and over (3,000 expansions at start-up, 300 of them distinct)."""
    return tuple(field_paths(kind, (text,)))


@cache
def skim_plan() -> SkimPlan:
    """What the reader may leave out, derived from what every rule and the model read (as
    rules/plan.json holds it: `compiled_plan`)."""
    compiled = compiled_plan()
    if compiled is not None:
        skim = compiled["skim"]
        return SkimPlan(
            kinds=frozenset(skim["kinds"]),
            node_status=frozenset(skim["node_status"]),
            container=frozenset(skim["container"]),
        )
    return derived_skim_plan()


def derived_skim_plan() -> SkimPlan:
    """`skim_plan` worked out from the declarations."""
    named = {k for d in declarations() for k in d.kinds if k != ANY}
    status = _read_keys(_paths(["Node"]), ("status",), NODE_STATUS_FIELDS)
    container: set[str] = set()
    for kind, spec in POD_SPEC_PATHS.items():
        paths = _paths([kind])  # once per kind, not per container list (start-up time)
        for lst in sorted(CONTAINER_LISTS):
            container |= _read_keys(paths, (*spec, lst, ANY), CONTAINER_FIELDS)
    return SkimPlan(
        kinds=frozenset(SKIM_CANDIDATES - named),
        node_status=frozenset(NODE_STATUS_FIELDS - status),
        container=frozenset(CONTAINER_FIELDS - container),
    )


@cache
def partition_kinds() -> frozenset[str]:
    """Namespaced kinds read at namespace scope and by no declaration at cluster scope, but
    those read at cluster scope only `when:` a condition holds: in a run where it does, the
    engine reads every namespace (rules `reads_all_namespaces`, engine/run.py `load`)."""
    return _planned("partition_kinds", derived_partition_kinds)


def derived_partition_kinds() -> frozenset[str]:
    """`partition_kinds` worked out from the declarations."""
    by_scope: dict[str, set[str]] = {"namespace": set(), "cluster": set()}
    for d in declarations():
        if d.scope == "cluster" and d.when is not None:
            continue
        by_scope[d.scope] |= d.kinds - {ANY}
    # the table's kinds stay out: a Kueue-admitted or runtime-backed template reads objects of
    # other kinds and namespaces (ResourceFlavors, ClusterTrainingRuntimes)
    namespaced = by_scope["namespace"] - by_scope["cluster"] - CLUSTER_SCOPED_KINDS
    return frozenset(namespaced - set(table_kinds()))


@cache
def cacheable_cluster_rules() -> frozenset[str]:
    """The rules at `scope: cluster` none of whose `reads:` entries names a partitioned kind,
    under a `when:` or not: what they find depends on the shared files and the run's context
    alone, so it may be kept under their digest (engine/cache/partition.py `ClusterFindings`).
    GPU025, which reads every namespace's workloads when the upgrade waits on a pod selector
    for ever, is not one of them."""
    return _planned("cacheable_cluster_rules", derived_cacheable_cluster_rules)


@cache
def conditional_rules() -> frozenset[str]:
    """The rules that read objects across namespaces only `when:` a condition holds: each has
    a `reads_all_namespaces(repo)` saying whether it holds on a run (rules/__init__.py
    `reading_all_namespaces`)."""
    return _planned("conditional_rules", derived_conditional_rules)


def _planned(key: str, derive: Callable[[], frozenset[str]]) -> frozenset[str]:
    """The set rules/plan.json holds under `key`, or, without the file, `derive()`."""
    compiled = compiled_plan()
    return frozenset(compiled[key]) if compiled is not None else derive()


def derived_conditional_rules() -> frozenset[str]:
    """`conditional_rules` worked out from the declarations."""
    return frozenset(d.owner for d in declarations() if d.scope == "cluster" and d.when)


def derived_cacheable_cluster_rules() -> frozenset[str]:
    """`cacheable_cluster_rules` worked out from the declarations."""
    kinds = derived_partition_kinds()
    reading = {d.owner for d in declarations() if d.kinds & kinds or ANY in d.kinds}
    return frozenset(
        policy.id
        for policy in catalog().values()
        if policy.scope == "cluster" and policy.id not in reading
    )


#: what `skim_plan`, `partition_kinds`, `cacheable_cluster_rules` and `conditional_rules`
#: give, in one file a run reads with `json` (gpudrv_check/rules/plan.json, written by
#: `write_compiled_plan`): working them out from the declarations took about 5 ms of every run
#: (a twentieth of an edit run of a small repo). A test holds it equal to what the
#: declarations give (tests/test_catalog.py).
COMPILED_PLAN = "plan.json"


@cache
def compiled_plan() -> dict | None:
    """gpudrv_check/rules/plan.json as data, or None when a copy of the package lacks it (a
    build from a checkout that does not track it yet): the plan is then worked out."""
    from gpudrv_check.read.packaged import compiled_rules_json

    data = compiled_rules_json(COMPILED_PLAN)
    if data is None:
        return None
    if not _plan_shaped(data):
        raise RuntimeError(f"broken built-in rules/{COMPILED_PLAN}")
    return data


def _plan_shaped(data: object) -> bool:
    """Whether `data` has the shape `derived_plan` gives (version 1, lists of strings)."""
    if not isinstance(data, dict) or data.get("version") != 1:
        return False
    skim = data.get("skim")
    if not isinstance(skim, dict):
        return False
    lists = [skim.get(k) for k in ("kinds", "node_status", "container")]
    lists += [data.get(k) for k in ("partition_kinds", "cacheable_cluster_rules")]
    lists.append(data.get("conditional_rules"))
    return all(isinstance(x, list) and all(isinstance(k, str) for k in x) for x in lists)


def derived_plan() -> dict:
    """What rules/plan.json holds, worked out from the declarations (each set sorted)."""
    skim = derived_skim_plan()
    return {
        "version": 1,
        "skim": {
            "kinds": sorted(skim.kinds),
            "node_status": sorted(skim.node_status),
            "container": sorted(skim.container),
        },
        "partition_kinds": sorted(derived_partition_kinds()),
        "cacheable_cluster_rules": sorted(derived_cacheable_cluster_rules()),
        "conditional_rules": sorted(derived_conditional_rules()),
    }


def compiled_plan_text() -> str:
    """The text of gpudrv_check/rules/plan.json for the declarations as they are."""
    from gpudrv_check.read.packaged import compiled_text

    return compiled_text(derived_plan())


def write_compiled_plan() -> None:
    """Write gpudrv_check/rules/plan.json from the declarations (a developer's command, after
    rules/catalog.json: `write_compiled_catalog`)."""
    from gpudrv_check.read.packaged import rules_file, write_compiled

    write_compiled(rules_file(COMPILED_PLAN), derived_plan())


def current_plan() -> SkimPlan:
    """The plan the engine hands to the reader (engine/run.py): the one derived above."""
    return skim_plan()
