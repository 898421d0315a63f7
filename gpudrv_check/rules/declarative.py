"""Custom declarative policies: match objects, validate each with the policy's JSON Schema.

A failing assertion is reported at the deepest key the validation error points to: the key
whose value is wrong, or for a missing key the mapping that should hold it. Nodes read from a
NodeInventory are validated as `kind: Node` objects (`metadata.labels`, `spec.taints`, ...) and
located back in the inventory entry.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from gpudrv_check.core.finding import Finding, Location, ObjectRef, Severity, quoted
from gpudrv_check.core.located import Path, scalar_text
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labelselector import selector_matches
from gpudrv_check.k8s.scope import effective_namespace
from gpudrv_check.model.node import Node
from gpudrv_check.model.workload import Workload
from gpudrv_check.read.custom_policy import TARGET_POD_SPEC, CustomPolicy
from gpudrv_check.rules.context import Context

_MAX_DETAIL = 160


@record
class Subject:
    """One matched object: the data the schema sees and how to map its paths back."""

    ref: ObjectRef
    data: Any
    manifest: Manifest
    node: Node | None = None
    prefix: Path = ()  # where `data` sits inside the object (the pod spec path)

    def object_path(self, path: Path) -> Path:
        return (*self.prefix, *path)

    def location(self, path: Path) -> Location:
        full = self.object_path(path)
        if self.node is not None:
            full = self.node.source_path(full)
        return self.manifest.location(full)


def _validator(policy: CustomPolicy) -> Any:
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.validators import validator_for
    from referencing import Registry

    schema = policy.schema_
    cls = validator_for(schema, default=Draft202012Validator)
    # an empty registry: local references only, nothing is ever fetched
    return cls(schema, format_checker=FormatChecker(), registry=Registry())


def _labels(manifest: Manifest) -> dict[str, str]:
    raw = manifest.labels
    out = {}
    for key in raw:
        text = scalar_text(raw, key)
        if isinstance(key, str) and text is not None:
            out[key] = text
    return out


def _requested(workload: Workload) -> set[str]:
    """Resource names a container of the pod template requests or limits, non-zero."""
    names: set[str] = set()
    for container in workload.containers:
        resources = workload.manifest.get(*container.path, "resources")
        if not isinstance(resources, dict):
            continue
        for section in ("limits", "requests"):
            amounts = resources.get(section)
            if not isinstance(amounts, dict):
                continue
            for name in amounts:
                text = scalar_text(amounts, name)
                if isinstance(name, str) and text not in (None, "0", ""):
                    names.add(name)
    return names


def _globs(value: str | None, patterns: tuple[str, ...]) -> bool:
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _selected(policy: CustomPolicy, kind: str, namespace: str | None, labels: dict) -> bool:
    match = policy.match
    if match.kinds and kind not in match.kinds:
        return False
    if match.namespaces and not _globs(effective_namespace(kind, namespace), match.namespaces):
        return False
    if match.label_selector is not None and not selector_matches(match.label_selector, labels):
        return False
    return True


def subjects(policy: CustomPolicy, ctx: Context) -> Iterator[Subject]:
    """The objects `policy` applies to, in file order."""
    repo = ctx.repo
    match = policy.match
    if match.requests or policy.target == TARGET_POD_SPEC:
        for workload in repo.workloads:
            m = workload.manifest
            if not _selected(policy, m.kind, m.namespace, _labels(m)):
                continue
            if match.requests and not any(
                _globs(name, match.requests) for name in sorted(_requested(workload))
            ):
                continue
            if policy.target == TARGET_POD_SPEC:
                data = workload.pod_spec if isinstance(workload.pod_spec, dict) else {}
                yield Subject(m.ref, data, m, prefix=workload.spec_path)
            else:
                yield Subject(m.ref, m.data, m)
        return
    nodes_by_manifest: dict[int, list[Node]] = {}
    for node in repo.nodes:
        nodes_by_manifest.setdefault(id(node.manifest), []).append(node)
    for m in repo.manifests:
        nodes = nodes_by_manifest.get(id(m), [])
        if m.kind == "Node" or (nodes and not (match.kinds and m.kind in match.kinds)):
            # a node is seen as a `kind: Node` object, wherever it was written
            for node in nodes:
                if _selected(policy, "Node", None, node.labels):
                    yield Subject(node.ref, node.object_data(), m, node=node)
            continue
        if _selected(policy, m.kind, m.namespace, _labels(m)):
            yield Subject(m.ref, m.data, m)


def _error_path(error: Any) -> Path:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in error.instance if k not in allowed)
        if extra:
            path = (*path, extra[0])
    return path


def describe(error: Any) -> str:
    """A short, readable account of a validation error (jsonschema's can quote whole objects)."""
    validator = error.validator
    if validator == "contains":
        return "no item has the required shape"
    if validator == "not":
        return "has a shape the policy forbids"
    if validator in ("anyOf", "oneOf"):
        return "matches none of the allowed shapes"
    if validator == "additionalProperties":
        return f"unexpected key {quoted(_error_path(error)[-1])}"
    if validator == "required":
        missing = [k for k in error.validator_value if k not in (error.instance or {})]
        if missing:
            return f"missing key {quoted(missing[0])}"
    message = error.message
    if len(message) > _MAX_DETAIL:
        message = message[: _MAX_DETAIL - 1] + "…"
    return message


class _Fields(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def check_policy(ctx: Context, policy: CustomPolicy) -> Iterator[Finding]:
    from jsonschema.exceptions import best_match

    validator = _validator(policy)
    for subject in subjects(policy, ctx):
        errors = []
        for error in validator.iter_errors(subject.data):
            leaf = best_match([error]) if error.context else error
            errors.append(leaf)
        errors.sort(key=lambda e: (tuple(map(str, _error_path(e))), e.message))
        for error in errors:
            path = _error_path(error)
            detail = describe(error)
            where = ".".join(str(p) for p in subject.object_path(path))
            fields = _Fields(
                kind=subject.ref.kind,
                name=subject.ref.name or "?",
                namespace=subject.ref.namespace or "",
                path=where,
                error=detail,
            )
            message = policy.message.format_map(fields)
            if "{error}" not in policy.message:
                message = f"{message} ({where + ': ' if where else ''}{detail})"
            yield Finding(
                rule=policy.id,
                severity=policy.severity,
                message=message,
                hint=policy.fix
                or f"Make {subject.ref} satisfy policy {policy.id} ({policy.file}:{policy.line}).",
                location=subject.location(path),
                object=subject.ref,
                path=list(subject.object_path(path)),
            )


#: what one custom policy may take over the whole repo; its patterns passed the static check
#: (core/regex_guard.py), this bounds what that check cannot see (`\d*\d*\d*x` is n**3)
POLICY_BUDGET_SECONDS = 20.0


def check_within_budget(ctx: Context, policy: CustomPolicy) -> list[Finding]:
    """`check_policy`, stopped with a policy error once it has run POLICY_BUDGET_SECONDS."""
    from gpudrv_check.core.signals import BudgetExceeded, time_budget

    try:
        with time_budget(POLICY_BUDGET_SECONDS):
            return list(check_policy(ctx, policy))
    except BudgetExceeded:
        return [_over_budget(policy)]


def _over_budget(policy: CustomPolicy) -> Finding:
    """The policy error for a policy that did not finish (a pattern too slow on the repo)."""
    return Finding(
        rule=policy.id,
        severity=Severity.ERROR,
        message=f"custom policy {policy.id} did not finish within {POLICY_BUDGET_SECONDS:g} s "
        "and was stopped: its findings are incomplete (a `pattern` that is slow on this "
        "repo's strings, e.g. several adjacent `\\d*`)",
        hint=f"Simplify the patterns of {policy.file}:{policy.line} (anchor them, make "
        "adjacent repetitions match different characters).",
        location=Location(file=policy.file, line=policy.line, column=1),
    )
