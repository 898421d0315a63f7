"""Exemptions: findings a team has decided to live with, suppressed and counted.

- In the object: the annotation `gpudrv-check.io/ignore: "GPU021,GPU011 # reason"` (ids or
  names, comma or space separated; an optional reason after `#`) on `metadata.annotations`
  (for a NodeInventory entry, its `annotations`).
- In the config, for objects you cannot annotate (third-party charts): `exemptions:` entries
  by rule, kind, namespace, name and file (globs).

Suppressed findings are kept on the run with `suppressed_by` set, so every report can count
them and SARIF can carry them as suppressed results.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from gpudrv_check.core.finding import Finding, ObjectRef, quoted
from gpudrv_check.core.located import scalar_text
from gpudrv_check.core.records import record
from gpudrv_check.k8s.scope import effective_namespace
from gpudrv_check.model.repo import Repo
from gpudrv_check.read.config import Config
from gpudrv_check.read.policy import RulePolicy, find_rule

IGNORE_ANNOTATION = "gpudrv-check.io/ignore"
ALL_RULES = "*"
#: prefixes of `Finding.suppressed_by`, one per mechanism
BY_ANNOTATION = "annotation"
BY_CONFIG = "config"
BY_BASELINE = "baseline"

ObjectKey = tuple[str, str, str]


def object_key(ref: ObjectRef) -> ObjectKey:
    return (ref.kind, effective_namespace(ref.kind, ref.namespace) or "", ref.name or "")


@record(frozen=True)
class Ignore:
    rules: frozenset[str]  # rule ids
    reason: str | None


def parse_ignore(value: str, rules: Mapping[str, RulePolicy]) -> Ignore:
    """`"GPU021, gpu-node-zone # vendor chart"` → the ids and the reason. Unknown names are
    dropped: they suppress nothing, so the finding they meant to hide stays visible."""
    listed, _, reason = value.partition("#")
    ids = set()
    for token in re.split(r"[,\s]+", listed.strip()):
        policy = find_rule(token, rules) if token else None
        if policy is not None:
            ids.add(policy.id)
    return Ignore(frozenset(ids), reason.strip() or None)


def annotation_ignores(repo: Repo, rules: Mapping[str, RulePolicy]) -> dict[ObjectKey, Ignore]:
    """Every object's ignore annotation, by object identity (repeats are merged)."""
    found: dict[ObjectKey, Ignore] = {}

    def add(ref: ObjectRef, value: str | None) -> None:
        if not value:
            return
        ignore = parse_ignore(value, rules)
        key = object_key(ref)
        if key in found:
            old = found[key]
            ignore = Ignore(old.rules | ignore.rules, old.reason or ignore.reason)
        found[key] = ignore

    for manifest in repo.manifests:
        annotations = manifest.annotations
        if IGNORE_ANNOTATION in annotations:
            add(manifest.ref, scalar_text(annotations, IGNORE_ANNOTATION))
    for node in repo.nodes:
        if node.entry_path is not None:  # inventory entries carry their own annotations
            add(node.ref, node.annotations.get(IGNORE_ANNOTATION))
    return found


def validate_exemptions(config: Config, rules: Mapping[str, RulePolicy]) -> None:
    """Every rule an exemption names exists (ConfigError at its line otherwise)."""
    for index, exemption in enumerate(config.exemptions):
        for position, key in enumerate(exemption.rule):
            if key != ALL_RULES and find_rule(key, rules) is None:
                raise config.error(
                    f"exemptions: unknown rule {quoted(key)} (see `gpudrv-check rules`)",
                    "exemptions",
                    index,
                    "rule",
                    *((position,) if isinstance(_raw_rule(config, index), list) else ()),
                )


def _raw_rule(config: Config, index: int) -> object:
    data = config._data
    try:
        return data["exemptions"][index]["rule"]
    except (KeyError, IndexError, TypeError):
        return None


def _glob(pattern: str | None, value: str | None) -> bool:
    if pattern is None:
        return True
    return value is not None and fnmatch.fnmatchcase(value, pattern)


def _exemption_ids(config: Config, rules: Mapping[str, RulePolicy]) -> list[set[str]]:
    """Per config exemption, the rule ids it names (`*` kept as is)."""
    out = []
    for ex in config.exemptions:
        ids = set()
        for key in ex.rule:
            policy = None if key == ALL_RULES else find_rule(key, rules)
            ids.add(policy.id if policy is not None else key)
        out.append(ids)
    return out


def _config_exemption(finding: Finding, config: Config, ids_per: list[set[str]]) -> str:
    """`suppressed_by` text of the first config exemption covering `finding`, or ''."""
    ref = finding.object
    for index, (ex, ids) in enumerate(zip(config.exemptions, ids_per, strict=True)):
        if ALL_RULES not in ids and finding.rule not in ids:
            continue
        if not _glob(ex.file, finding.location.file):
            continue
        if ex.kind is not None or ex.namespace is not None or ex.name is not None:
            if ref is None:
                continue
            namespace = effective_namespace(ref.kind, ref.namespace)
            if not (
                _glob(ex.kind, ref.kind)
                and _glob(ex.namespace, namespace)
                and _glob(ex.name, ref.name)
            ):
                continue
        reason = f": {ex.reason}" if ex.reason else ""
        return f"{BY_CONFIG} exemptions[{index}]{reason}"
    return ""


def apply_exemptions(
    findings: list[Finding], repo: Repo, rules: Mapping[str, RulePolicy]
) -> tuple[list[Finding], list[Finding]]:
    """Split findings into (reported, suppressed); annotations first, then the config."""
    ignores = annotation_ignores(repo, rules)
    ids_per = _exemption_ids(repo.config, rules)
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for finding in findings:
        by = ""
        if finding.object is not None:
            ignore = ignores.get(object_key(finding.object))
            if ignore is not None and finding.rule in ignore.rules:
                by = f"{BY_ANNOTATION} {IGNORE_ANNOTATION}" + (
                    f": {ignore.reason}" if ignore.reason else ""
                )
        if not by:
            by = _config_exemption(finding, repo.config, ids_per)
        if by:
            suppressed.append(finding.copy_with(suppressed_by=by))
        else:
            kept.append(finding)
    return kept, suppressed
