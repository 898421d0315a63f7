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

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.located import Path
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.k8s.labels import MAPPINGS, Problem, json_type_name, label_key_errors
from gpudrv_check.k8s.quantity import (
    FORMAT_WRONG,
    canonical,
    go_float_text,
    milli_value,
    parse_quantity,
    value,
)

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
#: pkg/apis/core/helper ``standardResources`` (the names a resource quota may also use)
_STANDARD = frozenset(
    (CPU, MEMORY, EPHEMERAL_STORAGE, PODS, "services", "replicationcontrollers", "resourcequotas")
    + ("secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage")
    + ("services.nodeports", "services.loadbalancers")
    + tuple(f"{p}.{r}" for p in ("requests", "limits") for r in (CPU, MEMORY, EPHEMERAL_STORAGE))
)
_QUOTA_HUGEPAGES = ("hugepages-", "requests.hugepages-")
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


#: k8s/labels.py shortens apimachinery ``RegexError`` texts; the API server prints them whole
_WORDING = (
    (
        "(e.g. 'MyName', 'my.name' or '123-abc')",
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    (
        "(e.g. 'example.com')",
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    (", with an optional DNS subdomain prefix", " with an optional DNS subdomain prefix"),
)


def _upstream_wording(message: str) -> str:
    for short, whole in _WORDING:
        message = message.replace(short, whole)
    return message


def resource_name_problems(name: object) -> list[str]:
    """``validateContainerResourceName``: why ``name`` is not a container resource name.

    ``validateResourceName`` first (a qualified name; an unprefixed name must be a standard
    resource: "must be a standard resource type or fully qualified"), then the container's own
    check, whose error is added to the first's.
    """
    if not isinstance(name, str):
        return [f"resource name must be a string, not {json_type_name(name)}"]
    errors = [_upstream_wording(e) for e in label_key_errors(name)]
    if "/" not in name:
        if not errors and name not in _STANDARD and not name.startswith(_QUOTA_HUGEPAGES):
            errors.append("must be a standard resource type or fully qualified")
        if name not in _STANDARD_CONTAINER and not is_hugepages(name):
            errors.append("must be a standard resource for containers")
    elif not is_native(name) and not is_extended(name):
        errors.append("doesn't follow extended resource name standard")
    return errors


def _invalid(where: str, shown: str, why: str) -> str:
    return f"{where}: Invalid value: {shown}: {why}"


def _server_text(value: object) -> str | None:
    """The text the API server parses for a quantity as written (``UnmarshalJSON``)."""
    if value is None:
        return "0"  # JSON null: the zero quantity
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float_text(value) if math.isfinite(value) else None
    return value.strip() if isinstance(value, str) else None


def milli_up(amount: Fraction) -> Fraction:
    """``SetDefaults_ResourceList``: every amount rounded up (away from zero) to thousandths."""
    return Fraction(milli_value(amount), 1000)


def defaulted_quantity(raw: object) -> tuple[Fraction | None, str | None]:
    """``quantity_value(raw)`` as ``SetDefaults_ResourceList`` leaves it (``milli_up``)."""
    text = _server_text(raw)
    if text is None:
        return None, FORMAT_WRONG
    return _defaulted_text(str(text))


@lru_cache(maxsize=4096)  # a repo writes the same few amounts thousands of times
def _defaulted_text(text: str) -> tuple[Fraction | None, str | None]:
    amount, why = parse_quantity(text)
    return (None, why) if amount is None else (milli_up(amount), None)


def _shown(value: object) -> str:
    """A value as the API server quotes it: a quantity's ``String()`` after defaulting rounded
    it to thousandths (``0.5`` → ``"500m"``, ``1n`` → ``"1m"``)."""
    text = _server_text(value)
    form = canonical(text, -3) if text is not None else None
    if form is None:
        form = value if isinstance(value, str) else str(value)
    text = quoted(form)
    return '"' + text[1:-1] + '"' if text[:1] in "'\"" and text[-1:] in "'\"" else text


def _hugepage_divisible(name: str, amount: Fraction) -> bool:
    """pkg/apis/core/helper ``IsHugePageResourceValueDivisible``."""
    size, _ = parse_quantity(name[len(_HUGEPAGES) :])
    if size is None or size <= 0 or milli_value(size) % 1000:
        return False
    return _go_rem(value(amount), value(size)) == 0


def _go_rem(a: int, b: int) -> int:
    return abs(a) % abs(b) * (1 if a >= 0 else -1)


Amounts = dict[str, tuple[Fraction, object, Path]]


def _amount_problems(where: str, key: str, amount: Fraction, raw: object) -> list[str]:
    """``ValidateResourceQuantityValue`` and ``validateResourceQuantityHugePageValue``."""
    out: list[str] = []
    if amount < 0:
        out.append(_invalid(where, _shown(raw), NEGATIVE))
    if is_integer_resource(key) and milli_value(amount) % 1000:
        out.append(_invalid(where, _shown(raw), NOT_INTEGER))
    if is_hugepages(key) and not _hugepage_divisible(key, amount):
        shown = _shown(raw)
        why = f"{shown[1:-1]} is not positive integer multiple of {key}"
        out.append(_invalid(where, shown, why))
    return out


def _amounts(section: object, name: str, problems: list[Problem]) -> Amounts:
    """One of ``limits``/``requests``: resource → (value, as written, key path); problems at
    the keys. Messages start with the field path relative to ``resources`` as upstream prints
    it (``limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer``)."""
    if section is None:
        return {}
    if not isinstance(section, MAPPINGS):
        problems.append(
            Problem((name,), f"{name}: must be a map of quantities, not {json_type_name(section)}")
        )
        return {}
    out: Amounts = {}
    for key, raw in section.items():
        text = key if isinstance(key, str) else str(key)
        path: Path = (name, text)
        amount, why = defaulted_quantity(raw)
        if amount is None:
            problems.append(Problem(path, _invalid(f"{name}[{text}]", _shown(raw), why or "")))
            continue
        out[text] = (amount, raw, path)
    return out


def _checked(section: str, amounts: Amounts, problems: list[Problem]) -> None:
    for key, (amount, raw, path) in amounts.items():
        where = f"{section}[{key}]"
        for error in resource_name_problems(key):
            problems.append(Problem(path, _invalid(where, _shown(key), error)))
        for message in _amount_problems(where, key, amount, raw):
            problems.append(Problem(path, message))


def _versus_limit(key: str, request: tuple[Fraction, object, Path], limits: Amounts) -> str | None:
    """A request against its limit: equal where overcommit is not allowed, else not above."""
    amount, raw, _ = request
    limit = limits.get(key)
    if limit is None:
        return None if overcommit_allowed(key) else f"limits: Required value: {LIMIT_REQUIRED}"
    if amount != limit[0] and not overcommit_allowed(key):
        why = f"must be equal to {key} limit of {_shown(limit[1])[1:-1]}"
    elif amount > limit[0]:
        why = f"must be less than or equal to {key} limit of {_shown(limit[1])[1:-1]}"
    else:
        return None
    return _invalid("requests", _shown(raw), why)


def validate_resources(resources: object) -> list[Problem]:
    """A container's ``resources`` as the API server checks it: ``SetDefaults_Pod`` first (a
    missing request takes its limit; amounts rounded up to thousandths), then
    ``validateResourceRequirements``. Deliberate: a request defaulted from a bad limit is not
    reported again (upstream repeats the limit's error under ``requests[<name>]``; here it would
    be a second finding at the same key, saying the same).

    Paths are relative to ``resources`` and point at the offending key (for a missing limit, the
    request's key, although upstream names ``limits``); messages start with upstream's field path.
    """
    if resources is None:
        return []
    if not isinstance(resources, MAPPINGS):
        return [Problem((), f"must be an object, not {json_type_name(resources)}")]
    problems: list[Problem] = []
    limits = _amounts(resources.get("limits"), "limits", problems)
    written = _amounts(resources.get("requests"), "requests", problems)
    _checked("limits", limits, problems)
    _checked("requests", written, problems)
    requests = {**limits, **written}
    for key, request in requests.items():
        message = _versus_limit(key, request, limits)
        if message is not None:
            problems.append(Problem(request[2], message))
    keys = set(limits) | set(requests)
    if any(is_hugepages(k) for k in keys) and not keys & _POD_LEVEL:
        problems.append(Problem((), "Forbidden: HugePages require cpu or memory"))
    return problems


def _quantities(section: object) -> Resources:
    out: Resources = {}
    if isinstance(section, MAPPINGS):
        for key, raw in section.items():
            amount, _ = defaulted_quantity(raw)
            if isinstance(key, str) and amount is not None and amount >= 0:
                out[key] = amount
    return out


def container_requests(container: object) -> Resources:
    """What the scheduler counts for one container: requests, defaulted from limits (a new
    dict: the caller may change it)."""
    resources = container.get("resources") if isinstance(container, MAPPINGS) else None
    if not isinstance(resources, MAPPINGS):
        return {}
    # a pure function of the value (core/memo.py): the same resources, parsed once
    return dict(_REQUESTS.get(resources, _requests, resources))


def _requests(resources: Mapping[str, Any]) -> Resources:
    return {**_quantities(resources.get("limits")), **_quantities(resources.get("requests"))}


_REQUESTS: TextMemo[Resources] = TextMemo()


def _add(into: Resources, more: Mapping[str, Fraction]) -> None:
    for key, amount in more.items():
        into[key] = into[key] + amount if key in into else amount


def _max(into: Resources, other: Mapping[str, Fraction]) -> None:
    for key, amount in other.items():
        if amount > into.get(key, 0):
            into[key] = amount


def _containers(pod_spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    items = pod_spec.get(field)
    return [c for c in items if isinstance(c, MAPPINGS)] if isinstance(items, list) else []


def _pod_level_requests(pod_level: object, containers: Mapping[str, Fraction]) -> Resources:
    """Pod-level ``resources.requests`` (cpu, memory, hugepages) that replace the containers'
    sum, as ``SetDefaults_Pod`` (``defaultPodRequests``) leaves them: a pod-level limit without
    a request gives the request, unless the containers request that cpu or memory (then the
    request is their sum, which changes nothing)."""
    if not isinstance(pod_level, MAPPINGS):
        return {}
    written = _quantities(pod_level.get("requests"))
    requests = {k: v for k, v in written.items() if pod_level_resource(k)}
    for key, limit in _quantities(pod_level.get("limits")).items():
        if pod_level_resource(key) and key not in requests:
            if key in _POD_LEVEL and key in containers:
                continue
            requests[key] = limit
    return requests


def pod_level_resource(name: str) -> bool:
    """component-helpers ``IsSupportedPodLevelResource``."""
    return name in _POD_LEVEL or is_hugepages(name)


def pod_requests(pod_spec: object, overhead: Mapping[str, Fraction] | None = None) -> Resources:
    """``PodRequests(pod)``: the resources the scheduler requires a node to have free."""
    if not isinstance(pod_spec, MAPPINGS):
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
    total.update(_pod_level_requests(pod_spec.get("resources"), total))
    _add(total, overhead or {})
    return {k: v for k, v in total.items() if v}
