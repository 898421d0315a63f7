"""PodDisruptionBudget semantics: what the disruption controller computes, from manifests.

Mirrors kubernetes pkg/controller/disruption/disruption.go (``getExpectedPodCount``,
``getExpectedScale``, ``countHealthyPods``, ``updatePdbStatus``, ``failSafe``), the PDB
validation in pkg/apis/policy/validation, and the eviction subresource in
pkg/registry/core/pod/storage/eviction.go.

Arithmetic (policy/v1, no defaulting of either field):

- ``minAvailable: N`` (int): desiredHealthy = N, expected = number of selected pods.
- ``minAvailable: "P%"``: expected = sum of the scale of the pods' owning controllers,
  desiredHealthy = ceil(P% x expected).
- ``maxUnavailable`` (int or %): expected = sum of owners' scale, desiredHealthy =
  expected - value (a percentage is scaled rounding UP), floored at 0.
- Neither set: the controller leaves expected = desiredHealthy = 0, so 0 disruptions.
- disruptionsAllowed = currentHealthy - desiredHealthy, and 0 whenever that is negative
  or expected <= 0.

"Owners' scale" (``getExpectedScale``): each selected pod's controller is resolved once;
Deployment (through its ReplicaSet), ReplicaSet, StatefulSet and ReplicationController are
read directly, any other kind through its ``/scale`` subresource. Pods with no controller
(bare pods) are skipped - they count as healthy but not as expected (since Kubernetes 1.23,
PR #103414; earlier they failed the sync). A controller without a scale subresource (Job,
DaemonSet, a Node for static pods, most custom resources) makes the sync fail, and the
controller's ``failSafe`` writes disruptionsAllowed = 0.

Inputs are plain JSON-like data and may have wrong types; nothing here raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.records import record
from gpudrv_check.k8s.intstr import (
    parse_int_or_percent,
    scaled_value,
    scaling_error,
    validate_int_or_percent,
)
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import (
    Problem,
    SelectorKey,
    selector_key,
    validate_label_selector,
)

# pkg/registry/core/pod/storage/eviction.go: returned with HTTP 500 when >1 PDB covers a pod.
EVICTION_MULTIPLE_PDBS_MESSAGE = (
    "This pod has more than one PodDisruptionBudget, "
    "which the eviction subresource does not support."
)
EVICTION_MULTIPLE_PDBS_STATUS = 500
# pkg/registry/core/pod/storage/eviction.go: returned with HTTP 429 when no disruption is left.
EVICTION_BUDGET_VIOLATION_MESSAGE = (
    "Cannot evict pod as it would violate the pod's disruption budget."
)
EVICTION_BUDGET_VIOLATION_STATUS = 429

# Kinds the controller reads replicas from without the scale subresource (its "finders").
DIRECT_SCALE_KINDS: tuple[str, ...] = (
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
)
# owner_kind values meaning "no controllerRef": the pod is unmanaged.
BARE_POD_KINDS = frozenset({"", "Pod"})
UNHEALTHY_POD_EVICTION_POLICIES: tuple[str, ...] = ("IfHealthyBudget", "AlwaysAllow")


@record(frozen=True, slots=True)
class PodGroup:
    """Pods a PDB selects that share one controlling owner.

    ``owner_kind`` is the kind the disruption controller resolves the pods to: "Deployment"
    for pods of a Deployment's ReplicaSets, "ReplicaSet" for a bare ReplicaSet, "StatefulSet",
    "Job", "DaemonSet", a custom kind, or "" / "Pod" for pods with no controller.
    ``replicas`` is that owner's scale (``spec.replicas`` with the API default of 1 applied,
    or a custom resource's ``/scale``); None when the owner has no scale subresource.
    ``pods`` is how many of the owner's pods the PDB selects; ``ready`` how many of those are
    Ready (defaults to ``pods``: full health). Groups with the same kind and name are merged,
    as the controller counts each controller's scale once.
    """

    owner_kind: str
    owner_name: str
    replicas: int | None
    pods: int
    ready: int | None = None

    @property
    def bare(self) -> bool:
        """Pods with no controllerRef (the controller calls them unmanaged)."""
        return self.owner_kind in BARE_POD_KINDS

    @property
    def scalable(self) -> bool:
        """Whether the controller can read a scale for this owner."""
        return not self.bare and _count(self.replicas) is not None


Outcome = Literal["computed", "no-expected-pods", "fail-safe", "invalid-spec"]


@record(frozen=True, slots=True)
class Budget:
    """The PDB status the disruption controller would write, and why.

    ``outcome`` is ``computed`` (plain arithmetic), ``no-expected-pods`` (expected <= 0, so
    0 allowed), ``fail-safe`` (the sync fails and the controller writes 0; expected and
    desired_healthy are then 0 because they were never computed) or ``invalid-spec`` (the API
    server rejects the object, so it is not in force). ``reason`` explains the last three.
    """

    expected: int
    desired_healthy: int
    current_healthy: int
    disruptions_allowed: int
    rule: str
    outcome: Outcome = "computed"
    reason: str = ""
    bare_pods: int = 0

    def describe(self) -> str:
        """One human line, e.g. ``minAvailable 4 of 4 pods → 0 disruptions allowed``."""
        allowed = _plural(self.disruptions_allowed, "disruption") + " allowed"
        if self.outcome == "invalid-spec":
            return f"invalid PodDisruptionBudget ({self.reason}): the API server rejects it"
        if self.outcome == "fail-safe":
            return (
                f"{self.rule} → {allowed}: {self.reason}, so the disruption controller "
                "fails its sync and writes 0 (fail-safe)"
            )
        if self.outcome == "no-expected-pods":
            return f"{self.rule} → {allowed}: {self.reason}"
        # Only an integer minAvailable counts pods; every other rule counts owners' replicas.
        by_pods = self.rule.startswith("minAvailable") and not self.rule.endswith("%")
        unit = "pod" if by_pods else "replica"
        text = f"{self.rule} of {_plural(self.expected, unit)}"
        if not by_pods:
            text += f" = {self.desired_healthy} must stay healthy"
        if self.current_healthy != self.expected:
            text += f", {self.current_healthy} healthy"
        text += f" → {allowed}"
        if self.bare_pods:
            text += f" ({_plural(self.bare_pods, 'bare pod')} counted healthy but not expected)"
        return text


def _plural(number: int, noun: str) -> str:
    """``1 disruption`` / ``2 disruptions``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _count(value: object) -> int | None:
    """A non-negative int count, or None for anything else (bools included)."""
    if type(value) is int:  # the usual case, checked first
        return value if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _spec_of(pdb: object) -> object:
    """``pdb.spec`` of a whole PodDisruptionBudget object, None when absent."""
    return pdb.get("spec") if isinstance(pdb, MAPPINGS) else None


def _is_set(spec: Mapping[object, object], field: str) -> bool:
    """A pointer field is set when present and not null (null decodes to nil)."""
    return spec.get(field) is not None


def validate_pdb_spec(spec: object) -> list[Problem]:
    """Problems the API server reports for a PDB ``spec``; paths are relative to the spec.

    Both ``minAvailable`` and ``maxUnavailable`` set; negative ints; percentages that are
    malformed or above 100%; values the decoder rejects (``[1]``, ``1.5``, ``true``, ints
    beyond int32); selector problems (via labelselector); unknown
    ``unhealthyPodEvictionPolicy``. Setting neither field and omitting the selector are both
    valid (upstream has no defaulting): such a PDB is accepted but allows 0 disruptions, or
    covers no pod.
    """
    if spec is None:
        return []
    if not isinstance(spec, MAPPINGS):
        return [Problem((), "spec must be an object")]
    problems: list[Problem] = []
    if _is_set(spec, "minAvailable") and _is_set(spec, "maxUnavailable"):
        problems.append(Problem((), "minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        problems += [Problem((field,), msg) for msg in validate_int_or_percent(spec.get(field))]
    problems += [
        Problem(("selector", *p.path), p.message)
        for p in validate_label_selector(spec.get("selector"))
    ]
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        problems.append(
            Problem(
                ("unhealthyPodEvictionPolicy",),
                f"unsupported value {quoted(policy)}: use "
                f"{' or '.join(UNHEALTHY_POD_EVICTION_POLICIES)}",
            )
        )
    return problems


def pdb_covers(
    pdb: object, pod_namespace: str, pod_labels: object, *, default_namespace: str = "default"
) -> bool:
    """Whether the eviction API applies the PDB object ``pdb`` to a pod.

    Same namespace (``metadata.namespace``, else ``default_namespace``) and the policy/v1
    selector matches: ``{}`` covers every pod of the namespace, an absent/null selector
    covers none, an invalid selector covers none (the eviction handler skips it).

    A pod covered by two or more PDBs cannot be evicted at all: the eviction API answers
    HTTP 500 :data:`EVICTION_MULTIPLE_PDBS_MESSAGE`. A pod whose only PDB has 0
    disruptions allowed gets HTTP 429 :data:`EVICTION_BUDGET_VIOLATION_MESSAGE` (also
    while the controller has not yet observed the PDB's latest generation). Pods that are
    Pending, Succeeded, Failed or already terminating are evicted without a PDB check.
    """
    scope = pdb_scope(pdb, default_namespace=default_namespace)
    return scope is not None and scope[0] == pod_namespace and scope[1].matches(pod_labels)


def pdb_scope(
    pdb: object, *, default_namespace: str = "default", namespace: str | None = None
) -> tuple[str, SelectorKey] | None:
    """(namespace, canonical selector) of the PDB object ``pdb``, None when it covers no pod:
    what ``pdb_covers`` decides from, computed once per PDB by callers matching many pods.
    ``namespace``: the one the object is applied in when the repo sets it apart from its
    metadata (a kustomization's `namespace:`), else its metadata's."""
    if not isinstance(pdb, MAPPINGS):
        return None
    if namespace is None:
        metadata = pdb.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, MAPPINGS) else None
    if not isinstance(namespace, str) or not namespace:
        namespace = default_namespace
    spec = _spec_of(pdb)
    if not isinstance(spec, MAPPINGS):
        return None
    return namespace, selector_key(spec.get("selector"))


def _rule(spec: Mapping[object, object]) -> str:
    """``minAvailable 4`` / ``maxUnavailable 25%`` / the neither-set wording."""
    for field in ("maxUnavailable", "minAvailable"):
        value = spec.get(field)
        if value is not None:
            return f"{field} {value}"
    return "no minAvailable or maxUnavailable"


def _expected_scale(groups: list[PodGroup]) -> tuple[int, int, str | None]:
    """getExpectedScale: (sum of owners' scale, bare pods skipped, sync error or None)."""
    scale: dict[tuple[str, str], int] = {}
    bare = 0
    for group in groups:
        pods = _count(group.pods) or 0
        if pods == 0:
            continue  # the controller only learns about owners through their selected pods
        if group.bare:
            bare += pods
            continue
        if not group.scalable:
            owner = f"{group.owner_kind} {group.owner_name!s}"
            if group.owner_kind == "Node":  # a static pod's mirror (kubelet mirror_client.go)
                owner += ", the controller of a static pod's mirror,"
            return 0, bare, f"{owner} has no scale subresource"
        scale[(group.owner_kind, str(group.owner_name))] = _count(group.replicas) or 0
    return sum(scale.values()), bare, None


def _groups(groups: object) -> list[PodGroup]:
    """The PodGroup items of ``groups``; anything else is ignored."""
    if isinstance(groups, PodGroup):
        return [groups]
    if not isinstance(groups, Iterable) or isinstance(groups, (str, bytes, Mapping)):
        return []
    return [g for g in groups if isinstance(g, PodGroup)]


def _pods_and_healthy(members: list[PodGroup]) -> tuple[int, int]:
    """The selected pods, and of those the Ready ones (a group's ready is at most its pods)."""
    pods = healthy = 0
    for group in members:
        count = _count(group.pods) or 0
        pods += count
        ready = _count(group.ready if group.ready is not None else group.pods) or 0
        healthy += min(ready, count)
    return pods, healthy


def disruption_budget(pdb: object, groups: Iterable[PodGroup]) -> Budget:
    """What the disruption controller computes for the PDB object ``pdb`` (reads its ``spec``).

    ``groups`` are the pods the PDB covers, grouped by controlling owner (see
    :class:`PodGroup`); the caller selects them with :func:`pdb_covers`. currentHealthy is
    the number of Ready selected pods (all of them at full health).

    ``unhealthyPodEvictionPolicy`` plays no part here: it only decides whether a pod that
    is *not Ready* may be evicted, and at full health every covered pod is Ready.
    """
    spec = _spec_of(pdb)
    spec_map: Mapping[object, object] = spec if isinstance(spec, MAPPINGS) else {}
    rule = _rule(spec_map)
    members = _groups(groups)
    pods, healthy = _pods_and_healthy(members)
    problems = validate_pdb_spec(spec) if spec is not None else [Problem((), "spec is missing")]
    if problems:
        where = ".".join(str(part) for part in problems[0].path)
        reason = f"{where}: {problems[0].message}" if where else problems[0].message
        return Budget(0, 0, healthy, 0, rule, "invalid-spec", reason)

    min_available = spec_map.get("minAvailable")
    max_unavailable = spec_map.get("maxUnavailable")
    bare = 0
    if max_unavailable is not None or isinstance(min_available, str):
        expected, bare, error = _expected_scale(members)
        if error is not None:
            return Budget(0, 0, healthy, 0, rule, "fail-safe", error)
        value = max_unavailable if max_unavailable is not None else min_available
        scaled = scaled_value(value, expected, round_up=True)
        if scaled is None:
            reason = f"{quoted(value)} cannot be scaled ({scaling_error(value)})"
            return Budget(0, 0, healthy, 0, rule, "fail-safe", reason)
        desired = max(expected - scaled, 0) if max_unavailable is not None else scaled
    elif min_available is not None:
        parsed = parse_int_or_percent(min_available)
        desired = parsed.amount if parsed is not None else 0
        expected = pods
    else:
        expected, desired = 0, 0

    if expected <= 0:
        reason = _no_expected_reason(spec_map, pods, bare)
        return Budget(expected, desired, healthy, 0, rule, "no-expected-pods", reason, bare)
    allowed = max(healthy - desired, 0)
    return Budget(expected, desired, healthy, allowed, rule, "computed", "", bare)


def _no_expected_reason(spec: Mapping[object, object], pods: int, bare: int) -> str:
    """Why the controller expects no pods (and therefore allows no disruption)."""
    if not _is_set(spec, "minAvailable") and not _is_set(spec, "maxUnavailable"):
        return (
            "neither minAvailable nor maxUnavailable is set, so the disruption controller "
            "expects 0 pods and refuses every eviction of a covered pod"
        )
    if pods == 0:
        return "the PDB selects no pods"
    if bare == pods:
        return (
            "only bare pods are selected and a percentage or maxUnavailable counts only pods "
            "whose controller has a scale"
        )
    return "the owning controllers are scaled to 0 replicas"


@record(frozen=True, slots=True)
class BudgetChange:
    """The smallest edit of a PDB spec that lets ``wanted`` covered pods be evicted.

    ``field`` is set to ``value`` (and the other of minAvailable/maxUnavailable removed, when
    ``drop`` names it). ``allowed`` is how many disruptions the changed PDB allows at the same
    health.
    """

    field: str
    value: int | str
    allowed: int
    drop: str | None = None

    def describe(self) -> str:
        text = f"{self.field}: {self.value}"
        if self.drop:
            text += f" (and remove {self.drop})"
        return text


def _percent_at_most(limit: int, expected: int) -> int:
    """Largest P with ceil(P% x expected) <= limit (P in 0..100)."""
    return max(0, min(100, (limit * 100) // expected))


def _percent_at_least(amount: int, expected: int) -> int:
    """Smallest P with ceil(P% x expected) >= amount (P in 0..100)."""
    if amount <= 0:
        return 0
    return max(0, min(100, ((amount - 1) * 100) // expected + 1))


def budget_change(pdb: object, budget: Budget, wanted: int = 1) -> BudgetChange | None:
    """How to change the PDB so that ``wanted`` of its healthy pods may be evicted.

    Keeps the kind of budget the author chose (an integer stays an integer, a percentage a
    percentage); where that kind cannot work (a percentage or maxUnavailable over owners
    without a scale, or neither field set) it switches to an integer ``minAvailable``, the
    one form the controller computes from the selected pods alone. ``None`` when no budget
    change can help: no healthy pods, fewer healthy pods than ``wanted``, or the spec is
    invalid.
    """
    healthy = budget.current_healthy
    if wanted < 1 or healthy < wanted or budget.outcome == "invalid-spec":
        return None
    spec = _spec_of(pdb)
    spec_map: Mapping[object, object] = spec if isinstance(spec, MAPPINGS) else {}
    keep = healthy - wanted  # pods that must stay healthy
    has_min = _is_set(spec_map, "minAvailable")
    has_max = _is_set(spec_map, "maxUnavailable")
    if budget.outcome == "computed" and budget.expected > 0:
        expected = budget.expected
        if has_min:
            value = spec_map.get("minAvailable")
            if isinstance(value, str):
                percent = _percent_at_most(keep, expected)
                desired = scaled_value(f"{percent}%", expected, round_up=True) or 0
                return BudgetChange("minAvailable", f"{percent}%", max(healthy - desired, 0))
            return BudgetChange("minAvailable", keep, wanted)
        if has_max:
            value = spec_map.get("maxUnavailable")
            needed = max(expected - keep, 0)  # maxUnavailable must scale to at least this
            if isinstance(value, str):
                percent = _percent_at_least(needed, expected)
                scaled = scaled_value(f"{percent}%", expected, round_up=True) or 0
                return BudgetChange(
                    "maxUnavailable", f"{percent}%", max(healthy - max(expected - scaled, 0), 0)
                )
            return BudgetChange("maxUnavailable", needed, max(healthy - (expected - needed), 0))
    # fail-safe or nothing expected: an integer minAvailable counts the selected pods only
    return BudgetChange("minAvailable", keep, wanted, "maxUnavailable" if has_max else None)
