"""Container resources as the API server validates them and the scheduler sums them.

Reproduces (not copies):

- pkg/apis/core/helper ``IsNativeResource`` (no ``/``, or the ``kubernetes.io/`` domain),
  ``IsHugePageResourceName``, ``IsExtendedResourceName`` (not native, not ``requests.``, and
  ``requests.<name>`` a qualified name), ``IsOvercommitAllowed`` (native and not hugepages),
  ``IsIntegerResourceName`` (extended resources and ``pods``);
- pkg/apis/core/validation ``validateContainerResourceName`` ("must be a standard resource for
  containers", "doesn't follow extended resource name standard"), ``ValidateResourceQuantityValue``
  ("must be greater than or equal to 0", "must be an integer") and ``validateResourceRequirements``
  (a non-overcommitable resource: requests "must be equal to <name> limit of <limit>", a request
  without a limit "Limit must be set for non overcommitable resources"; others: "must be less than
  or equal to <name> limit of <limit>");
- pkg/apis/core/v1 ``SetDefaults_Pod``: a container's requests default to its limits, key by key;
- k8s.io/component-helpers/resource ``PodRequests`` / ``AggregateContainerRequests``: containers
  add up; a restartable (sidecar, ``restartPolicy: Always``) init container adds to them and to
  every later init container's peak; an ordinary init container is a peak of its own plus the
  sidecars before it; the pod asks for the larger of the two, plus ``spec.overhead``; pod-level
  ``spec.resources.requests`` (cpu, memory, hugepages) override the containers' sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.k8s.labels import Problem, json_type_name, label_key_errors
from gpudrv_check.k8s.quantity import FORMAT_WRONG, quantity_value

__all__ = [
    "CPU",
    "MEMORY",
    "EPHEMERAL_STORAGE",
    "PODS",
    "is_native",
    "is_hugepages",
    "is_extended",
    "overcommit_allowed",
    "is_integer_resource",
    "resource_name_problems",
    "validate_resources",
    "container_requests",
    "pod_requests",
]

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
_NATIVE_DOMAIN = "kubernetes.io/"
_HUGEPAGES = "hugepages-"
_STANDARD_CONTAINER = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE))
_POD_LEVEL = frozenset((CPU, MEMORY))
_REQUESTS_PREFIX = "requests."
NOT_INTEGER = "must be an integer"
NEGATIVE = "must be greater than or equal to 0"
LIMIT_REQUIRED = "Limit must be set for non overcommitable resources"

Resources = dict[str, Fraction]


def is_native(name: str) -> bool:
    return "/" not in name or _NATIVE_DOMAIN in name


def is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES)


def is_extended(name: str) -> bool:
    if is_native(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return not label_key_errors(_REQUESTS_PREFIX + name)


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def is_integer_resource(name: str) -> bool:
    return name == PODS or is_extended(name)


def resource_name_problems(name: object) -> list[str]:
    """``validateContainerResourceName``: why ``name`` is not a container resource name."""
    if not isinstance(name, str):
        return [f"resource name must be a string, not {json_type_name(name)}"]
    errors = label_key_errors(name)
    if errors:
        return errors
    if "/" not in name:
        if name not in _STANDARD_CONTAINER and not is_hugepages(name):
            return ["must be a standard resource for containers"]
    elif not is_native(name) and not is_extended(name):
        return ["doesn't follow extended resource name standard"]
    return []


def _invalid(where: str, value: object, why: str) -> str:
    return f"{where}: Invalid value: {_shown(value)}: {why}"


def _shown(value: object) -> str:
    """A value as the API server quotes it (``"500m"``), bounded."""
    text = quoted(value if isinstance(value, str) else str(value))
    return '"' + text[1:-1] + '"' if text[:1] in "'\"" and text[-1:] in "'\"" else text


def _amounts(
    section: object, name: str, problems: list[Problem]
) -> dict[str, tuple[Fraction, object]]:
    """One of ``limits``/``requests``: resource → (value, as written); problems at the keys.

    Messages start with the field path relative to ``resources`` as upstream prints it
    (``limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer``).
    """
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        problems.append(
            Problem((name,), f"{name}: must be a map of quantities, not {json_type_name(section)}")
        )
        return {}
    out: dict[str, tuple[Fraction, object]] = {}
    for key, raw in section.items():
        text = key if isinstance(key, str) else str(key)
        path, where = (name, text), f"{name}[{text}]"
        for error in resource_name_problems(key):
            problems.append(Problem(path, _invalid(where, key, error)))
        amount, why = quantity_value(raw)
        if amount is None:
            problems.append(Problem(path, _invalid(where, raw, why or FORMAT_WRONG)))
            continue
        if amount < 0:
            problems.append(Problem(path, _invalid(where, raw, NEGATIVE)))
        elif is_integer_resource(text) and amount * 1000 % 1000:
            problems.append(Problem(path, _invalid(where, raw, NOT_INTEGER)))
        out[text] = (amount, raw)
    return out


def validate_resources(resources: object) -> list[Problem]:
    """A container's ``resources`` as ``validateResourceRequirements`` checks it.

    Paths are relative to ``resources`` and point at the offending key (for a missing limit, the
    request's key, although upstream names ``limits``); messages start with upstream's field path.
    """
    if resources is None:
        return []
    if not isinstance(resources, Mapping):
        return [Problem((), f"must be an object, not {json_type_name(resources)}")]
    problems: list[Problem] = []
    limits = _amounts(resources.get("limits"), "limits", problems)
    requests = _amounts(resources.get("requests"), "requests", problems)
    for key, (amount, raw) in requests.items():
        path = ("requests", key)
        limit = limits.get(key)
        if limit is None:
            if not overcommit_allowed(key):
                problems.append(Problem(path, f"limits: Required value: {LIMIT_REQUIRED}"))
            continue
        if amount != limit[0] and not overcommit_allowed(key):
            why = f"must be equal to {key} limit of {_shown(limit[1])[1:-1]}"
        elif amount > limit[0]:
            why = f"must be less than or equal to {key} limit of {_shown(limit[1])[1:-1]}"
        else:
            continue
        problems.append(Problem(path, _invalid("requests", raw, why)))
    return problems


def _quantities(section: object) -> Resources:
    out: Resources = {}
    if isinstance(section, Mapping):
        for key, raw in section.items():
            amount, _ = quantity_value(raw)
            if isinstance(key, str) and amount is not None and amount >= 0:
                out[key] = amount
    return out


def container_requests(container: object) -> Resources:
    """What the scheduler counts for one container: requests, defaulted from limits."""
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping):
        return {}
    return {**_quantities(resources.get("limits")), **_quantities(resources.get("requests"))}


def _add(into: Resources, more: Mapping[str, Fraction]) -> None:
    for key, amount in more.items():
        into[key] = into.get(key, Fraction(0)) + amount


def _max(into: Resources, other: Mapping[str, Fraction]) -> None:
    for key, amount in other.items():
        if amount > into.get(key, Fraction(0)):
            into[key] = amount


def _containers(pod_spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    items = pod_spec.get(field)
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, list) else []


def pod_requests(pod_spec: object, overhead: Mapping[str, Fraction] | None = None) -> Resources:
    """``PodRequests(pod)``: the resources the scheduler requires a node to have free."""
    if not isinstance(pod_spec, Mapping):
        return {}
    total: Resources = {}
    for container in _containers(pod_spec, "containers"):
        _add(total, container_requests(container))
    sidecars: Resources = {}
    peak: Resources = {}
    for container in _containers(pod_spec, "initContainers"):
        wanted = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, wanted)
            _add(sidecars, wanted)
            _max(peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, wanted)
            _max(peak, running)
    _max(total, peak)
    pod_level = pod_spec.get("resources")
    if isinstance(pod_level, Mapping):
        for key, amount in _quantities(pod_level.get("requests")).items():
            if key in _POD_LEVEL or is_hugepages(key):
                total[key] = amount
    _add(total, overhead or {})
    return {k: v for k, v in total.items() if v}
