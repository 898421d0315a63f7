"""Pod topology spread that must hold (``whenUnsatisfiable: DoNotSchedule``): kube-scheduler's
PodTopologySpread filter, for the pods of one workload.

Upstream, read and reproduced (not copied), pkg/scheduler/framework/plugins/podtopologyspread:

- plugin.go: the reasons ``node(s) didn't match pod topology spread constraints`` (skew) and
  the same followed by `` (missing required label)``;
- common.go ``filterTopologySpreadConstraints``: only ``DoNotSchedule`` constraints filter
  (``ScheduleAnyway`` ones only score); ``minDomains`` absent is 1, ``nodeAffinityPolicy``
  absent is ``Honor``, ``nodeTaintsPolicy`` absent is ``Ignore``; ``matchLabelKeys`` adds
  ``key In (<the pod's own value>)`` to the selector for each key the pod carries (keys it
  lacks are ignored); ``matchNodeInclusionPolicies``: under ``Honor`` a node the pod's
  nodeSelector / required node affinity refuses is no domain, under taints ``Honor`` a node
  with a NoSchedule/NoExecute taint the pod does not tolerate is none;
  ``nodeLabelsMatchSpreadConstraints``: a node counts only when it carries every
  constraint's ``topologyKey``; ``countPodsMatchSelector``: pods of the pod's namespace the
  selector selects;
- filtering.go ``calPreFilterState`` (the number of matching pods per domain, every domain
  of the nodes that count, empty ones too), ``minMatchNum`` (the smallest count; 0 when
  there are fewer domains than ``minDomains``) and ``Filter``: per constraint in order, a
  node without the key fails with the "missing required label" reason
  (UnschedulableAndUnresolvable), else ``matchNum + selfMatch - minMatchNum > maxSkew``
  fails with the skew reason (Unschedulable: preemption looks there).

Feature gates (pkg/features/kube_features.go): MinDomainsInPodTopologySpread on by default from
1.27 (beta but off in 1.25-1.26), NodeInclusionPolicyInPodTopologySpread from 1.26,
MatchLabelKeysInPodTopologySpread from 1.27 (before, the API server drops the field and the
scheduler reads none).

Inputs are plain JSON-like data and may have wrong types; nothing here raises. A list the API
server rejects (pkg/apis/core/validation ``validateTopologySpreadConstraints``: maxSkew not a
positive integer, no topologyKey, an unknown whenUnsatisfiable, a repeated
{topologyKey, whenUnsatisfiable}, minDomains not positive or on ScheduleAnyway, an unknown
policy, a bad labelSelector) gives None: no pod of it exists, nothing is evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import selector_key, validate_label_selector
from gpudrv_check.k8s.podaffinity import (
    HOSTNAME_LABEL,
    JOB_COMPLETION_INDEX,
    NO_SIBLING_LABELS,
    POD_INDEX,
    STATEFULSET_POD_NAME,
    SiblingLabels,
    sibling_pod_labels,
)

#: plugin.go ErrReasonConstraintsNotMatch / ErrReasonNodeLabelNotMatch
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = REASON_SPREAD + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
FIELD = "topologySpreadConstraints"

#: releases from which the scheduler reads each field (kube_features.go defaults)
MIN_DOMAINS_SINCE = 27
NODE_INCLUSION_POLICY_SINCE = 26
MATCH_LABEL_KEYS_SINCE = 27

#: labels each pod of a template holds a value of its own for (k8s/podaffinity.py)
PER_POD_KEYS = frozenset((STATEFULSET_POD_NAME, POD_INDEX, JOB_COMPLETION_INDEX))

# how a constraint's selector sees the pods of the pod's own template
SIBLINGS = "siblings"  # selects the pod and its siblings: the own pods count
SELF_ONLY = "self"  # selects the pod only (a matchLabelKeys key each pod holds its own value of)
NONE = "none"  # selects none of them


@record(frozen=True)
class SpreadConstraint:
    """One ``DoNotSchedule`` constraint, as the scheduler reads it in one release."""

    index: int  # position in topologySpreadConstraints
    max_skew: int
    topology_key: str
    label_selector: object
    match_label_keys: tuple[str, ...] = ()
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy
    honor_taints: bool = False  # nodeTaintsPolicy


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def spread_constraints(pod_spec: object, minor: int = 35) -> tuple[SpreadConstraint, ...] | None:
    """The ``DoNotSchedule`` constraints of a pod spec in their order (() without any); None
    when the API server rejects the list (see the module docstring), so nothing is known."""
    raw = pod_spec.get(FIELD) if isinstance(pod_spec, MAPPINGS) else None
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return None
    out: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for index, c in enumerate(raw):
        if not isinstance(c, MAPPINGS):
            return None
        when, key = c.get("whenUnsatisfiable"), c.get("topologyKey")
        skew, min_domains = _int(c.get("maxSkew")), c.get("minDomains")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY) or not isinstance(key, str) or not key:
            return None
        if skew is None or skew < 1 or (key, when) in seen:
            return None
        seen.add((key, when))
        if min_domains is not None:
            number = _int(min_domains)
            if number is None or number < 1 or when != DO_NOT_SCHEDULE:
                return None
        policies = (c.get("nodeAffinityPolicy"), c.get("nodeTaintsPolicy"))
        if any(p is not None and p not in (HONOR, IGNORE) for p in policies):
            return None
        selector = c.get("labelSelector")
        if selector is not None and validate_label_selector(selector):
            return None
        label_keys = c.get("matchLabelKeys")
        if label_keys is not None and not (
            isinstance(label_keys, list) and all(isinstance(k, str) and k for k in label_keys)
        ):
            return None
        if when != DO_NOT_SCHEDULE:
            continue
        keys = tuple(label_keys or ()) if minor >= MATCH_LABEL_KEYS_SINCE else ()
        inclusion = minor >= NODE_INCLUSION_POLICY_SINCE
        out.append(
            SpreadConstraint(
                index=index,
                max_skew=skew,
                topology_key=key,
                label_selector=selector,
                match_label_keys=keys,
                min_domains=(_int(min_domains) or 1) if minor >= MIN_DOMAINS_SINCE else 1,
                honor_affinity=not (inclusion and policies[0] == IGNORE),
                honor_taints=inclusion and policies[1] == HONOR,
            )
        )
    return tuple(out)


def selector_keys(selector: object) -> frozenset[str]:
    """The label keys a (valid) selector reads."""
    compiled = selector_key(selector)
    return frozenset(r.key for r in compiled.requirements)


def unsupported(constraint: SpreadConstraint) -> bool:
    """Forms this check does not evaluate: ``matchLabelKeys`` with a null selector or with a
    key the selector reads as well (their merge differs between releases: the scheduler's
    before 1.34, the API server's from 1.34, whose validation refuses some), and a selector
    reading a label each pod holds a value of its own for."""
    selector = constraint.label_selector
    if selector is None:
        return bool(constraint.match_label_keys)
    read = selector_keys(selector)
    return bool(read & PER_POD_KEYS) or bool(read & set(constraint.match_label_keys))


def may_count(constraint: SpreadConstraint) -> bool:
    """Whether the constraint may count the pod's own siblings (judged from the spec alone)."""
    if constraint.label_selector is None:
        return False
    return not PER_POD_KEYS & set(constraint.match_label_keys)


def modelled(constraints: tuple[SpreadConstraint, ...] | None) -> bool:
    """Whether this check evaluates these constraints whole for the pod's own pods: none of
    an unsupported form, and at most one that may count them (two or more: where each replica
    goes decides what the other allows, which a choice of node by node does not settle)."""
    if constraints is None:
        return False
    if any(unsupported(c) for c in constraints):
        return False
    return sum(1 for c in constraints if may_count(c)) <= 1


def missing_keys(constraints: tuple[SpreadConstraint, ...]) -> tuple[str, ...]:
    """The topology keys a node must carry, in the constraints' order, without the hostname
    (every kubelet sets it: an inventory that leaves it out still has it)."""
    keys: dict[str, None] = {}
    for c in constraints:
        if c.topology_key != HOSTNAME_LABEL:
            keys.setdefault(c.topology_key, None)
    return tuple(keys)


def own_selection(
    constraint: SpreadConstraint,
    template: Mapping[str, str],
    siblings: SiblingLabels = NO_SIBLING_LABELS,
) -> str:
    """How the constraint's selector (``matchLabelKeys`` merged) sees the pod and its siblings:
    `SIBLINGS`, `SELF_ONLY` or `NONE`. For a supported constraint (`unsupported`), which
    reads no per-pod label: the pod and its siblings agree on every label it reads."""
    if constraint.label_selector is None:
        return NONE
    labels = sibling_pod_labels(template, siblings, per_pod=False)
    if not selector_key(constraint.label_selector).matches(labels):
        return NONE
    for key in constraint.match_label_keys:
        if key in siblings.per_pod:
            return SELF_ONLY  # key In (own value): every sibling holds another
    return SIBLINGS


@record(frozen=True)
class Skew:
    """The filter's state for one constraint that counts the workload's own pods: per
    domain the number of them placed."""

    max_skew: int
    min_domains: int
    counts: dict[str, int]  # every domain of the nodes that count, empty ones too

    def minimum(self) -> int:
        """filtering.go ``minMatchNum``."""
        if len(self.counts) < self.min_domains or not self.counts:
            return 0
        return min(self.counts.values())

    def allows(self, value: str, minimum: int) -> bool:
        """Whether one more own pod may go to the domain ``value`` (self-match 1)."""
        return self.counts.get(value, 0) + 1 - minimum <= self.max_skew
