"""Workload kinds as data: where the pod templates of an operator's custom resource are.

The table is ``policies/workloads.yaml`` (format documented there, schema
``schemas/workloads.schema.json``) extended by the config's ``workloads:``. Each entry maps a
kind (group, versions, kind) to its pod templates: the path of each, the role findings call it
by, the pods it asks for, the labels the operator puts on them and the owner the disruption
controller resolves them to. ``templates_of(manifest)`` expands one object into its templates;
nothing here reads files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import field, replace
from functools import lru_cache
from typing import Any

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import Path
from gpudrv_check.core.manifest import value_at
from gpudrv_check.core.records import record
from gpudrv_check.read.config import Config

ROOT = "$"  # a path starting with this step is from the object's root, not the item
_PLACEHOLDER = lazy_compile(r"\{(name|namespace|key|key_lower|item\.[A-Za-z0-9_.-]+)\}")


@record(frozen=True)
class Factor:
    path: Path
    default: int = 1
    add: int = 0
    at_most: Path | None = None  # capped by this value when written (a Job's completions)


@record(frozen=True)
class Condition:
    """A test on one value of the object (`zero_if`, `cases`): it is one of `values`, or it
    is set at all (`present`). An unset value is `default` (the API's own default)."""

    path: Path
    values: tuple[Any, ...] = ()
    present: bool | None = None
    default: Any = None


@record(frozen=True)
class Count:
    """How many pods a template asks for (a `replicas:` entry of the table)."""

    fixed: int | None = None  # an integer entry
    known: bool = True  # False: `replicas: null`, the count is not a fixed number
    paths: tuple[Path, ...] = ()
    default: int | None = None
    min: Path | None = None
    max: Path | None = None
    times: tuple[Factor, ...] = ()
    zero_if: tuple[Condition, ...] = ()
    #: the object's suspend flag: no pods while it is true, unless Kueue admits the object
    suspend: Path | None = None
    #: (conditions, count): the first whose conditions all hold gives the count instead
    cases: tuple[tuple[tuple[Condition, ...], Count], ...] = ()


@record(frozen=True)
class ContainerSource:
    path: Path  # relative to the pod spec
    single: bool = False  # one container mapping, not a list of them
    init: bool = False
    name: str | None = None
    image_repository: Path | None = None  # the image written as {repository, tag} fields
    image_tag: Path | None = None


DEFAULT_CONTAINERS = (
    ContainerSource(("initContainers",), init=True),
    ContainerSource(("containers",)),
)


@record(frozen=True)
class TemplateRule:
    role: str | None
    replicas: Count
    each: Path | None = None
    template: Path | None = None
    fallback: Path | None = None
    pod_spec: Path | None = None
    pod_labels: Path | None = None
    containers: tuple[ContainerSource, ...] = DEFAULT_CONTAINERS
    skip_without_containers: bool = False
    unknown_if: tuple[Path, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    owner_kind: str | None = None
    owner_name: str = "{name}"
    owner_scale: Count | str | None = None  # None: no scale subresource; "pods": the pod count
    #: pod spec fields the controller takes from elsewhere when the template leaves them unset
    defaults: Mapping[str, Path] = field(default_factory=dict)
    #: fields of an `each` item the operator fills when they are unset (Volcano's task name)
    item_defaults: Mapping[str, str] = field(default_factory=dict)


@record(frozen=True)
class Uses:
    """The object whose pod templates this one runs (a TrainJob's training runtime)."""

    name: Path
    kind: Path | None = None
    default_kind: str | None = None
    kinds: tuple[str, ...] = ()
    namespaced: tuple[str, ...] = ()  # kinds looked up in the object's own namespace


@record(frozen=True)
class TrainerOverride:
    """What the object sets on one template of the one it uses (TrainJob spec.trainer)."""

    template: str  # the role of the template it changes
    container: str  # the name of the container it changes
    image: Path | None = None
    resources: Path | None = None
    count: Path | None = None  # the template's pod count
    #: where the used object gives the count when this one does not (a runtime's numNodes)
    fallback_count: Path | None = None


@record(frozen=True)
class WorkloadKind:
    kind: str
    group: str
    versions: tuple[str, ...]
    templates: tuple[TemplateRule, ...]
    source: str = ""
    completes: bool | None = None
    template_only: bool = False
    uses: Uses | None = None
    overrides: tuple[TrainerOverride, ...] = ()
    #: Kueue's default configuration integrates the kind: queued, it is not held by `suspend`
    kueue: bool = False


@record(frozen=True)
class KindTable:
    kinds: tuple[WorkloadKind, ...] = ()
    _index: dict[tuple[str, str, str], WorkloadKind] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # the first entry for a group, kind and version wins; one kind may have an entry per
        # version when its operator changed (MPIJob v1 and v2beta1)
        for entry in reversed(self.kinds):
            for version in entry.versions:
                self._index[(entry.group, entry.kind, version)] = entry

    def lookup(self, api_version: str, kind: str) -> WorkloadKind | None:
        group, _, version = api_version.rpartition("/")
        return self._index.get((group, kind, version))

    @property
    def names(self) -> frozenset[tuple[str, str]]:
        return frozenset((k.group, k.kind) for k in self.kinds)


# --- the table from data --------------------------------------------------------------------


def _path(value: Any) -> Path:
    return tuple(value) if isinstance(value, list) else ()


def _condition(raw: Any) -> Condition:
    if isinstance(raw, list):  # a bare path: the value is true (a `suspend` flag)
        return Condition(_path(raw), values=(True,))
    return Condition(
        _path(raw["path"]),
        values=tuple(raw.get("in") or ()),
        present=raw.get("present"),
        default=raw.get("default"),
    )


def _count(raw: Any) -> Count:
    if raw is None:
        return Count(known=False)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return Count(fixed=raw)
    if not isinstance(raw, dict):
        return Count(known=False)  # the schema refuses it (validated before it is read)
    paths = tuple(_path(p) for p in raw.get("paths") or ())
    if "path" in raw:
        paths = (_path(raw["path"]), *paths)
    times = tuple(
        Factor(
            _path(f.get("path")),
            f.get("default", 1),
            f.get("add", 0),
            _path(f["at_most"]) if "at_most" in f else None,
        )
        for f in raw.get("times") or ()
    )
    cases = tuple(
        (tuple(_condition(c) for c in case.get("if") or ()), _count(case.get("then")))
        for case in raw.get("cases") or ()
    )
    return Count(
        paths=paths,
        default=raw.get("default"),
        known=True,
        min=_path(raw["min"]) if "min" in raw else None,
        max=_path(raw["max"]) if "max" in raw else None,
        times=times,
        zero_if=tuple(_condition(c) for c in raw.get("zero_if") or ()),
        suspend=_path(raw["suspend"]) if "suspend" in raw else None,
        cases=cases,
    )


def _container(raw: Mapping[str, Any]) -> ContainerSource:
    image = raw.get("image") or {}
    single = "single" in raw
    return ContainerSource(
        _path(raw["single"] if single else raw["list"]),
        single=single,
        init=bool(raw.get("init")),
        name=raw.get("name"),
        image_repository=_path(image["repository"]) if "repository" in image else None,
        image_tag=_path(image["tag"]) if "tag" in image else None,
    )


def _template(raw: Mapping[str, Any]) -> TemplateRule:
    owner = raw.get("owner") or {}
    scale = owner.get("scale", False)
    containers = tuple(_container(c) for c in raw.get("containers") or ()) or DEFAULT_CONTAINERS
    return TemplateRule(
        role=raw.get("role"),
        replicas=_count(raw.get("replicas")),
        each=_path(raw["each"]) if "each" in raw else None,
        template=_path(raw["template"]) if "template" in raw else None,
        fallback=_path(raw["fallback"]) if "fallback" in raw else None,
        pod_spec=_path(raw["pod_spec"]) if "pod_spec" in raw else None,
        pod_labels=_path(raw["pod_labels"]) if "pod_labels" in raw else None,
        containers=containers,
        skip_without_containers=bool(raw.get("skip_without_containers")),
        unknown_if=tuple(_path(p) for p in raw.get("unknown_if") or ()),
        labels=dict(raw.get("labels") or {}),
        defaults={str(k): _path(v) for k, v in (raw.get("defaults") or {}).items()},
        item_defaults={str(k): str(v) for k, v in (raw.get("item_defaults") or {}).items()},
        owner_kind=owner.get("kind"),
        owner_name=owner.get("name", "{name}"),
        owner_scale=None if scale is False else ("pods" if scale == "pods" else _count(scale)),
    )


def kind_table(data: Mapping[str, Any]) -> KindTable:
    """The table from schema-valid data (``read/workload_table.py`` validates it)."""
    kinds = []
    for raw in data.get("kinds") or ():
        kinds.append(
            WorkloadKind(
                kind=raw["kind"],
                group=raw["group"],
                versions=tuple(raw["versions"]),
                templates=tuple(_template(t) for t in raw.get("templates") or ()),
                source=raw.get("source", ""),
                completes=raw.get("completes"),
                template_only=bool(raw.get("template_only")),
                uses=_uses(raw.get("uses")),
                overrides=tuple(_override(o) for o in raw.get("overrides") or ()),
                kueue=bool(raw.get("kueue")),
            )
        )
    return KindTable(tuple(kinds))


def _uses(raw: Mapping[str, Any] | None) -> Uses | None:
    if raw is None:
        return None
    return Uses(
        name=_path(raw["name"]),
        kind=_path(raw["kind"]) if "kind" in raw else None,
        default_kind=raw.get("default_kind"),
        kinds=tuple(raw.get("kinds") or ()),
        namespaced=tuple(raw.get("namespaced") or ()),
    )


def _override(raw: Mapping[str, Any]) -> TrainerOverride:
    def path(key: str) -> Path | None:
        return _path(raw[key]) if key in raw else None

    return TrainerOverride(
        raw["template"],
        raw["container"],
        path("image"),
        path("resources"),
        path("count"),
        path("fallback_count"),
    )


def merge_kind_tables(base: KindTable, user: KindTable) -> KindTable:
    """User entries first; a user entry for a group and kind replaces the built-in one."""
    mine = user.names
    return KindTable(user.kinds + tuple(k for k in base.kinds if (k.group, k.kind) not in mine))


@lru_cache(maxsize=1)
def builtin_kind_table() -> KindTable:
    from gpudrv_check.read.workload_table import builtin_workload_table

    return kind_table(builtin_workload_table())


def workload_kinds(config: Config | None) -> KindTable:
    """The built-in table extended by the config's ``workloads:`` (a bad entry: exit 2)."""
    from gpudrv_check.read.workload_table import user_workload_table

    base = builtin_kind_table()
    user = user_workload_table(config) if config is not None else None
    return base if user is None else merge_kind_tables(base, kind_table(user))


# --- one object's templates -----------------------------------------------------------------


@record(frozen=True)
class PodTemplate:
    """One pod template of an object, resolved against the object."""

    role: str | None
    spec_path: Path
    labels_path: Path | None
    containers: tuple[ContainerSource, ...]  # paths relative to spec_path
    replicas: int | None
    labels: Mapping[str, str]
    owner_kind: str | None
    owner_name: str
    owner_replicas: int | None
    owner_scalable: bool
    unknown: bool  # a later patch changes the pod spec: not checked
    defaults: Mapping[str, Path] = field(default_factory=dict)  # field -> path from the root
    replicas_path: Path | None = None  # the key the pod count was read from, when written


def _get(data: Any, path: Path) -> Any:
    return value_at(data, path)


def _resolve(base: Path, path: Path) -> Path:
    return tuple(path[1:]) if path[:1] == (ROOT,) else (*base, *path)


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 19:
        return int(value.strip())
    return None


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def kueue_queued(data: Any) -> bool:
    """Whether the object names a Kueue LocalQueue (Kueue's jobframework reads the object's
    own label): Kueue then suspends it until admission and lifts `suspend` at admission."""
    value = _get(data, ("metadata", "labels", QUEUE_LABEL))
    return isinstance(value, str) and bool(value)


def _same(value: Any, wanted: Any) -> bool:
    """A written value equal to a table value; `"0"` and `0` alike, `true` never `1`."""
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted
    if isinstance(value, (str, int)) and isinstance(wanted, (str, int)):
        return str(value).strip() == str(wanted)
    return False


def _set(value: Any) -> bool:
    """Set, as Go's `len(x) != 0` or omitempty sees it: an empty map, list or string is not."""
    return value is not None and value != {} and value != [] and value != ""


def holds(condition: Condition, data: Any, base: Path) -> bool:
    value = _get(data, _resolve(base, condition.path))
    if not _set(value):
        value = condition.default
    if condition.present is not None:
        return _set(value) is condition.present
    return any(_same(value, wanted) for wanted in condition.values)


def count_pods(count: Count, data: Any, base: Path, queued: bool = False) -> int | None:
    """The pods ``count`` gives for the item at ``base`` of ``data`` (None: not fixed);
    ``queued``: Kueue admits the object, so its `suspend` does not hold its pods back."""
    return pods_and_key(count, data, base, queued)[0]


def pods_and_key(
    count: Count, data: Any, base: Path, queued: bool = False
) -> tuple[int | None, Path | None]:
    """``count_pods`` and the key the count was read from (None: a default or a constant)."""
    if not count.known:
        return None, None
    if count.suspend is not None and not queued:
        if _get(data, _resolve(base, count.suspend)) is True:
            return 0, None
    if any(holds(c, data, base) for c in count.zero_if):
        return 0, None
    for conditions, then in count.cases:
        if all(holds(c, data, base) for c in conditions):
            return pods_and_key(then, data, base, queued)
    if count.fixed is not None:
        return count.fixed, None
    value: int | None = None
    key: Path | None = None
    for path in count.paths:
        raw = _get(data, _resolve(base, path))
        if raw is not None:
            value, key = _number(raw), _resolve(base, path)
            if value is None:
                return None, key  # written, but not a count: not a fixed number
            break
    else:
        value = count.default
    if value is None:
        return None, key
    value, key = _clamped(count, data, base, value, key)
    for factor in count.times:
        times = _factor(factor, data, base)
        if times is None:
            return None, key
        value *= times
    return value, key


def _factor(factor: Factor, data: Any, base: Path) -> int | None:
    raw = _get(data, _resolve(base, factor.path))
    times = factor.default if raw is None else _number(raw)
    if times is None:
        return None
    cap = _get(data, _resolve(base, factor.at_most)) if factor.at_most else None
    if cap is not None:
        limit = _number(cap)
        if limit is None:
            return None
        times = min(times, limit)
    return max(times + factor.add, 0)


def _clamped(
    count: Count, data: Any, base: Path, value: int, key: Path | None
) -> tuple[int, Path | None]:
    """KubeRay GetWorkerGroupDesiredReplicas: min wins over max when they cross; the key is
    then the bound that decided."""
    low_at = _resolve(base, count.min) if count.min else None
    high_at = _resolve(base, count.max) if count.max else None
    low = _number(_get(data, low_at)) if low_at else None
    high = _number(_get(data, high_at)) if high_at else None
    if low is not None and high is not None and low > high:
        return high, high_at
    if low is not None and value < low:
        return low, low_at
    if high is not None and value > high:
        return high, high_at
    return value, key


def _fill(text: str, values: Mapping[str, str], item: Any, missing_as: str = "") -> str | None:
    """Placeholders filled in; None when one names a field the item does not have (unless
    ``missing_as`` stands in for it)."""
    missing = False

    def one(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1)
        if name.startswith("item."):
            value = _get(item, tuple(name[len("item.") :].split(".")))
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
            missing = not missing_as
            return missing_as
        return values.get(name, "")

    out = _PLACEHOLDER.sub(one, text)
    return None if missing else out


def _items(data: Any, rule: TemplateRule) -> Iterator[tuple[Path, str | None, Any]]:
    """(base path, mapping key, item) per item of ``each``; the root once without it."""
    if rule.each is None:
        yield (), None, data
        return
    found = _get(data, rule.each)
    if isinstance(found, list):
        for index, item in enumerate(found):
            if isinstance(item, Mapping):
                yield (*rule.each, index), None, _with_defaults(item, rule, index)
    elif isinstance(found, Mapping):
        for key, item in found.items():
            if isinstance(key, str) and isinstance(item, Mapping):
                yield (*rule.each, key), key, item


def _with_defaults(item: Mapping, rule: TemplateRule, index: int) -> Mapping:
    """The item with the fields the operator fills when unset (Volcano names a task without a
    name `default<index>`); only read for placeholders, never placed."""
    unset = {k: v for k, v in rule.item_defaults.items() if not _set(item.get(k))}
    if not unset:
        return item
    return {**item, **{k: v.replace("{index}", str(index)) for k, v in unset.items()}}


def _spec_paths(data: Any, rule: TemplateRule, base: Path) -> tuple[Path, Path | None] | None:
    if rule.pod_spec is not None:
        spec = _resolve(base, rule.pod_spec)
        if _get(data, spec) is None and spec:
            return None
        labels = _resolve(base, rule.pod_labels) if rule.pod_labels is not None else None
        return spec, labels
    for path in (rule.template, rule.fallback):
        if path is None:
            continue
        template = _resolve(base, path)
        if _get(data, template) is not None:
            return (*template, "spec"), (*template, "metadata", "labels")
    return None


def _has_containers(data: Any, spec: Path, sources: tuple[ContainerSource, ...]) -> bool:
    for source in sources:
        value = _get(data, (*spec, *source.path))
        if (source.single and isinstance(value, Mapping)) or (not source.single and value):
            return True
    return False


def _owner_replicas(rule: TemplateRule, data: Any, pods: int | None) -> int | None:
    scale = rule.owner_scale
    if scale == "pods":
        return pods
    return count_pods(scale, data, ()) if isinstance(scale, Count) else None


def _resolved(
    entry: WorkloadKind, rule: TemplateRule, data: Any, base: Path, values: dict, item: Any
) -> PodTemplate | None:
    found = _spec_paths(data, rule, base)
    if found is None:
        return None
    spec, labels_path = found
    if rule.skip_without_containers and not _has_containers(data, spec, rule.containers):
        return None
    filled = ((k, _fill(v, values, item)) for k, v in rule.labels.items())
    pods, key = pods_and_key(rule.replicas, data, base, entry.kueue and kueue_queued(data))
    containers = tuple(
        replace(c, name=_fill(c.name, values, item)) if c.name else c for c in rule.containers
    )
    return PodTemplate(
        role=_fill(rule.role, values, item, "?") if rule.role is not None else None,
        spec_path=spec,
        labels_path=labels_path,
        containers=containers,
        replicas=None if entry.template_only else pods,
        labels={k: v for k, v in filled if v is not None},
        owner_kind=rule.owner_kind,
        owner_name=_fill(rule.owner_name, values, item, "?") or "?",
        owner_replicas=_owner_replicas(rule, data, pods),
        owner_scalable=rule.owner_scale is not None,
        unknown=any(_get(data, _resolve(base, p)) is not None for p in rule.unknown_if),
        defaults={k: _resolve(base, p) for k, p in rule.defaults.items()},
        replicas_path=key,
    )


def templates_of(entry: WorkloadKind, data: Any, name: str, namespace: str) -> list[PodTemplate]:
    """Every pod template ``entry`` finds in the object ``data``, in table then item order."""
    out = []
    for rule in entry.templates:
        for base, key, item in _items(data, rule):
            values = {"name": name, "namespace": namespace}
            if key is not None:
                values.update(key=key, key_lower=key.lower())
            template = _resolved(entry, rule, data, base, values, item)
            if template is not None:
                out.append(template)
    return out
