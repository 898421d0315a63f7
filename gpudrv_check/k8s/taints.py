"""Taints and tolerations: which taints block a pod, and what DaemonSet pods tolerate.

Upstream, read and reproduced (not copied):

- ``k8s.io/api/core/v1/toleration.go`` ``Toleration.ToleratesTaint``;
- ``k8s.io/component-helpers/scheduling/corev1/helpers.go`` ``TolerationsTolerateTaint`` and
  ``FindMatchingUntoleratedTaint``;
- scheduler plugins ``TaintToleration`` (filters on ``NoSchedule`` and ``NoExecute``) and
  ``NodeUnschedulable`` (``spec.unschedulable`` blocks a pod unless it tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule``);
- kubelet admission ``pkg/kubelet/lifecycle/predicate.go``: a pod bound with ``spec.nodeName``
  skips the scheduler and the kubelet checks only ``NoExecute`` taints;
- ``pkg/controller/daemon/util/daemonset_util.go`` ``AddOrUpdateDaemonPodTolerations``;
- ``pkg/apis/core/validation/validation.go`` ``ValidateTolerations``, ``validateNodeTaints``,
  ``validateTaintEffect``.

Toleration operators ``Gt``/``Lt`` exist upstream behind the alpha feature gate
``TaintTolerationComparisonOperators`` (1.35, off by default). We model the default: such a
toleration tolerates nothing and the API server refuses it.

Inputs are JSON-like data that may have the wrong types; nothing here raises. A malformed
toleration tolerates nothing; a malformed taint is skipped, since no real Node can carry it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpudrv_check.core.finding import quoted
from gpudrv_check.k8s.labels import (
    MAPPINGS,
    Path,
    Problem,
    json_type_name,
    label_key_errors,
    label_value_errors,
)

__all__ = [
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "NO_EXECUTE",
    "TAINT_EFFECTS",
    "BLOCKING_EFFECTS",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_UNREACHABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "TAINT_NODE_MEMORY_PRESSURE",
    "TAINT_NODE_DISK_PRESSURE",
    "TAINT_NODE_PID_PRESSURE",
    "TAINT_NODE_NETWORK_UNAVAILABLE",
    "tolerates",
    "tolerations_tolerate",
    "node_taints",
    "first_untolerated_taint",
    "first_untolerated_taint_for_bound_pod",
    "daemonset_default_tolerations",
    "daemonset_pod_tolerations",
    "validate_tolerations",
    "validate_taints",
]

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
# PreferNoSchedule only lowers a node's score; it never keeps a pod off the node.
BLOCKING_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NODE_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"

_TOLERATION_OPERATORS = ("Equal", "Exists")


def _text(obj: Mapping[str, object], name: str) -> str | None:
    """A string field, "" when absent or null (Go's zero value), None when of another type."""
    value = obj.get(name)
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _taint_fields(taint: object) -> tuple[str, str, str] | None:
    """(key, value, effect) of a well-formed taint, else None."""
    if not isinstance(taint, MAPPINGS):
        return None
    key, value, effect = _text(taint, "key"), _text(taint, "value"), _text(taint, "effect")
    if key is None or value is None or effect is None:
        return None
    return key, value, effect


def tolerates(toleration: object, taint: object) -> bool:
    """True when one toleration tolerates one taint (upstream ``ToleratesTaint``).

    An empty effect matches every effect; an empty key matches every key (the API server only
    allows that with ``Exists``); ``Exists`` ignores the value; ``Equal`` or an empty operator
    compares values. ``tolerationSeconds`` plays no part here: it only delays eviction.
    """
    fields = _taint_fields(taint)
    if fields is None or not isinstance(toleration, MAPPINGS):
        return False
    key, value, effect = fields
    t_key, t_op = _text(toleration, "key"), _text(toleration, "operator")
    t_value, t_effect = _text(toleration, "value"), _text(toleration, "effect")
    if t_key is None or t_op is None or t_value is None or t_effect is None:
        return False
    if t_effect and t_effect != effect:
        return False
    if t_key and t_key != key:
        return False
    if t_op in ("", "Equal"):
        return t_value == value
    # Exists matches any value; Gt/Lt (alpha, gate off) and unknown operators match nothing.
    return t_op == "Exists"


def _toleration_list(tolerations: object) -> list[object]:
    return tolerations if isinstance(tolerations, list) else []


def tolerations_tolerate(tolerations: object, taint: object) -> bool:
    """True when any toleration in the list tolerates the taint."""
    return any(tolerates(t, taint) for t in _toleration_list(tolerations))


def node_taints(node_spec: object) -> list[dict[str, object]]:
    """The taints that keep pods off a node: ``spec.taints`` plus the cordon taint.

    ``spec.unschedulable: true`` acts like ``node.kubernetes.io/unschedulable:NoSchedule``
    with an empty value: the scheduler's NodeUnschedulable plugin admits exactly the pods that
    tolerate that taint. It is added unless an identical taint is already listed. Malformed
    entries are dropped. The returned dicts are the caller's own; do not mutate them.
    """
    if not isinstance(node_spec, MAPPINGS):
        return []
    raw = node_spec.get("taints")
    taints = [t for t in raw if _taint_fields(t) is not None] if isinstance(raw, list) else []
    if node_spec.get("unschedulable") is True:
        cordon = (TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)
        if not any(_taint_fields(t) == cordon for t in taints):
            taints.append({"key": TAINT_NODE_UNSCHEDULABLE, "effect": NO_SCHEDULE})
    return taints


def first_untolerated_taint(
    taints: object, tolerations: object, effects: Iterable[str] = BLOCKING_EFFECTS
) -> dict[str, object] | None:
    """The first taint with one of ``effects`` that no toleration tolerates, else ``None``.

    The default effects are what the scheduler filters on; ``PreferNoSchedule`` never blocks.
    Pass :func:`node_taints` output to include the cordon.
    """
    wanted = frozenset(effects)
    tolerations = _toleration_list(tolerations)
    for taint in taints if isinstance(taints, list) else []:
        fields = _taint_fields(taint)
        if fields is None or fields[2] not in wanted:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def first_untolerated_taint_for_bound_pod(
    taints: object, tolerations: object
) -> dict[str, object] | None:
    """Like :func:`first_untolerated_taint` for a pod with ``spec.nodeName`` set.

    Such a pod bypasses the scheduler; the kubelet admits it unless a ``NoExecute`` taint is
    untolerated, so ``NoSchedule`` taints and the cordon do not stop it.
    """
    return first_untolerated_taint(taints, tolerations, effects=(NO_EXECUTE,))


def daemonset_default_tolerations(host_network: bool) -> list[dict[str, str]]:
    """The tolerations the DaemonSet controller adds to every pod it creates, in upstream order.

    ``not-ready`` and ``unreachable`` (NoExecute) keep DaemonSet pods through node trouble;
    ``disk-pressure``, ``memory-pressure``, ``pid-pressure`` and ``unschedulable`` (NoSchedule)
    let them land on pressured or cordoned nodes; ``network-unavailable`` (NoSchedule) only with
    ``hostNetwork``, since only those pods can run before the pod network is up.
    """
    keyed = [
        (TAINT_NODE_NOT_READY, NO_EXECUTE),
        (TAINT_NODE_UNREACHABLE, NO_EXECUTE),
        (TAINT_NODE_DISK_PRESSURE, NO_SCHEDULE),
        (TAINT_NODE_MEMORY_PRESSURE, NO_SCHEDULE),
        (TAINT_NODE_PID_PRESSURE, NO_SCHEDULE),
        (TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE),
    ]
    if host_network is True:
        keyed.append((TAINT_NODE_NETWORK_UNAVAILABLE, NO_SCHEDULE))
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in keyed]


def _same_toleration(a: object, b: Mapping[str, str]) -> bool:
    """Upstream ``MatchToleration``: equal key, effect, operator and value."""
    if not isinstance(a, MAPPINGS):
        return False
    return all(_text(a, f) == b.get(f, "") for f in ("key", "effect", "operator", "value"))


def daemonset_pod_tolerations(tolerations: object, host_network: bool) -> list[object]:
    """A DaemonSet pod template's tolerations as its pods will carry them.

    Each default replaces a toleration equal on key, effect, operator and value (dropping its
    ``tolerationSeconds``, as ``AddOrUpdateTolerationInPodSpec`` does) or is appended.
    """
    result = list(_toleration_list(tolerations))
    for default in daemonset_default_tolerations(host_network):
        index = next((i for i, t in enumerate(result) if _same_toleration(t, default)), None)
        if index is None:
            result.append(default)
        else:
            result[index] = default
    return result


# --- validation ---------------------------------------------------------------------------------


def _wrong_type(path: Path, expected: str, value: object) -> Problem:
    return Problem(path, f"must be {expected}, not {json_type_name(value)}")


def _effect_problem(path: Path, effect: str) -> Problem | None:
    if effect in TAINT_EFFECTS:
        return None
    hint = next(
        (f"; did you mean {quoted(e)}?" for e in TAINT_EFFECTS if e.lower() == effect.lower()), ""
    )
    return Problem(
        path,
        f"unsupported effect {quoted(effect)}: must be one of {', '.join(TAINT_EFFECTS)}{hint}",
    )


def _string_fields(
    item: Mapping[str, object], index: int, names: tuple[str, ...], problems: list[Problem]
) -> dict[str, str] | None:
    """Read string fields, reporting wrong types; None if any field had the wrong type."""
    values: dict[str, str] = {}
    ok = True
    for name in names:
        value = _text(item, name)
        if value is None:
            hint = "; quote it in YAML" if name == "value" else ""
            problems.append(
                Problem(
                    (index, name), f"must be a string, not {json_type_name(item.get(name))}{hint}"
                )
            )
            ok = False
        else:
            values[name] = value
    return values if ok else None


def validate_tolerations(tolerations: object) -> list[Problem]:
    """API-server problems in a pod's ``tolerations``; paths relative to the list.

    An empty key needs ``Exists``; ``Exists`` takes no value; ``Equal`` takes a valid label
    value; the key must be a valid label key; the effect, when set, must be one of NoSchedule,
    PreferNoSchedule, NoExecute; ``tolerationSeconds`` needs ``NoExecute``.
    """
    if tolerations is None:
        return []
    if not isinstance(tolerations, list):
        return [_wrong_type((), "a list of tolerations", tolerations)]
    problems: list[Problem] = []
    for i, item in enumerate(tolerations):
        if not isinstance(item, MAPPINGS):
            problems.append(
                _wrong_type((i,), "an object with key, operator, value and effect", item)
            )
            continue
        fields = _string_fields(item, i, ("key", "operator", "value", "effect"), problems)
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            problems.append(_wrong_type((i, "tolerationSeconds"), "an integer", seconds))
        if fields is None:
            continue
        key, operator, value, effect = (fields[n] for n in ("key", "operator", "value", "effect"))
        if key:
            errors = label_key_errors(key)
            if errors:
                problems.append(
                    Problem((i, "key"), f"invalid key {quoted(key)}: {'; '.join(errors)}")
                )
        elif operator != "Exists":
            problems.append(
                Problem(
                    (i, "operator"),
                    "must be Exists when key is empty (an empty key with Exists tolerates every "
                    "taint)",
                )
            )
        if seconds is not None and effect != NO_EXECUTE:
            problems.append(
                Problem((i, "effect"), "must be NoExecute when tolerationSeconds is set")
            )
        if operator in ("", "Equal"):
            errors = label_value_errors(value)
            if errors:
                problems.append(
                    Problem((i, "value"), f"invalid value {quoted(value)}: {'; '.join(errors)}")
                )
        elif operator == "Exists":
            if value:
                problems.append(Problem((i, "value"), "must be empty when operator is Exists"))
        else:
            gate = (
                " (Gt and Lt need the alpha feature gate TaintTolerationComparisonOperators)"
                if operator in ("Gt", "Lt")
                else ""
            )
            problems.append(
                Problem(
                    (i, "operator"),
                    f"unsupported operator {quoted(operator)}: must be Equal or Exists{gate}",
                )
            )
        if effect:
            problem = _effect_problem((i, "effect"), effect)
            if problem is not None:
                problems.append(problem)
    return problems


def validate_taints(taints: object) -> list[Problem]:
    """API-server problems in a node's ``spec.taints``; paths relative to the list.

    Each taint needs a valid key and one of the three effects, a valid label value, and must
    be unique by key and effect.
    """
    if taints is None:
        return []
    if not isinstance(taints, list):
        return [_wrong_type((), "a list of taints", taints)]
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(taints):
        if not isinstance(item, MAPPINGS):
            problems.append(_wrong_type((i,), "an object with key, value and effect", item))
            continue
        fields = _string_fields(item, i, ("key", "value", "effect"), problems)
        if fields is None:
            continue
        key, value, effect = fields["key"], fields["value"], fields["effect"]
        if not key:
            problems.append(Problem((i, "key"), "required"))
        else:
            errors = label_key_errors(key)
            if errors:
                problems.append(
                    Problem((i, "key"), f"invalid key {quoted(key)}: {'; '.join(errors)}")
                )
        errors = label_value_errors(value)
        if errors:
            problems.append(
                Problem((i, "value"), f"invalid value {quoted(value)}: {'; '.join(errors)}")
            )
        if not effect:
            problems.append(
                Problem((i, "effect"), f"required: must be one of {', '.join(TAINT_EFFECTS)}")
            )
        else:
            problem = _effect_problem((i, "effect"), effect)
            if problem is not None:
                problems.append(problem)
        if (key, effect) in seen:
            problems.append(
                Problem(
                    (i,), f"duplicate taint {key}:{effect}: taints must be unique by key and effect"
                )
            )
        seen.add((key, effect))
    return problems
