"""`${VAR}` placeholders (Flux post-build substitution, envsubst): unknown values, not literals.

Flux's kustomize-controller substitutes `${var}` (and `${var:=default}`, drone/envsubst syntax)
in what a Flux `Kustomization` applies, with the variables of its `spec.postBuild`:
`substituteFrom` ConfigMaps and Secrets of the Kustomization's namespace, then `substitute`
on top; only when there is at least one variable, and not in an object labelled or annotated
`kustomize.toolkit.fluxcd.io/substitute: disabled` (fluxcd/pkg kustomize/kustomize_varsub.go,
SubstituteVariables and loadVars). The substitution is textual, before the YAML is decoded, so
`replicas: ${REPLICAS}` becomes a number.

Here a file under a Flux Kustomization's `spec.path` gets that Kustomization's variables (those
of `substitute`, and of `substituteFrom` ConfigMaps found in the repo); a placeholder with a
default and no variable takes the default. Every other placeholder is unknown: the object
keeps the placeholder text, and no finding is built on an object with an unknown value (a
`nodeSelector: {gpu: ${GPU}}` matches no node only as written, not as applied). The report
says once which values were unknown (`Unknowns.note`).
"""

from __future__ import annotations

import copy
import posixpath
import re
from dataclasses import field
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.located import LMap, LSeq, containers
from gpudrv_check.core.records import record
from gpudrv_check.read.policy import builtin
from gpudrv_check.read.yaml_docs import resolve_plain

if TYPE_CHECKING:
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.core.manifest import Manifest

# `$${VAR}` is an escaped `${VAR}` (drone/envsubst), not a placeholder
PLACEHOLDER = re.compile(r"(?<!\$)\$\{([_A-Za-z][_A-Za-z0-9]*)(?:(:?[=-])([^}]*))?\}")
FLUX_GROUP = "kustomize.toolkit.fluxcd.io/"
DISABLED = "kustomize.toolkit.fluxcd.io/substitute"
#: findings of these rules concern how a file is written, not the values: always kept
KEPT_RULES = frozenset(("unreadable-file", "duplicate-key", "not-checkable"))
#: values visited per object at most (bounded on hostile input)
MAX_VISITED = 50_000
#: variable names listed in the note; the rest are counted
MAX_NAMES_SAID = 8
#: kustomizations one Flux Kustomization may build on, at most (a cycle or a hostile repo)
MAX_KUSTOMIZATIONS = 200


@record
class Scope:
    """The files a Flux Kustomization applies and its variables: with a kustomization file in
    its path, the files that kustomization and those it builds on list; without one, every
    file under the path (Flux generates a kustomization of them)."""

    prefix: str  # "" (the whole repo) or "a/b/"
    variables: dict[str, str]
    files: set[str] | None = None  # None: every file under the prefix

    def covers(self, rel: str) -> bool:
        return rel in self.files if self.files is not None else rel.startswith(self.prefix)


def _kustomize_files(source: Any, directory: str) -> set[str] | None:
    """The files the kustomization in `directory` (and every one it builds on) lists, and
    its rendered stream under `--kustomize` (`<dir>/kustomization.yaml (rendered)`, where the
    objects are read from then); None when the directory has no kustomization file."""
    from gpudrv_check.read.kustomize import (
        find_kustomization_file,
        parse_kustomization,
        rendered_name,
    )

    own = find_kustomization_file(source, directory) if source is not None else None
    if own is None:
        return None
    files: set[str] = set()
    if rendered_name(own) in getattr(source, "rendered", {}):
        files.add(rendered_name(own))
    seen: set[str] = set()
    pending = [directory]
    while pending and len(seen) < MAX_KUSTOMIZATIONS:
        folder = pending.pop()
        file = find_kustomization_file(source, folder) if folder not in seen else None
        if file is None:
            continue
        seen.add(folder)
        k = parse_kustomization(source, file)
        files.update(k.files)
        pending.extend(k.dirs)
    return files


@record
class Unknowns:
    """What the run could not know: per object, its unknown placeholders."""

    by_object: dict[tuple[str, str, str | None], set[str]] = field(default_factory=dict)
    dropped: int = 0
    # what was dropped, so runs of several clusters count a finding they share once
    dropped_keys: set[tuple] = field(default_factory=set)

    @property
    def names(self) -> list[str]:
        return sorted({n for names in self.by_object.values() for n in names})

    def note(self) -> str | None:
        names = self.names
        if not names:
            return None
        shown = ", ".join("${" + n + "}" for n in names[:MAX_NAMES_SAID])
        if len(names) > MAX_NAMES_SAID:
            shown += f" and {len(names) - MAX_NAMES_SAID} more"
        return (
            f"placeholders {shown} (Flux postBuild or envsubst) are unknown values: "
            f"{self.dropped} finding(s) built on the {len(self.by_object)} object(s) holding "
            "them not reported; a Flux Kustomization's postBuild.substitute gives them values"
        )

    def filter(self, findings: list[Finding]) -> list[Finding]:
        """`findings` without those about an object with an unknown value."""
        if not self.by_object:
            return findings
        out = []
        kept = {builtin(name).id for name in KEPT_RULES}
        for f in findings:
            ref = f.object
            if (
                f.rule not in kept
                and ref is not None
                and (f.location.file, ref.kind, ref.name) in self.by_object
            ):
                self.dropped += 1
                self.dropped_keys.add((f.rule, f.location, f.message))
                continue
            out.append(f)
        return out


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, LMap):
        return {}
    return {k: str(v).replace("\n", "") for k, v in value.items() if isinstance(v, (str, int))}


def flux_scopes(manifests: list[Manifest], source: Any = None) -> list[Scope]:
    """The Flux Kustomizations of the repo with post-build variables, deepest path first
    (`source` reads the kustomization files their paths hold)."""
    config_maps = {(m.namespace, m.name): m for m in manifests if m.kind == "ConfigMap"}
    scopes = []
    for m in manifests:
        if m.kind != "Kustomization" or not m.api_version.startswith(FLUX_GROUP):
            continue
        post = m.get("spec", "postBuild")
        path = m.get("spec", "path")
        if not isinstance(post, LMap) or not isinstance(path, str):
            continue
        variables: dict[str, str] = {}
        refs = post.get("substituteFrom")
        for ref in refs if isinstance(refs, LSeq) else ():
            name = ref.get("name") if isinstance(ref, LMap) else None
            if isinstance(name, str) and ref.get("kind") == "ConfigMap":
                found = config_maps.get((m.namespace or "flux-system", name))
                if found is not None:
                    variables.update(_string_map(found.get("data")))
        variables.update(_string_map(post.get("substitute")))
        folder = posixpath.normpath(path.lstrip("/"))
        if folder == ".." or folder.startswith("../"):
            continue
        folder = "" if folder == "." else folder
        prefix = folder + "/" if folder else ""
        scopes.append(Scope(prefix, variables, _kustomize_files(source, folder)))
    scopes.sort(key=lambda s: -len(s.prefix))
    return scopes


def _variables(scopes: list[Scope], rel: str) -> dict[str, str] | None:
    """The variables Flux substitutes in `rel`: those every Kustomization applying it agrees
    on (two clusters sharing a base with different values leave that value unknown); None
    when no Kustomization with variables applies it."""
    covering = [s.variables for s in scopes if s.variables and s.covers(rel)]
    if not covering:
        return None
    first, *others = covering
    return {k: v for k, v in first.items() if all(o.get(k) == v for o in others)}


def _disabled(m: Manifest) -> bool:
    return DISABLED_VALUE in (m.labels.get(DISABLED), m.annotations.get(DISABLED))


DISABLED_VALUE = "disabled"


def _fill(text: str, variables: dict[str, str] | None, unknown: set[str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, op, default = match.groups()
        if variables is not None and name in variables:
            value = variables[name]
            if op in (":=", ":-") and not value:
                return default or ""
            return value
        if variables is not None and op is not None:
            return default or ""
        unknown.add(name)
        return match.group()

    return PLACEHOLDER.sub(one, text)


def _value(text: str, variables: dict[str, str] | None, unknown: set[str]) -> Any:
    filled = _fill(text, variables, unknown)
    if filled == text:
        return text
    whole = PLACEHOLDER.fullmatch(text) is not None
    # Flux substitutes text before decoding: a value that was only the placeholder is typed
    return resolve_plain(filled) if whole and filled else filled


def substitute(manifests: list[Manifest], files: set[str], source: Any = None) -> Unknowns:
    """Fill in what the Flux Kustomizations give, in place, in the objects of `files` (those
    whose text holds `${`); the rest is unknown."""
    unknowns = Unknowns()
    if not files:
        return unknowns
    scopes = flux_scopes(manifests, source)
    _unshare([m for m in manifests if m.file in files])
    for m in manifests:
        if m.file not in files or _disabled(m):
            continue
        variables = _variables(scopes, m.file)
        unknown: set[str] = set()
        _walk(m.data, variables, unknown)
        _refresh(m, variables, unknown)
        if unknown:
            unknowns.by_object[(m.file, m.kind, m.name)] = unknown
    return unknowns


def _unshare(manifests: list[Manifest]) -> None:
    """Give every mapping and sequence of these objects one parent: a YAML alias is the
    anchored node itself (read/yaml_docs.py), so two items of a `kind: List` written
    `spec: *s` share one tree, and filling one item's placeholders in place filled the other's,
    even one labelled `kustomize.toolkit.fluxcd.io/substitute: disabled`. Flux substitutes each
    object's own text after the build has expanded the aliases; and a file taken from the
    cache (read/codec.py) holds a copy per reference, so without this a run that decodes the
    file said otherwise than one that parses it. A node met again is replaced by a copy (with
    its positions). The objects' own roots are left shared: such objects carry the same
    labels, so neither or both are disabled."""
    seen: set[int] = set()
    visited = 0
    for m in manifests:
        if id(m.data) in seen or not isinstance(m.data, (LMap, LSeq)):
            continue
        seen.add(id(m.data))
        pending = [m.data]
        while pending and visited < MAX_VISITED:
            node = pending.pop()
            visited += 1
            keys = list(node) if isinstance(node, LMap) else range(len(node))
            for key in keys:
                child = node[key]
                if not isinstance(child, (LMap, LSeq)):
                    continue
                if id(child) in seen:
                    child = node[key] = copy.deepcopy(child)
                seen.add(id(child))
                pending.append(child)


def _refresh(m: Manifest, variables: dict[str, str] | None, unknown: set[str]) -> None:
    """The object's name and namespace as substituted: the reader took them from the text as
    written (`name: trainer-${TEAM}`), and identities, messages and a budget's namespace
    follow them. The namespace is filled in as the object holds it, which is a kustomization's
    when one set it (Flux substitutes after the build)."""
    if m.name is not None and "${" in m.name:
        m.name = _fill(m.name, variables, unknown)
    if m.namespace is not None and "${" in m.namespace:
        m.namespace = _fill(m.namespace, variables, unknown) or None


def _walk(root: Any, variables: dict[str, str] | None, unknown: set[str]) -> None:
    for node in containers(root, MAX_VISITED):
        if isinstance(node, LMap):
            if any(isinstance(key, str) and "${" in key for key in node):
                _fill_keys(node, variables, unknown)
            for key, value in node.items():
                if isinstance(value, str) and "${" in value:
                    node[key] = _value(value, variables, unknown)
        else:
            for i, item in enumerate(node):
                if isinstance(item, str) and "${" in item:
                    node[i] = _value(item, variables, unknown)


def _fill_keys(node: LMap, variables: dict[str, str] | None, unknown: set[str]) -> None:
    """Placeholders in the keys of a mapping, filled in: Flux substitutes the whole text before
    decoding (fluxcd/pkg kustomize/kustomize_varsub.go, envsubst over the YAML), so
    `${GPU_LABEL}: "true"` is a key like any other. Order and positions are kept; when two
    keys would become one (a duplicate the decoder refuses), they stay unknown."""
    renamed: dict[str, str] = {}
    for key in node:
        if isinstance(key, str) and "${" in key:
            filled = _fill(key, variables, unknown)
            if filled != key:
                renamed[key] = filled
    targets = [renamed.get(key, key) for key in node]
    if len(set(targets)) != len(targets):
        for key in renamed:
            unknown.update(match.group(1) for match in PLACEHOLDER.finditer(key))
        return
    if not renamed:
        return
    items = list(node.items())
    node.clear()
    node.update((renamed.get(key, key), value) for key, value in items)
    node.kpos = {renamed.get(key, key): pos for key, pos in node.kpos.items()}
    if node.raw is not None:
        node.raw = {renamed.get(key, key): text for key, text in node.raw.items()}
