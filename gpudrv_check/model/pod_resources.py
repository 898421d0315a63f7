"""What a pod template asks of a node, and the resource and selector fields the API server
rejects, each reported at its key (GPU040).

- Requests: k8s/resources.py ``pod_requests`` (component-helpers ``PodRequests``: containers
  summed, sidecar init containers added, ordinary init containers as a peak; requests default to
  limits). A RuntimeClass ``overhead.podFixed`` is added by the placement (model/placement.py),
  which knows the repo's RuntimeClasses.
- Resources: pkg/apis/core/validation ``validateResourceRequirements`` per container, on the
  container as ``SetDefaults_Pod`` leaves it (names, quantities, integers for extended resources,
  hugepage sizes, requests equal to limits where overcommit is not allowed, a limit for every
  such request); k8s/resources.py ``validate_resources``.
- Controller selectors: pkg/apis/apps/validation ``ValidateDeploymentSpec``,
  ``ValidateReplicaSetSpec``, ``ValidateStatefulSetSpec``, ``ValidateDaemonSetSpec`` and core
  ``ValidateReplicationControllerSpec``: a selector must not be empty and must match the
  template's labels ("`selector` does not match template `labels`"). A ReplicationController
  defaults an empty selector to the template's labels (``SetDefaults_ReplicationController``).
  A missing ``spec.selector`` (required by apps/v1) is not reported: manifests written as
  snippets often leave it out, and what their pods would do is still worth checking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.located import Path, field_path_text
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.k8s.labels import MAPPINGS
from gpudrv_check.k8s.labelselector import checked_selector_key
from gpudrv_check.k8s.numbers import INT64_MAX, TOO_LARGE, too_large
from gpudrv_check.k8s.resources import validate_resources
from gpudrv_check.read.policy import builtin

__all__ = ["resource_findings", "selector_findings", "field_path_text", "invalid_field"]

_RESOURCES_HINT = (
    "Extended resources such as nvidia.com/gpu are whole numbers and cannot be overcommitted: "
    "write the same count under limits (and requests, if you write them), e.g. "
    "`limits: {nvidia.com/gpu: 1}`."
)
_HUGEPAGES_HINT = (
    "Huge pages come in whole pages: write a multiple of the page size (hugepages-2Mi: 2Mi, 4Mi, "
    "...), the same under limits and requests, and request cpu or memory in the same container."
)
_SELECTOR_HINT = (
    "Make spec.selector match the labels of spec.template.metadata (every matchLabels pair "
    "present there, every matchExpressions requirement true of them): the API server rejects "
    "the object, so none of its pods is ever created."
)
#: kinds whose spec.selector is a label selector the template's labels must match
_SELECTOR_KINDS = {
    "Deployment": "deployment",
    "ReplicaSet": "deployment",  # upstream's ValidateReplicaSetSpec says "deployment" too
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
}


def invalid_field(manifest: Manifest, path: Path, message: str, hint: str) -> Finding:
    """A GPU040 finding at `path` of the manifest."""
    return Finding(
        rule=builtin("invalid-field").id,
        severity=builtin("invalid-field").severity,
        message=message,
        hint=hint,
        location=manifest.location(path),
        object=manifest.ref,
        path=list(path),
    )


def _oversized(resources: object) -> list[tuple[Path, str]]:
    """Amounts past int64 (a 5,000-digit count): said as such, not as a parse error."""
    out: list[tuple[Path, str]] = []
    if not isinstance(resources, MAPPINGS):
        return out
    for section in ("limits", "requests"):
        amounts = resources.get(section)
        for key, raw in amounts.items() if isinstance(amounts, MAPPINGS) else ():
            big = (isinstance(raw, int) and not isinstance(raw, bool) and raw > INT64_MAX) or (
                isinstance(raw, float) and raw == float("inf")
            )
            if big or (isinstance(raw, str) and too_large(raw)):
                out.append(((section, str(key)), f"{section}[{key}]: {TOO_LARGE}"))
    return out


def _problems(resources: object) -> tuple[tuple[Path, str], ...]:
    """A container's `resources` problems (path relative to it, message): oversized amounts
    first, then what validate_resources says of the other keys."""
    oversized = _oversized(resources)
    skip = {path for path, _ in oversized}
    problems = [(p.path, p.message) for p in validate_resources(resources)]
    return tuple(oversized + [p for p in problems if p[0] not in skip])


#: the problems of the `resources` read so far, by their text (core/memo.py: the checks read
#: values alone, never a position or a raw text)
_RESOURCE_PROBLEMS: TextMemo[tuple[tuple[Path, str], ...]] = TextMemo()


def resource_findings(manifest: Manifest, containers: list[tuple[Path, object]]) -> list[Finding]:
    """GPU040 per container resource field the API server rejects, at its key (``containers``:
    each container's path in the manifest and its ``resources`` as written)."""
    findings = []
    for cpath, resources in containers:
        if resources is None:
            continue
        base: Path = (*cpath, "resources")
        for path, message in _RESOURCE_PROBLEMS.get(resources, _problems, resources):
            joiner = "." if path else ": "
            findings.append(
                invalid_field(
                    manifest,
                    (*base, *path),
                    f"{field_path_text(base)}{joiner}{message}",
                    _hint(path, message),
                )
            )
    return findings


#: the fix of a resources error by what ValidateResourceRequirements says (the first match);
#: the extended-resource fix is for what is left (fractions, request != limit, overcommit)
_RESOURCE_FIXES = (
    ("must be greater than or equal to 0", "Write a quantity of 0 or more."),
    (
        "must be less than or equal to",
        "Request no more than the limit (a container may use up to its limit, and is "
        "scheduled by its request).",
    ),
    (
        "quantities must match the regular expression",
        "Write a Kubernetes quantity: a number with an optional suffix (`500m`, `2`, `4Gi`, "
        "`1e3`).",
    ),
    (
        "must be a standard resource",
        "Name a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>) or an "
        "extended one with its domain (e.g. nvidia.com/gpu).",
    ),
    (
        "fully qualified",
        "Name a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>) or an "
        "extended one with its domain (e.g. nvidia.com/gpu).",
    ),
)


def _hint(path: Path, message: str) -> str:
    hugepages = bool(path) and str(path[-1]).startswith("hugepages-")
    if hugepages or "HugePages" in message:
        return _HUGEPAGES_HINT
    for words, fix in _RESOURCE_FIXES:
        if words in message:
            return fix
    return _RESOURCES_HINT


def _template_labels(manifest: Manifest) -> dict[str, str]:
    labels = manifest.get("spec", "template", "metadata", "labels")
    if not isinstance(labels, MAPPINGS):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _labels_text(labels: Mapping[str, str]) -> str:
    """The labels as the API server prints them (Go's `%#v` of a map[string]string)."""
    if not labels:
        return "map[string]string(nil)"
    inner = ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(labels.items()))
    return "map[string]string{" + inner + "}"


def selector_findings(manifest: Manifest) -> list[Finding]:
    """GPU040 when a controller's selector is missing, empty or misses its template's labels."""
    kind = manifest.kind
    if kind == "ReplicationController":
        return _rc_selector_findings(manifest)
    noun = _SELECTOR_KINDS.get(kind)
    if noun is None or manifest.get("spec", "template") is None:
        return []
    selector = manifest.get("spec", "selector")
    if selector is None:
        # apps/v1 requires it ("spec.selector: Required value"); a snippet that leaves it out
        # is still checked for what its pods would do (the old API versions default it)
        return []
    key, problems = checked_selector_key(selector)
    if problems:
        return []  # a malformed selector is not this check's to report
    empty = isinstance(selector, MAPPINGS) and not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    )
    if empty:
        message = f"spec.selector: Invalid value: {{}}: empty selector is invalid for {noun}"
        return [invalid_field(manifest, ("spec", "selector"), message, _SELECTOR_HINT)]
    labels = _template_labels(manifest)
    if key.matches_clean(labels):
        return []
    return [_mismatch(manifest, labels)]


def _mismatch(manifest: Manifest, labels: Mapping[str, str]) -> Finding:
    where: Path = ("spec", "template", "metadata", "labels")
    path = where if manifest.get(*where) is not None else ("spec", "selector")
    message = (
        f"spec.template.metadata.labels: Invalid value: {_labels_text(labels)}: `selector` does "
        "not match template `labels`"
    )
    return invalid_field(manifest, path, message, _SELECTOR_HINT)


def _rc_selector_findings(manifest: Manifest) -> list[Finding]:
    selector = manifest.get("spec", "selector")
    if not isinstance(selector, MAPPINGS) or not selector:
        return []  # defaulted to the template's labels
    labels = _template_labels(manifest)
    if all(isinstance(v, str) and labels.get(k) == v for k, v in selector.items()):
        return []
    return [_mismatch(manifest, labels)]
