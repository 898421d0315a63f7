"""Documents stripped to what one rule declares it reads (rules/plan.py), for tests.

`stripped(manifest, rule)` keeps `apiVersion`, `kind`, `metadata` and the declared paths of
the manifest's kind, positions included, so findings still point where they did; a kind the
rule does not declare keeps only those three. A rule reading `*` (any kind) sees it whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpudrv_check.core.located import LMap, LSeq
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.rules.plan import ALWAYS_READ, ANY, declarations, field_paths

Paths = list[tuple[str, ...]]
WHOLE: Paths = [()]


def rule_paths(rule: str, kind: str) -> Paths:
    """The key paths `rule` reads in an object of `kind` ([()]: all of it)."""
    paths: Paths = [(key,) for key in sorted(ALWAYS_READ)]
    for d in declarations():
        if d.owner != rule:
            continue
        if kind in d.kinds:
            paths.extend(field_paths(kind, d.fields or []))
        elif ANY in d.kinds and ANY in d.fields:
            return WHOLE
    return WHOLE if () in paths or (ANY,) in paths else paths


def strip(node: Any, paths: Paths) -> Any:
    """`node` with only what the paths reach (a path ending here keeps the whole subtree)."""
    if any(len(p) == 0 for p in paths):
        return node
    if isinstance(node, LMap):
        out = LMap(node.pos)
        for key, value in node.items():
            below = [p[1:] for p in paths if p[0] in (ANY, key)]
            if below:
                out[key] = strip(value, below)
                if key in node.kpos:
                    out.kpos[key] = node.kpos[key]
                if node.raw is not None and key in node.raw:
                    out.raw = {**(out.raw or {}), key: node.raw[key]}
        return out
    if isinstance(node, LSeq):
        below = [p[1:] for p in paths if p[0] == ANY]
        if not below:
            return LSeq(node.pos)
        seq = LSeq(node.pos)
        seq.extend(strip(item, below) for item in node)
        seq.ipos = list(node.ipos)
        seq.raw = node.raw
        return seq
    if isinstance(node, dict):
        return {
            k: strip(v, [p[1:] for p in paths if p[0] in (ANY, k)])
            for k, v in node.items()
            if any(p[0] in (ANY, k) for p in paths)
        }
    if isinstance(node, list):
        below = [p[1:] for p in paths if p[0] == ANY]
        return [strip(item, below) for item in node] if below else []
    return node  # a scalar at a path that goes deeper: nothing below it to keep


def stripped(manifest: Manifest, rule: str) -> Manifest:
    paths = rule_paths(rule, manifest.kind)
    if paths == WHOLE:
        return manifest
    return replace(manifest, data=strip(manifest.data, paths))
