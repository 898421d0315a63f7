"""Kustomize patch files: partial objects that only make sense applied to their base.

A file named by a `kustomization.yaml` in `patches`, `patchesStrategicMerge` or
`patchesJson6902` is a patch (a strategic-merge fragment or a JSON 6902 operation list), not an
object: checking it alone would report fields it never meant to set. Such a file is reported
once as not checkable (GPU009) and contributes no object. Paths resolve against the
kustomization's directory and never leave the repo root; inline patches and remote bases are
not files and are ignored.

A kustomization's `namespace:` is the namespace of what it builds: kustomize's namespace
transformer adds or replaces `metadata.namespace` on every object its resources, bases and
components yield, cluster-scoped kinds left alone (kustomize api/filters/namespace, with the
field specs of api/konfig/builtinpluginconsts/namespace.go: `create: true` on every kind but
the cluster-wide ones). An overlay builds its bases first and transforms their output, so the
outermost kustomization that sets one wins. A Component's `namespace:` acts on what its
parent accumulated before it (kusttarget.go AccumulateTarget runs the components after the
resources), the last component's winning, and only where neither the parent nor an outer
kustomization sets one (the parent's own transformers run after its components):
`kubectl kustomize` (v1.32, kustomize v5.5) puts a parent's resources in its component's
namespace, and in the parent's when both set one. `applied_namespaces` works that out per
file from the kustomizations no other one builds on (the roots), so the same `job.yaml` under
`team-a` and `team-b` is two objects, and a base two overlays put in two namespaces is one
object per namespace (each located at the base file).
"""

from __future__ import annotations

import posixpath
from typing import Any

from gpudrv_check.core.located import LMap, LSeq, Pos
from gpudrv_check.core.records import record
from gpudrv_check.k8s.scope import is_cluster_scoped

#: what the source of a Kustomize root rendered by `--kustomize` is named after its
#: kustomization file (read/kustomize.py `rendered_name`): here, where the model finds it
#: without importing the renderer
RENDERED_SUFFIX = " (rendered)"
# kustomize api/konfig/general.go RecognizedKustomizationFileNames
KUSTOMIZATION_FILES = frozenset(("kustomization.yaml", "kustomization.yml", "Kustomization"))
PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")
#: what a kustomization builds on: files, or folders holding another kustomization
BUILD_FIELDS = ("resources", "bases", "components")
#: (kustomization folder, namespace over it) pairs one walk visits at most (a hostile repo)
MAX_NAMESPACE_VISITS = 20_000


@record(frozen=True, slots=True)
class PatchRef:
    """Where a patch file is named: the kustomization, the field and the entry's position."""

    kustomization: str
    field: str
    line: int
    column: int


def is_kustomization(rel: str) -> bool:
    return posixpath.basename(rel) in KUSTOMIZATION_FILES


def resolve(kustomization: str, path: str) -> str | None:
    """The repo-relative path a kustomization entry names, or None when it is not a local file."""
    path = path.strip()
    if not path or "\n" in path or ": " in path or path.startswith(("{", "[", "-")):
        return None  # an inline patch, not a file name
    if "://" in path or path.startswith(("/", "git@", "github.com/")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(kustomization), path))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


def _entry_path(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry  # patchesStrategicMerge (and very old `patches`) list plain paths
    if isinstance(entry, dict):
        path = entry.get("path")
        return path if isinstance(path, str) else None
    return None


def patch_refs(kustomization: str, data: Any) -> dict[str, PatchRef]:
    """Patch files named by one parsed kustomization document, by repo-relative path."""
    out: dict[str, PatchRef] = {}
    if not isinstance(data, LMap):
        return out
    for field in PATCH_FIELDS:
        entries = data.get(field)
        if not isinstance(entries, LSeq):
            continue
        for index, entry in enumerate(entries):
            path = _entry_path(entry)
            target = resolve(kustomization, path) if path is not None else None
            if target is None or target in out:
                continue
            pos: Pos = entries.item_pos(index)
            if isinstance(entry, LMap) and "path" in entry:
                pos = entry.key_pos("path")
            out[target] = PatchRef(kustomization, field, pos[0], pos[1])
    return out


def _preference(rel: str) -> tuple[str, int]:
    """kustomization.yaml before .yml before Kustomization, as kustomize looks for them."""
    names = sorted(KUSTOMIZATION_FILES, key=lambda n: (n[0].isupper(), n.endswith("yml")))
    return (posixpath.dirname(rel), names.index(posixpath.basename(rel)))


def in_namespaces(
    kind: str, written: str | None, namespaces: tuple[str | None, ...]
) -> list[str | None]:
    """The namespaces an object of `kind` written in `written` is applied in (a cluster-scoped
    object keeps what it says: the transformer skips it)."""
    if is_cluster_scoped(kind):
        return [written]
    return list(dict.fromkeys(written if ns is None else ns for ns in namespaces))


def _namespace_of(data: Any) -> str | None:
    value = data.get("namespace") if isinstance(data, LMap) else None
    return value if isinstance(value, str) and value else None


def _built_on(kustomization: str, data: Any, fields: tuple[str, ...] = BUILD_FIELDS) -> list[str]:
    """The repo paths a kustomization's resources, bases and components name, in order."""
    out: list[str] = []
    for field in fields:
        entries = data.get(field) if isinstance(data, LMap) else None
        for entry in entries if isinstance(entries, LSeq) else ():
            target = resolve(kustomization, entry) if isinstance(entry, str) else None
            if target is not None:
                out.append(target)
    return out


def applied_namespaces(
    kustomizations: dict[str, Any], listed: set[str]
) -> dict[str, tuple[str | None, ...]]:
    """Per listed file that some kustomization builds into a namespace, the namespaces its
    objects are applied in (None: as written, for a root that sets none over it), from the
    parsed kustomization documents by file. Files no kustomization lists are left out."""
    by_dir: dict[str, str] = {}
    for rel in sorted(kustomizations, key=_preference):
        by_dir.setdefault(posixpath.dirname(rel), rel)
    built: dict[str, list[str]] = {
        d: _built_on(rel, kustomizations[rel]) for d, rel in by_dir.items()
    }
    components: dict[str, set[str]] = {
        d: {c for c in _built_on(rel, kustomizations[rel], ("components",)) if c in by_dir}
        for d, rel in by_dir.items()
    }

    def component_namespace(directory: str, depth: int = 0) -> str | None:
        """The namespace a component gives what its parent accumulated: its own, else the
        last of its own components' (they transform the same accumulation before it)."""
        own = _namespace_of(kustomizations[by_dir[directory]])
        if own is not None or depth > 20:
            return own
        found = None
        for inner in built[directory]:
            if inner in components[directory]:
                found = component_namespace(inner, depth + 1) or found
        return found

    referenced = {t for targets in built.values() for t in targets if t in by_dir}
    found: dict[str, set[str | None]] = {}
    seen: set[tuple[str, str | None]] = set()
    pending: list[tuple[str, str | None]] = [
        (d, None) for d in sorted(by_dir) if d not in referenced
    ]
    while pending and len(seen) < MAX_NAMESPACE_VISITS:
        directory, outer = pending.pop()
        if (directory, outer) in seen:
            continue
        seen.add((directory, outer))
        namespace = outer or _namespace_of(kustomizations[by_dir[directory]])
        targets = built[directory]
        # what the components listed after each entry make of it: a component's transformers
        # act on what its parent accumulated before it, the last one's namespace winning
        later: list[str | None] = [None] * len(targets)
        after: str | None = None
        for i in range(len(targets) - 1, -1, -1):
            later[i] = after
            if after is None and targets[i] in components[directory]:
                after = component_namespace(targets[i])
        for target, from_components in zip(targets, later, strict=True):
            applied = namespace or from_components
            if target in by_dir:
                pending.append((target, applied))
            elif target in listed:
                found.setdefault(target, set()).add(applied)
    return {
        rel: tuple(sorted(namespaces, key=lambda n: (n is not None, n or "")))
        for rel, namespaces in found.items()
        if namespaces != {None}
    }
