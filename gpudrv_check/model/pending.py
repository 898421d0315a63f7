"""Why a workload's pods have no node: what Kubernetes would report, and what it does not say.

Kubernetes reports one line (the scheduler's FitError, the kubelet's rejection of a pod bound
with ``spec.nodeName``); we add, per constraint, which nodes it removed and the nearest values
the inventory has (``term 0 requires nvidia.com/cuda.driver.major Gt 560, which removes …;
highest in inventory is 550 on lab-node-0, lab-node-2``), and which key to point at.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from gpudrv_check.core.finding import MAX_NAMES, plural
from gpudrv_check.core.finding import names as listing
from gpudrv_check.core.located import Path
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.nodeaffinity import (
    REQUIRED_AFFINITY_PATH,
    parse_int64,
    prefilter_node_names,
    required_node_affinity,
    selector_value,
    term_explanations,
    term_problems,
)
from gpudrv_check.k8s.quantity import quantity_value
from gpudrv_check.k8s.resources import pod_level_resource
from gpudrv_check.k8s.scheduler import (
    REASON_AFFINITY_CONFLICT,
    fit_error_message,
    fits_request,
    kubelet_rejection,
    reasons_histogram,
)
from gpudrv_check.k8s.topologyspread import (
    DO_NOT_SCHEDULE,
    missing_keys,
    modelled,
    spread_constraints,
)
from gpudrv_check.k8s.topologyspread import FIELD as SPREAD_FIELD
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import (
    AFFINITY,
    AFFINITY_CONFLICT,
    INSUFFICIENT,
    PREFILTER,
    SPREAD_LABEL,
    TAINT,
    UNSCHEDULABLE,
    Placement,
    Verdict,
)
from gpudrv_check.model.workload import GPU_RESOURCE, Workload

NAMES_SHOWN = MAX_NAMES

# what stands in the way, for the location and the fix hint
CAUSE_AFFINITY = "affinity"
CAUSE_TAINT = "taint"
CAUSE_GPU = "gpu"
CAUSE_NODE_NAME = "node_name"
CAUSE_SPREAD = "spread"  # a DoNotSchedule topologyKey the nodes lack


@record(frozen=True)
class Pending:
    """Why no node takes the workload's pods."""

    message: str  # what Kubernetes reports, word for word
    details: tuple[str, ...]  # what it does not say, one clause each
    path: Path  # the key to point at, relative to the manifest
    cause: str  # CAUSE_*: what to change
    taint: Mapping[str, Any] | None = None  # a taint (or the cordon) that keeps the pods off
    resource: str | None = None  # CAUSE_GPU: the resource no admitted node has enough of
    # CAUSE_AFFINITY: node names pinned with matchFields keep the pods off, no label does (so
    # no node can be labelled to match: a node of the inventory must be named)
    pinned: bool = False


def _close_matches(word: str, names: list[str], n: int, cutoff: float) -> list[str]:
    """difflib's close matches (imported here: only a pending workload's note asks)."""
    import difflib

    return difflib.get_close_matches(word, names, n=n, cutoff=cutoff)


def node_names(nodes: Iterable[Node | str], limit: int = NAMES_SHOWN) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 7 more``."""
    return listing(sorted(n if isinstance(n, str) else n.name for n in nodes), limit)


def taint_text(taint: Mapping[str, Any]) -> str:
    """A taint as kubectl prints it: ``key=value:Effect`` (``key:Effect`` without a value)."""
    key, value, effect = (str(taint.get(f) or "") for f in ("key", "value", "effect"))
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


# --- nearest values ---------------------------------------------------------------------------


def _values(key: str, nodes: Iterable[Node]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        if key in node.labels:
            found[node.labels[key]].append(node.name)
    return found


def _similar_keys(key: str, nodes: list[Node]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for node in nodes:
        for k in node.labels:
            counts[k] += 1
    close = _close_matches(key, sorted(counts), n=2, cutoff=0.75)
    if not close:
        return ""
    shown = ", ".join(f"{k} (on {counts[k]} node{'s' if counts[k] != 1 else ''})" for k in close)
    return f"; similar keys in inventory: {shown}"


def _value_summary(found: Mapping[str, list[str]], limit: int = 4) -> str:
    def order(value: str) -> tuple:
        number = parse_int64(value)
        return (0, number, value) if number is not None else (1, 0, value)

    values = sorted(found, key=order)
    parts = [f"{v or '(empty)'} on {node_names(found[v], 3)}" for v in values[:limit]]
    more = f" and {len(values) - limit} more values" if len(values) > limit else ""
    return "; ".join(parts) + more


def _nearest(req: Mapping[str, Any], nodes: list[Node]) -> str:
    """What the inventory has closest to one requirement (over every node)."""
    key, op = str(req.get("key")), req.get("operator")
    values = [v for v in req.get("values") or [] if isinstance(v, str)]
    found = _values(key, nodes)
    if op == "DoesNotExist":
        holders = [n for names in found.values() for n in names]
        return f"{key} is set on {node_names(holders)}"
    if not found:
        return f"no node has label {key}{_similar_keys(key, nodes)}"
    if op in ("Gt", "Lt"):
        numbers: dict[int, list[str]] = defaultdict(list)
        for value, names in found.items():
            number = parse_int64(value)
            if number is not None:
                numbers[number].extend(names)
        bound = parse_int64(values[0]) if values else None
        if not numbers or bound is None:
            return f"no node has an integer {key} ({_value_summary(found)})"
        if op == "Gt":
            best = max(numbers)
            passing = [n for v, names in numbers.items() if v > bound for n in names]
            if not passing:
                return f"highest in inventory is {best} on {node_names(numbers[best])}"
            return f"only {node_names(passing)} have {key} above {bound}"
        best = min(numbers)
        passing = [n for v, names in numbers.items() if v < bound for n in names]
        if not passing:
            return f"lowest in inventory is {best} on {node_names(numbers[best])}"
        return f"only {node_names(passing)} have {key} below {bound}"
    if op == "In":
        holders = [n for v in values for n in found.get(v, [])]
        if not holders:
            return f"inventory has {key} = {_value_summary(found)}"
        return f"only {node_names(holders)} have one of these values"
    if op == "NotIn":
        excluded = {v: found[v] for v in values if v in found}
        return f"excluded values in inventory: {_value_summary(excluded)}"
    return ""  # Exists with the key present somewhere: the removed nodes say it all


def _requirement_text(req: Mapping[str, Any]) -> str:
    key, op = req.get("key"), req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if op in ("Exists", "DoesNotExist") or not values:
        return f"{key} {op}"
    shown = values[0] if len(values) == 1 else "(" + listing(values) + ")"
    return f"{key} {op} {shown}"


def _field_nearest(req: Mapping[str, Any], nodes: list[Node]) -> str:
    values = [v for v in req.get("values") or [] if isinstance(v, str)]
    if req.get("operator") == "In" and values and not any(n.name == values[0] for n in nodes):
        names = [n.name for n in nodes]
        close = sorted(_close_matches(values[0], names, n=3, cutoff=0.6))
        hint = f"; similar names: {', '.join(close)}" if close else ""
        return f"no node is named {values[0]}{hint}"
    return ""


# --- per constraint: which nodes it removed -----------------------------------------------------


def _selector_details(selector: object, failed: list[Node], everyone: list[Node]) -> list[str]:
    if not isinstance(selector, MAPPINGS):
        return []
    out = []
    for key, raw in selector.items():
        want = selector_value(raw)
        removed = [n for n in failed if n.labels.get(key) != want]
        if not removed:
            continue
        req = {"key": key, "operator": "In", "values": [want]}
        nearest = _nearest(req, everyone)
        out.append(
            f"nodeSelector {key}={want} removes {node_names(removed)}"
            + (f"; {nearest}" if nearest else "")
        )
    return out


def _term_details(
    index: int, term: object, single: bool, failed: list[Node], everyone: list[Node]
) -> list[str]:
    name = "the affinity term" if single else f"term {index}"
    problems = term_problems(term)
    if problems:
        return [f"{name} can never match: {problems[0].message}"]
    if not isinstance(term, MAPPINGS) or not (
        term.get("matchExpressions") or term.get("matchFields")
    ):
        return [f"{name} has neither matchExpressions nor matchFields, so it matches no node"]
    # nodes that agree on the keys the term reads (and on the name, if it reads that) fare alike
    expressions = term.get("matchExpressions")
    keys = sorted(
        {str(r.get("key")) for r in expressions if isinstance(r, MAPPINGS)}
        if isinstance(expressions, list)
        else set()
    )
    by_name = bool(term.get("matchFields"))
    groups: dict[tuple, list[Node]] = defaultdict(list)
    for node in failed:
        # bound first: mypy reads a starred tuple in brackets as 3.11-only syntax
        group = (node.name if by_name else None, *(node.labels.get(k) for k in keys))
        groups[group].append(node)
    removed: dict[tuple, list[Node]] = defaultdict(list)
    for members in groups.values():
        first = members[0]
        for check in term_explanations(term, first.name, first.labels):
            if not check.matched:
                removed[check.path].extend(members)
    out = []
    for path in sorted(removed, key=lambda p: (p[0], p[1])):
        req = term[path[0]][path[1]]
        text = _requirement_text(req)
        if path[0] == "matchFields":
            nearest = _field_nearest(req, everyone)
        else:
            nearest = _nearest(req, everyone)
        out.append(
            f"{name} requires {text}, which removes {node_names(removed[path])}"
            + (f"; {nearest}" if nearest else "")
        )
    if not out and failed:
        out.append(f"{name} matches none of {node_names(failed)} with all its expressions")
    return out


def _affinity_details(
    spec: Mapping[str, Any], failed: list[Node], everyone: list[Node]
) -> list[str]:
    out = _selector_details(spec.get("nodeSelector"), failed, everyone)
    passed_selector = [n for n in failed if _selector_matches(spec.get("nodeSelector"), n)]
    terms = _required_terms(spec) or []
    for i, term in enumerate(terms):
        out.extend(_term_details(i, term, len(terms) == 1, passed_selector, everyone))
    return out


def _selector_matches(selector: object, node: Node) -> bool:
    if not isinstance(selector, MAPPINGS):
        return True
    return all(node.labels.get(k) == selector_value(v) for k, v in selector.items())


def _required_terms(spec: Mapping[str, Any]) -> list | None:
    node: Any = spec
    for step in REQUIRED_AFFINITY_PATH:
        node = node.get(step) if isinstance(node, MAPPINGS) else None
    terms = node.get("nodeSelectorTerms") if isinstance(node, MAPPINGS) else None
    return terms if isinstance(terms, list) else None


# --- where to point, and the whole explanation -------------------------------------------------


def _affinity_path(workload: Workload, spec: Mapping[str, Any], everyone: list[Node]) -> Path:
    """The nodeSelector entry, nodeSelector, affinity term or terms that admit no node."""
    base = workload.spec_path
    selector = spec.get("nodeSelector")
    if isinstance(selector, MAPPINGS) and selector:
        if not any(_selector_matches(selector, n) for n in everyone):
            dead = [
                k
                for k, v in selector.items()
                if not any(n.labels.get(k) == selector_value(v) for n in everyone)
            ]
            return (*base, "nodeSelector", dead[0]) if len(dead) == 1 else (*base, "nodeSelector")
    terms = _required_terms(spec)
    if terms is not None:
        terms_path = (*base, *REQUIRED_AFFINITY_PATH, "nodeSelectorTerms")
        return (*terms_path, 0) if len(terms) == 1 else terms_path
    if isinstance(selector, MAPPINGS) and selector:
        return (*base, "nodeSelector")
    return (*base, *REQUIRED_AFFINITY_PATH)


def _blocked_path(workload: Workload) -> Path:
    if workload.spec_get("tolerations") is not None:
        return (*workload.spec_path, "tolerations")
    return workload.spec_path


_BINARY = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)


def amount_text(resource: str, amount: Fraction) -> str:
    """An amount as a quantity reads: ``2``, ``500m`` (cpu), ``512Gi`` (a whole number of bytes
    of memory, storage or hugepages with a binary suffix, as resource.Quantity prints
    BinarySI), ``1.5`` elsewhere."""
    if amount.denominator == 1:
        if amount.numerator > 0 and _bytes(resource):
            for suffix, size in _BINARY:
                if amount.numerator % size == 0:
                    return f"{amount.numerator // size}{suffix}"
        return str(amount.numerator)
    if resource == "cpu":
        return f"{math.ceil(amount * 1000)}m"
    return f"{float(amount):g}"


def _bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def _short_resources(verdicts: Mapping[str, Verdict], nodes: list[Node]) -> list[str]:
    """The resources some node lacks, pods first, then as fitsRequest checks them."""
    seen: dict[str, None] = {}
    for node in nodes:
        for short in verdicts[node.name].short:
            seen.setdefault(short.resource, None)
    return list(seen)


def _resource_details(
    workload: Workload, placement: Placement, resources: list[str], nodes: list[Node]
) -> list[str]:
    requests = placement.requests(workload)
    out = []
    for resource in resources:
        if resource == "pods":
            out.append("the nodes hold as many pods as their allocatable pods allows")
            continue
        offered = {
            n.name: a.get(resource, Fraction(0))
            for n in nodes
            if (a := placement.allocatable(n)) is not None
        }
        best = max(offered.values(), default=Fraction(0))
        where = [name for name, amount in offered.items() if amount == best]
        want = amount_text(resource, requests.get(resource, Fraction(0)))
        out.append(
            f"each pod requests {want} {resource}; the most any node offers is "
            f"{amount_text(resource, best)}" + (f" (on {node_names(where)})" if best else "")
        )
    return out


def _details(
    workload: Workload,
    spec: Mapping[str, Any],
    verdicts: Mapping[str, Verdict],
    placement: Placement,
) -> list[str]:
    nodes = placement.nodes
    by_reason: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        by_reason[verdicts[node.name].reason].append(node)
    out: list[str] = []
    if by_reason.get(AFFINITY_CONFLICT):
        out.append("every term pins node names with matchFields, and no name is in all of them")
    if by_reason.get(PREFILTER):
        pinned = sorted(prefilter_node_names(spec) or ())
        known = {n.name for n in nodes}
        missing = [name for name in pinned if name not in known]
        text = (
            f"every term pins node names with matchFields metadata.name In ({listing(pinned)}), "
            f"which leaves out {node_names(by_reason[PREFILTER])}"
        )
        for name in missing[:NAMES_SHOWN]:
            req = {"operator": "In", "values": [name]}
            text += f"; {_field_nearest(req, nodes)}"
        if len(missing) > NAMES_SHOWN:
            more = len(missing) - NAMES_SHOWN
            text += f"; {plural(more, 'more pinned name')} match{'es' if more == 1 else ''} no node"
        out.append(text)
    if by_reason.get(UNSCHEDULABLE):
        out.append(f"cordoned (spec.unschedulable): {node_names(by_reason[UNSCHEDULABLE])}")
    taints: dict[str, list[Node]] = defaultdict(list)
    for node in by_reason.get(TAINT, []):
        taints[taint_text(verdicts[node.name].taint or {})].append(node)
    # the first few taints by text, then a count (a fleet tainted per team or per node would
    # otherwise give a clause per node)
    distinct = sorted(taints)
    for text in distinct[:NAMES_SHOWN]:
        out.append(f"untolerated taint {text} on {node_names(taints[text])}")
    if len(distinct) > NAMES_SHOWN:
        rest = sum(len(taints[text]) for text in distinct[NAMES_SHOWN:])
        out.append(
            f"{plural(len(distinct) - NAMES_SHOWN, 'more untolerated taint')} on "
            f"{plural(rest, 'more node')}"
        )
    if by_reason.get(AFFINITY):
        out.extend(_affinity_details(spec, by_reason[AFFINITY], nodes))
    if by_reason.get(INSUFFICIENT):
        resources = _short_resources(verdicts, by_reason[INSUFFICIENT])
        out.extend(_resource_details(workload, placement, resources, nodes))
    if by_reason.get(SPREAD_LABEL):
        out.extend(_spread_details(spec, by_reason[SPREAD_LABEL], placement))
    out.extend(not_evaluated(spec, placement.release.minor))
    return out


def _missing_spread_keys(spec: Mapping[str, Any]) -> list[tuple[int, str]]:
    """(index, topologyKey) of the DoNotSchedule constraints a node must carry a label for
    (the hostname aside: every node has it)."""
    constraints = spread_constraints(spec) or ()
    keys = set(missing_keys(constraints))
    return [(c.index, c.topology_key) for c in constraints if c.topology_key in keys]


def _spread_details(spec: Mapping[str, Any], failed: list[Node], placement: Placement) -> list[str]:
    """Which nodes each DoNotSchedule topologyKey removes (the first one a node lacks)."""
    out = []
    seen: set[str] = set()
    for index, key in _missing_spread_keys(spec):
        removed = [n for n in failed if key not in n.labels and n.name not in seen]
        if not removed:
            continue
        seen.update(n.name for n in removed)
        holders = sum(1 for n in placement.nodes if key in n.labels)
        where = f"on {plural(holders, 'node')} of the inventory" if holders else "on no node"
        out.append(
            f"topologySpreadConstraints[{index}] spreads over {key}, a label "
            f"{node_names(removed)} lack (it is {where}): PodTopologySpread keeps the pods off "
            "a node without it"
        )
    return out


#: pods with DRA ResourceClaims: the DynamicResources filter's verdict needs the cluster's
#: DeviceClasses and ResourceSlices, which a repo does not hold
DRA_NOT_EVALUATED = (
    "its DRA resource claims (spec.resourceClaims) were not evaluated: which nodes their "
    "devices allow is unknown here"
)


#: the scheduler's filters this check does not run, and what each may decide that it cannot
TOPOLOGY_SPREAD_NOT_EVALUATED = (
    "its topologySpreadConstraints with whenUnsatisfiable: DoNotSchedule were not evaluated: "
    "the PodTopologySpread filter may keep its pods off nodes this check lets them on"
)
POD_AFFINITY_NOT_EVALUATED = (
    "its required podAffinity was not evaluated: the InterPodAffinity filter places its pods "
    "only beside the pods it selects, which this check does not track"
)
#: what the spread filter here leaves out (k8s/topologyspread.py, model/spread.py)
TOPOLOGY_SPREAD_OWN_PODS = (
    "its topologySpreadConstraints with whenUnsatisfiable: DoNotSchedule were evaluated over its "
    "own pods: pods of other workloads their labelSelector selects, which the PodTopologySpread "
    "filter counts too, were not counted"
)
HOST_PORTS_NOT_EVALUATED = (
    "its hostPort(s) were not evaluated: the NodePorts filter lets one pod per node take a port"
)


def not_evaluated(spec: object, minor: int) -> list[str]:
    """What the scheduler filters on in this pod spec that no verdict here reads (DRA claims,
    topology spread that must hold, required pod affinity, host ports), one clause each: said
    with every verdict, never taken for a fit. `minor`: the kube-scheduler release the verdicts
    follow (GPU010's scheduler_version), which decides what of the spread constraints it reads."""
    if not isinstance(spec, MAPPINGS):
        return []
    out = [DRA_NOT_EVALUATED] if dra_claims(spec) else []
    spread = _spread_note(spec, minor)
    if spread:
        out.append(spread)
    affinity = spec.get("affinity")
    pod_affinity = affinity.get("podAffinity") if isinstance(affinity, MAPPINGS) else None
    if isinstance(pod_affinity, MAPPINGS) and pod_affinity.get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ):
        out.append(POD_AFFINITY_NOT_EVALUATED)
    if _host_ports(spec):
        out.append(HOST_PORTS_NOT_EVALUATED)
    return out


def _spread_note(spec: Mapping[str, Any], minor: int) -> str | None:
    """What the spread filter here does not settle for this spec: nothing without DoNotSchedule
    constraints, or for a pod bound with spec.nodeName (no scheduler reads them); all of it
    for a list the API server rejects or forms not modelled (k8s/topologyspread.py
    `modelled`); else the pods of other workloads, which are not counted."""
    spread = spec.get(SPREAD_FIELD)
    if not isinstance(spread, list) or not any(
        isinstance(c, MAPPINGS) and c.get("whenUnsatisfiable") == DO_NOT_SCHEDULE for c in spread
    ):
        return None
    bound = spec.get("nodeName")
    if isinstance(bound, str) and bound:
        return None
    constraints = spread_constraints(spec, minor)
    if not modelled(constraints):
        return TOPOLOGY_SPREAD_NOT_EVALUATED
    if any(c.label_selector is not None for c in constraints or ()):
        return TOPOLOGY_SPREAD_OWN_PODS
    return None


def _host_ports(spec: Mapping[str, Any]) -> bool:
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        for container in containers if isinstance(containers, list) else ():
            ports = container.get("ports") if isinstance(container, MAPPINGS) else None
            for port in ports if isinstance(ports, list) else ():
                if isinstance(port, MAPPINGS) and port.get("hostPort"):
                    return True
    return False


def dra_claims(spec: object) -> list:
    """The pod's ``spec.resourceClaims`` (dynamic resource allocation), or []."""
    claims = spec.get("resourceClaims") if isinstance(spec, MAPPINGS) else None
    return claims if isinstance(claims, list) else []


def _cause(workload: Workload, spec: Mapping[str, Any], placement: Placement) -> str:
    nodes = placement.nodes
    affinity = required_node_affinity(spec)
    admitted = [n for n in nodes if affinity.matches(n.name, n.labels)]
    verdicts = placement.verdicts(workload)
    if not admitted or any(verdicts[n.name].reason == AFFINITY_CONFLICT for n in nodes):
        return CAUSE_AFFINITY
    # the nodes the affinity admits are all cordoned or tainted: a toleration is missing
    blocked = [n for n in admitted if verdicts[n.name].reason in (TAINT, UNSCHEDULABLE)]
    if len(blocked) == len(admitted):
        return CAUSE_TAINT
    rest = [verdicts[n.name].reason for n in admitted if n not in blocked]
    if rest and all(reason == SPREAD_LABEL for reason in rest):
        return CAUSE_SPREAD  # the others lack a topologyKey of its spread constraints
    # the rest lack room, and a tainted one has enough: the taint is what to change, not the
    # request
    if all(verdicts[n.name].reason == INSUFFICIENT for n in admitted if n not in blocked):
        if any(_enough_room(n, workload, placement) for n in blocked):
            return CAUSE_TAINT
    return CAUSE_GPU


def _enough_room(node: Node, workload: Workload, placement: Placement) -> bool:
    """Whether the node's allocatable holds one pod (a node the inventory gives none for: when
    it has GPUs or the pod asks for none)."""
    allocatable = placement.allocatable(node)
    if allocatable is None:
        return node.is_gpu or workload.gpus == 0
    return not fits_request(placement.requests(workload), allocatable)


def _path_for(cause: str, workload: Workload, spec: Mapping[str, Any], nodes: list[Node]) -> Path:
    if cause == CAUSE_AFFINITY:
        return _affinity_path(workload, spec, nodes)
    if cause == CAUSE_TAINT:
        return _blocked_path(workload)
    if cause == CAUSE_NODE_NAME:
        return (*workload.spec_path, "nodeName")
    if cause == CAUSE_SPREAD:
        return _spread_path(workload, spec, nodes)
    return workload.gpu_request_path() or workload.spec_path


def _spread_path(workload: Workload, spec: Mapping[str, Any], nodes: list[Node]) -> Path:
    """The topologyKey of the first DoNotSchedule constraint whose key fewest nodes carry."""
    base = (*workload.spec_path, SPREAD_FIELD)
    keys = _missing_spread_keys(spec)
    if not keys:
        return base
    index, _ = min(keys, key=lambda k: (sum(1 for n in nodes if k[1] in n.labels), k[0]))
    return (*base, index, "topologyKey")


def resource_request_path(workload: Workload, resource: str) -> Path | None:
    """Where ``resource`` is written in the template: a pod-level request or limit of a kind
    the pod level holds (it replaces the containers' sum, k8s/resources.py `pod_requests`),
    else the largest amount of a container, limits first."""
    if resource == GPU_RESOURCE:
        return workload.gpu_request_path()
    if pod_level_resource(resource):
        for section in ("requests", "limits"):
            path = (*workload.spec_path, "resources", section, resource)
            if workload.manifest.get(*path) is not None:
                return path
    best: tuple[Fraction, Path] | None = None
    for c in workload.containers:
        for section in ("limits", "requests"):
            path = (*c.path, "resources", section, resource)
            amount, _ = quantity_value(workload.manifest.get(*path))
            if workload.manifest.get(*path) is not None and amount is not None:
                if best is None or amount > best[0]:
                    best = (amount, path)
    return best[1] if best else None


def explain_pending(workload: Workload, placement: Placement) -> Pending | None:
    """Why no node takes the workload's pods; None when some node does.

    Memoised per constraint set, kind, preemption policy, template path, the written order
    of nodeSelector, whether the pod spec claims DRA devices (`_details` says so) and whether
    `tolerations:` is written in the template (`_blocked_path` points there; admission may add
    the same tolerations to another workload's copy): so the text and the key it points at
    never depend on which workload came first; the request a finding points at is the
    workload's own (a short resource it does not write, `pods`: its GPU request).
    """
    if not placement.nodes or placement.eligible(workload):
        return None
    spec = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
    selector = spec.get("nodeSelector")
    key = (
        "pending",
        placement.constraint_key(workload),
        workload.kind,
        workload.preemption_policy,
        workload.spec_path,
        # the explanation lists nodeSelector entries as written; the constraint key sorts them
        tuple(selector) if isinstance(selector, dict) else None,
        bool(dra_claims(spec)),
        workload.spec_get("tolerations") is not None,
        # the explanation names the constraints' places in the list
        None if spec.get(SPREAD_FIELD) is None else repr(spec.get(SPREAD_FIELD)),
    )
    pending = placement.memo.get(key)
    if pending is None:
        pending = placement.memo[key] = _explain(workload, placement)
    if pending.cause == CAUSE_GPU:  # where this workload writes the request (`_explain`)
        short = pending.resource
        own = None if short is None else resource_request_path(workload, short)
        path = own or workload.gpu_request_path() or workload.spec_path
        if path != pending.path:
            pending = replace(pending, path=path)
    return pending


def _explain(workload: Workload, placement: Placement) -> Pending:
    nodes = placement.nodes
    verdicts = placement.verdicts(workload)
    spec: Mapping[str, Any] = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
    bound = workload.node_name
    if bound is not None:
        return _explain_bound(workload, spec, placement, bound)
    details = _details(workload, spec, verdicts, placement)
    cause = _cause(workload, spec, placement)
    path = _path_for(cause, workload, spec, nodes)
    # a taint to tolerate, else the cordon that keeps the pods off: of the nodes the affinity
    # admits (a node it refuses anyway may carry another taint, which no toleration would help)
    affinity = required_node_affinity(spec)
    admitted = [verdicts[n.name] for n in nodes if affinity.matches(n.name, n.labels)]
    pool = admitted or list(verdicts.values())
    taint = next((v.taint for v in pool if v.reason == TAINT), None) or next(
        (v.taint for v in pool if v.reason == UNSCHEDULABLE), None
    )
    reasons = [r for n in nodes for r in placement.node_reasons(verdicts[n.name])]
    if workload.kind == "DaemonSet":
        message = f"0/{len(nodes)} nodes run a pod of this DaemonSet: {reasons_histogram(reasons)}."
        # short of a resource: the request of the resource it lacks, as for other kinds (the
        # fix then names that resource, not the GPUs)
        resource = _first_short(verdicts, nodes) if cause == CAUSE_GPU else None
        if resource is not None:
            path = resource_request_path(workload, resource) or path
        return Pending(message, tuple(details), path, cause, taint, resource=resource)
    conflict = any(verdicts[n.name].reason == AFFINITY_CONFLICT for n in nodes)
    release = placement.release
    # before 1.34 an insufficient resource was resolvable: preemption looked for victims there
    no_victims = 0
    if not release.resources_unresolvable:
        no_victims = sum(verdicts[n.name].reason == INSUFFICIENT for n in nodes)
    message = fit_error_message(
        len(nodes),
        reasons,
        prefilter_message=REASON_AFFINITY_CONFLICT if conflict else None,
        postfilter_message=release.postfilter(len(nodes), workload.preemption_policy, no_victims),
    )
    resource = _first_short(verdicts, nodes) if cause == CAUSE_GPU else None
    if resource is not None:
        path = resource_request_path(workload, resource) or path
    reasons_seen = {verdicts[n.name].reason for n in nodes}
    pinned = (
        cause == CAUSE_AFFINITY
        and bool(reasons_seen & {PREFILTER, AFFINITY_CONFLICT})
        and AFFINITY not in reasons_seen
    )
    return Pending(message, tuple(details), path, cause, taint, resource, pinned)


def _first_short(verdicts: Mapping[str, Verdict], nodes: list[Node]) -> str | None:
    resources = _short_resources(verdicts, nodes)
    requested = [r for r in resources if r != "pods"]
    chosen = requested or resources
    return chosen[0] if chosen else None


def _explain_bound(
    workload: Workload, spec: Mapping[str, Any], placement: Placement, bound: str
) -> Pending:
    nodes = placement.nodes
    node = next((n for n in nodes if n.name == bound), None)
    name_path = (*workload.spec_path, "nodeName")
    if node is None:
        close = sorted(_close_matches(bound, [n.name for n in nodes], n=3, cutoff=0.6))
        details: tuple[str, ...] = (f"similar names: {', '.join(close)}",) if close else ()
        message = (
            f"spec.nodeName is {bound}, which is not a node of the inventory: the pod bypasses "
            "the scheduler and no kubelet ever admits it"
        )
        return Pending(message, details, name_path, CAUSE_NODE_NAME)
    verdict = placement.verdicts(workload)[bound]
    prefix = (
        f"spec.nodeName binds the pod to {bound}, bypassing the scheduler; its kubelet refuses it: "
    )
    if verdict.reason == AFFINITY:
        details = tuple(_affinity_details(spec, [node], nodes))
        path = _affinity_path(workload, spec, [node])
        return Pending(prefix + kubelet_rejection("affinity"), details, path, CAUSE_AFFINITY)
    if verdict.reason == TAINT:
        detail = f"untolerated NoExecute taint {taint_text(verdict.taint or {})} on {bound}"
        message = prefix + kubelet_rejection("taint")
        return Pending(message, (detail,), _blocked_path(workload), CAUSE_TAINT, verdict.taint)
    # the kubelet reports the first resource its admission check finds short
    short = verdict.short[0]
    message = prefix + kubelet_rejection(
        "resource", short.resource, short.requested, short.capacity, short.used
    )
    if short.resource == "pods":
        return Pending(message, (), name_path, CAUSE_GPU, resource="pods")
    path = resource_request_path(workload, short.resource) or name_path
    return Pending(message, (), path, CAUSE_GPU, resource=short.resource)
