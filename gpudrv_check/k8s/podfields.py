"""Pod-spec fields the API server checks one by one: node, priority and runtime class names,
the preemption policy, host-network ports, the overhead, an init container's image and a
container's restartPolicy.

Upstream, read and reproduced (not copied), k8s.io/kubernetes ``pkg/apis/core/validation/
validation.go`` as of 1.31-1.34 (the API server validates a pod template, in a Deployment or a
Job, as it does a Pod):

- ``ValidatePodSpec``: ``nodeName`` when not empty, ``ValidateNodeName``; ``priorityClassName``
  when not empty, ``ValidatePriorityClassName``; ``runtimeClassName`` when set (even ``""``),
  ``ValidateRuntimeClassName`` -- all three ``apimachineryvalidation.NameIsDNSSubdomain`` (not a
  prefix), i.e. ``IsDNS1123Subdomain`` (k8s.io/apimachinery ``validate/content/dns.go``: at most
  253 bytes; the subdomain regex, ``RegexError`` wording); ``preemptionPolicy`` when set,
  ``ValidatePreemptionPolicy`` (``PreemptLowerPriority`` or ``Never``; ``""`` is "Required
  value"); ``overhead`` when set, ``validateOverhead``: ``ValidateContainerResourceRequirements``
  of ``ResourceRequirements{Limits: overhead}``, so its errors say ``overhead.limits[<name>]``
  (k8s/resources.py ``validate_resources``);
- ``validatePodHostNetworkDeps``: with ``hostNetwork: true``, each port of ``spec.containers``
  (not init containers) must have ``hostPort`` equal to ``containerPort``; a pod template may
  leave ``hostPort`` 0 (unset), and a Pod's 0 is defaulted to ``containerPort`` first
  (pkg/apis/core/v1 ``SetDefaults_Pod`` ``defaultHostNetworkPorts``): either way only a
  non-zero ``hostPort`` other than ``containerPort`` is rejected, at ``hostPort``;
- ``validateContainerCommon`` (via ``validateInitContainers``): an init container's ``image`` is
  required (``len(ctr.Image) == 0``); ``validateInitContainerRestartPolicy``: only ``Always``
  (SidecarContainers, GA in 1.33, on by default since 1.29); ``validateContainers``: a regular
  container's ``restartPolicy`` "may not be set for non-init containers".

Deliberately narrower than upstream, where the release decides: the ``ContainerRestartRules``
feature gate (alpha in 1.34, beta and on by default in 1.35) lets a regular container and an
ordinary init container set ``restartPolicy`` to ``Always``, ``OnFailure`` or ``Never``. Those
three values are accepted by some supported release, so they are never reported; only a value
no release accepts (``always``, ``Sometimes``, ``""``) is, in the 1.31-1.34 wording.

Also reproduced: the RuntimeClass admission plugin (plugin/pkg/admission/runtimeclass
``Validate`` / ``validateOverhead``, on by default): a pod with ``overhead`` set and no
``runtimeClassName`` is refused ("pod rejected: Pod Overhead set without corresponding
RuntimeClass defined Overhead"). That is a check of each pod as it is created, not of a
template: a Deployment is accepted and its pods are refused. Only a non-empty ``overhead``
mapping is reported (a controller's pods drop an empty one: ``omitempty``); with a
``runtimeClassName`` the verdict depends on that RuntimeClass in the cluster, so nothing is said.

Values that are not known are never reported: a string holding a Helm (``{{``) or Flux / envsubst
(``${``) placeholder, and a value of the wrong JSON type (the decoder refuses it before
validation; not this module's to word). Inputs are JSON-like data; nothing here raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import field_path_text
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.k8s.labels import MAPPINGS, Path
from gpudrv_check.k8s.resources import validate_resources

__all__ = [
    "FieldProblem",
    "dns1123_subdomain_messages",
    "pod_field_problems",
    "validate_pod_fields",
]

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_SUBDOMAIN_RE = lazy_compile(_SUBDOMAIN_FMT)
SUBDOMAIN_MAX_LENGTH = 253
# content/dns.go dns1123SubdomainErrorMsg through content/errors.go RegexError (one example)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_SUBDOMAIN_FMT}')"
)
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
#: core.ContainerRestartPolicy values; with ContainerRestartRules (1.35 default) all three are
#: accepted on regular and ordinary init containers, so only other values are certain errors
CONTAINER_RESTART_POLICIES = frozenset(("Always", "OnFailure", "Never"))
_INT32_MAX = 2**31 - 1


class FieldProblem(NamedTuple):
    """One rejected field: its key (relative to the pod spec), upstream's error with the field
    path relative to the pod spec (``nodeName: Invalid value: …``), the fix, and whether only
    the pods are refused (admission), not the object itself."""

    path: Path
    message: str
    fix: str
    pods_only: bool = False


def _quote(text: str) -> str:
    return json.dumps(text)  # Go's %q for the ASCII values these checks quote


def _unknown(value: str) -> bool:
    """A value a renderer fills in later (Helm's `{{ }}`, Flux post-build / envsubst `${}`)."""
    return "{{" in value or "${" in value


@lru_cache(maxsize=4096)  # a repo writes the same few node and class names many times
def dns1123_subdomain_messages(value: str) -> tuple[str, ...]:
    """``IsDNS1123Subdomain``: every error, in upstream's order and words; () when valid."""
    out = []
    if len(value.encode("utf-8", "surrogatepass")) > SUBDOMAIN_MAX_LENGTH:  # Go's len: bytes
        out.append(f"must be no more than {SUBDOMAIN_MAX_LENGTH} characters")
    if not _SUBDOMAIN_RE.fullmatch(value):
        out.append(_SUBDOMAIN_MSG)
    return tuple(out)


_NODE_NAME_FIX = (
    "Write the node's name as the cluster registers it (`kubectl get nodes`): lower-case "
    "letters, digits, '-' and '.', at most 253 characters; or remove nodeName and let the "
    "scheduler place the pod."
)
_PRIORITY_FIX = (
    "Name an existing PriorityClass (`kubectl get priorityclasses`): lower-case letters, "
    "digits, '-' and '.', at most 253 characters."
)
_RUNTIME_FIX = (
    "Name an existing RuntimeClass (`kubectl get runtimeclasses`, e.g. `nvidia`): lower-case "
    "letters, digits, '-' and '.', at most 253 characters."
)
_RUNTIME_EMPTY_FIX = (
    "Remove runtimeClassName (an empty name is no RuntimeClass; without one the pod uses the "
    "node's default runtime), or name a RuntimeClass such as `nvidia`."
)
_PREEMPTION_FIX = (
    "Write `preemptionPolicy: PreemptLowerPriority` (the default) or `preemptionPolicy: Never`, "
    "or remove the field (the PriorityClass's policy then applies)."
)
_INIT_IMAGE_FIX = "Give the init container an image: the API server requires one per container."
_INIT_RESTART_FIX = (
    "Write `restartPolicy: Always` to run this init container as a sidecar, or remove "
    "restartPolicy to run it to completion before the app containers."
)
_RESTART_FIX = (
    "Remove restartPolicy from the container: the pod's spec.restartPolicy decides restarts "
    "(for a sidecar, move the container to initContainers with `restartPolicy: Always`)."
)
_OVERHEAD_ADMISSION_FIX = (
    "Remove overhead: the RuntimeClass admission plugin fills it in from the pod's "
    "RuntimeClass. To account for a runtime's overhead, set runtimeClassName to a RuntimeClass "
    "whose overhead.podFixed holds these amounts."
)
#: an overhead error's fix by upstream's words (the first match)
_OVERHEAD_FIXES = (
    ("must be greater than or equal to 0", "Write each overhead amount as 0 or more."),
    (
        "quantities must match the regular expression",
        "Write a Kubernetes quantity: a number with an optional suffix (`250m`, `120Mi`).",
    ),
    ("must be an integer", "Write a whole number for an extended resource's overhead."),
    ("HugePages require cpu or memory", "Add a cpu or memory amount beside the huge pages."),
    ("not positive integer multiple", "Write huge pages in whole pages of their size."),
)
_OVERHEAD_NAME_FIX = (
    "Name a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>) or an "
    "extended one with its domain."
)


def _overhead_fix(message: str) -> str:
    for words, fix in _OVERHEAD_FIXES:
        if words in message:
            return fix
    return _OVERHEAD_NAME_FIX


def _name_problem(key: str, value: Any, fix: str) -> list[FieldProblem]:
    if not isinstance(value, str) or _unknown(value):
        return []
    messages = dns1123_subdomain_messages(value)
    if not messages:
        return []
    message = f"{key}: Invalid value: {_quote(value)}: {'; '.join(messages)}"
    return [FieldProblem((key,), message, fix)]


def _whole(value: Any) -> int | None:
    """An int32 as the decoder takes it (a bool or a float is not one)."""
    if isinstance(value, int) and not isinstance(value, bool) and -_INT32_MAX - 1 <= value:
        return value if value <= _INT32_MAX else None
    return None


def _host_network(spec: Mapping[str, Any]) -> list[FieldProblem]:
    """validatePodHostNetworkDeps (a non-zero hostPort must equal containerPort)."""
    if spec.get("hostNetwork") is not True:
        return []
    containers = spec.get("containers")
    out: list[FieldProblem] = []
    for i, container in enumerate(containers if isinstance(containers, list) else ()):
        ports = container.get("ports") if isinstance(container, MAPPINGS) else None
        for j, port in enumerate(ports if isinstance(ports, list) else ()):
            if not isinstance(port, MAPPINGS):
                continue
            host = _whole(port.get("hostPort", 0))
            written = port.get("containerPort", 0)
            target = _whole(written) if written is not None else 0
            if host is None or target is None or host == 0 or host == target:
                continue
            fix = (
                f"With hostNetwork the container listens on the node's own port: set hostPort "
                f"to the containerPort ({target}), or remove hostPort."
            )
            path: Path = ("containers", i, "ports", j, "hostPort")
            why = "must match `containerPort` when `hostNetwork` is true"
            message = f"{field_path_text(path)}: Invalid value: {host}: {why}"
            out.append(FieldProblem(path, message, fix))
    return out


def _overhead(spec: Mapping[str, Any]) -> list[FieldProblem]:
    """validateOverhead; then the RuntimeClass admission plugin's rule for a pod without a
    runtimeClassName."""
    overhead = spec.get("overhead")
    if not isinstance(overhead, MAPPINGS):
        return []  # null: not set; another type: the decoder's, not validation's
    out = []
    for problem in validate_resources({"limits": overhead}):
        # ("limits", name) → the key under overhead; () → overhead itself
        path: Path = ("overhead", *problem.path[1:])
        joiner = "." if problem.path else ": "
        message = f"overhead{joiner}{problem.message}"
        out.append(FieldProblem(path, message, _overhead_fix(problem.message)))
    if overhead and spec.get("runtimeClassName") is None:
        out.append(
            FieldProblem(
                ("overhead",),
                "overhead: pod rejected: Pod Overhead set without corresponding RuntimeClass "
                "defined Overhead",
                _OVERHEAD_ADMISSION_FIX,
                pods_only=True,
            )
        )
    return out


def _containers(spec: Mapping[str, Any]) -> list[FieldProblem]:
    """validateInitContainers / validateContainerCommon (an init container's image) and the
    container restartPolicy checks (see the module docstring for what is left out)."""
    out: list[FieldProblem] = []
    for field in ("containers", "initContainers"):
        items = spec.get(field)
        for i, container in enumerate(items if isinstance(items, list) else ()):
            if not isinstance(container, MAPPINGS):
                continue
            init = field == "initContainers"
            image = container.get("image")
            where = field_path_text((field, i))
            if init and (image is None or image == ""):
                message = f"{where}.image: Required value"
                at: Path = (field, i, "image") if "image" in container else (field, i)
                out.append(FieldProblem(at, message, _INIT_IMAGE_FIX))
            policy = container.get("restartPolicy")
            if not isinstance(policy, str) or _unknown(policy):
                continue
            if policy in CONTAINER_RESTART_POLICIES:
                continue
            if init:
                message = (
                    f"{where}.restartPolicy: Unsupported value: {_quote(policy)}: "
                    'supported values: "Always"'
                )
                out.append(FieldProblem((field, i, "restartPolicy"), message, _INIT_RESTART_FIX))
            else:
                message = (
                    f"{where}.restartPolicy: Forbidden: may not be set for non-init containers"
                )
                out.append(FieldProblem((field, i, "restartPolicy"), message, _RESTART_FIX))
    return out


def validate_pod_fields(spec: object) -> tuple[FieldProblem, ...]:
    """Every problem of the fields above, in ValidatePodSpec's order; paths and the field paths
    that start the messages are relative to the pod spec."""
    if not isinstance(spec, MAPPINGS):
        return ()
    out = _containers(spec)
    out += _host_network(spec)
    out += _name_problem("nodeName", spec.get("nodeName") or None, _NODE_NAME_FIX)
    out += _name_problem("priorityClassName", spec.get("priorityClassName") or None, _PRIORITY_FIX)
    runtime = spec.get("runtimeClassName")
    out += _name_problem(
        "runtimeClassName", runtime, _RUNTIME_EMPTY_FIX if runtime == "" else _RUNTIME_FIX
    )
    policy = spec.get("preemptionPolicy")
    if isinstance(policy, str) and not _unknown(policy) and policy not in PREEMPTION_POLICIES:
        if policy == "":
            message = "preemptionPolicy: Required value"
        else:
            supported = ", ".join(_quote(p) for p in PREEMPTION_POLICIES)
            message = (
                f"preemptionPolicy: Unsupported value: {_quote(policy)}: "
                f"supported values: {supported}"
            )
        out.append(FieldProblem(("preemptionPolicy",), message, _PREEMPTION_FIX))
    out += _overhead(spec)
    return tuple(out)


#: the fields `validate_pod_fields` reads, by name (the pod spec's own keys)
_READ = ("nodeName", "priorityClassName", "runtimeClassName", "preemptionPolicy", "overhead")
#: container fields it reads (ports only with hostNetwork)
_CONTAINER_READ = ("image", "restartPolicy")

#: a spec holding none of these keys, and no container restartPolicy, has nothing to check
_KEYS = frozenset((*_READ, "hostNetwork", "initContainers"))

_PROBLEMS: TextMemo[tuple[FieldProblem, ...]] = TextMemo()


def _read(spec: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What `validate_pod_fields` reads of a spec; None when it reads nothing that could be
    wrong (the usual pod spec: no such key, no init container, no host network)."""
    mains = spec.get("containers")
    if _KEYS.isdisjoint(spec) and not any(
        isinstance(c, MAPPINGS) and "restartPolicy" in c
        for c in (mains if isinstance(mains, list) else ())
    ):
        return None  # checked once per workload: the usual spec costs a set test
    fields = tuple(spec.get(k, _ABSENT) for k in _READ)
    host = spec.get("hostNetwork") is True
    inits = spec.get("initContainers")
    return (
        tuple(None if f is _ABSENT else ("set", f) for f in fields),
        _container_fields(inits, _CONTAINER_READ),
        _container_fields(mains, ("restartPolicy", "ports") if host else ("restartPolicy",)),
        host,
    )


_ABSENT = object()


def _container_fields(items: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(items, list):
        return None
    # whether each key is written too: a finding sits at the key when there is one
    return tuple(
        tuple((k in c, c.get(k)) for k in keys) if isinstance(c, MAPPINGS) else repr(c)
        for c in items
    )


def pod_field_problems(spec: object) -> tuple[FieldProblem, ...]:
    """`validate_pod_fields`, remembered by the text of what it reads (core/memo.py)."""
    if not isinstance(spec, MAPPINGS):
        return ()
    read = _read(spec)
    if read is None:
        return ()
    return _PROBLEMS.by_text(repr(read), validate_pod_fields, spec)
