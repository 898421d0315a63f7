"""`${VAR}` placeholders (Flux post-build substitution, envsubst): filled in as Flux does, or
unknown values, never literals.

Flux's kustomize-controller substitutes the `${...}` of fluxcd/pkg envsubst (model/envsubst.py
parses and evaluates it) in each object a Flux `Kustomization` builds, with the variables of
its `spec.postBuild` (fluxcd/pkg kustomize/kustomize_varsub.go):

- `LoadVariables`: the `substituteFrom` ConfigMaps' `data` and Secrets' `data` (base64,
  decoded; a manifest's `stringData` over it, as the API server stores it), in list order,
  a later source over an earlier one, newlines removed; a source that is absent fails the
  build unless `optional`. Here a source absent from the repo (not optional), a Secret that
  cannot be read (SOPS, bad base64) makes the scope open: every variable it does not set
  afterwards is unknown.
- `SubstituteVariables`: `substitute` on top (newlines removed; `NestedStringMap`, so a value
  that is not a string is an invalid Kustomization); substitution runs when there is a
  variable or `substituteStrategy: Always`, never in a built object labelled or annotated
  `kustomize.toolkit.fluxcd.io/substitute: disabled` (its own metadata or what its
  kustomization adds: `commonLabels`, `commonAnnotations`, `labels`).
- `varSubstitution`: every variable name must match `^[_[:alpha:]][_[:alpha:][:digit:]]*$`;
  strict mode (kustomize-controller's StrictPostBuildSubstitutions, on by default since
  v1.9) fails on a variable that is not set and has no default operator; then the object's
  YAML text is substituted and read again (`yaml.YAMLToJSON`), so `replicas: ${R}` becomes a
  number and `"a"` a string without quotes (`_reread`).

A build that fails applies nothing of the Kustomization: every object of its scope is
unknown and the note quotes the reason. A file under no Kustomization keeps its
placeholders as unknown values (something else may fill them in). No finding is built on an
object holding an unknown value (`Unknowns.filter`); the report says once which values were
unknown, and why (`Unknowns.note`).
"""

from __future__ import annotations

import binascii
import copy
import errno
import posixpath
from dataclasses import field
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import LMap, LSeq, containers
from gpudrv_check.core.records import record
from gpudrv_check.core.yaml_scalars import resolve_plain
from gpudrv_check.read.policy import builtin

if TYPE_CHECKING:
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.core.manifest import Manifest
    from gpudrv_check.model.envsubst import Budget

#: the start of a placeholder; `$$` is envsubst's escape of `$` (parse/scan.go `scanEscaped`)
PLACEHOLDER = lazy_compile(r"\$\{")
FLUX_GROUP = "kustomize.toolkit.fluxcd.io/"
DISABLED = "kustomize.toolkit.fluxcd.io/substitute"
DISABLED_VALUE = "disabled"
#: kustomize_varsub.go `varsubRegex` (Go's [:alpha:] and [:digit:] are ASCII)
VARIABLE_NAME = lazy_compile(r"[_A-Za-z][_A-Za-z0-9]*\Z")
#: findings of these rules concern how a file is written, not the values: always kept
KEPT_RULES = frozenset(("unreadable-file", "duplicate-key", "not-checkable"))
#: values visited per object at most (bounded on hostile input)
MAX_VISITED = 50_000
#: variable names listed in the note; the rest are counted
MAX_NAMES_SAID = 8
#: kustomizations one Flux Kustomization may build on, at most (a cycle or a hostile repo)
MAX_KUSTOMIZATIONS = 200
#: an entry of `Unknowns.by_object` that is a failed build's reason, not a variable name
FAILED = "!"


@record
class Scope:
    """The files a Flux Kustomization applies and its variables: with a kustomization file in
    its path, the files that kustomization and those it builds on list; without one, every
    file under the path (Flux generates a kustomization of them)."""

    prefix: str  # "" (the whole repo) or "a/b/"
    variables: dict[str, str]
    files: set[str] | None = None  # None: every file under the prefix
    #: a source could not be read: a variable `variables` does not hold is unknown
    open: bool = False
    #: `substituteStrategy: Always`: substitution runs without variables too
    always: bool = False
    #: why Flux's build of this Kustomization fails, when it does ("Kustomization ns/name: ...")
    failure: str | None = None
    #: files whose objects a kustomization of the scope marks `substitute: disabled`
    disabled: set[str] = field(default_factory=set)
    label: str = ""  # "Kustomization namespace/name", for the note

    def covers(self, rel: str) -> bool:
        return rel in self.files if self.files is not None else rel.startswith(self.prefix)

    @property
    def runs(self) -> bool | None:
        """Whether Flux substitutes at all (SubstituteVariables: `len(vars) > 0 || Always`);
        None when an unreadable source leaves it open."""
        if self.variables or self.always:
            return True
        return None if self.open else False

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = f"{self.label}: {reason}"


def _kustomize_files(source: Any, directory: str) -> tuple[set[str] | None, set[str]]:
    """The files the kustomization in `directory` (and every one it builds on) lists, and
    its rendered stream under `--kustomize` (`<dir>/kustomization.yaml (rendered)`, where the
    objects are read from then); None when the directory has no kustomization file. Second,
    the files whose objects a kustomization on the way labels or annotates
    `kustomize.toolkit.fluxcd.io/substitute: disabled` (`_disables`): it and those below it."""
    from gpudrv_check.read.kustomize import (
        find_kustomization_file,
        parse_kustomization,
        rendered_name,
    )

    try:
        own = find_kustomization_file(source, directory) if source is not None else None
    except OSError as err:
        # a Flux `path` no file system can name (a part past NAME_MAX, the whole past
        # PATH_MAX) holds no kustomization file: asking for one raises ENAMETOOLONG
        if err.errno != errno.ENAMETOOLONG:
            raise
        own = None
    if own is None:
        return None, set()
    files: set[str] = set()
    disabled: set[str] = set()
    rendered = rendered_name(own) in getattr(source, "rendered", {})
    if rendered:
        files.add(rendered_name(own))
    seen: set[str] = set()
    # (folder, whether a kustomization above it disables substitution)
    pending = [(directory, False)]
    while pending and len(seen) < MAX_KUSTOMIZATIONS:
        folder, off = pending.pop()
        file = find_kustomization_file(source, folder) if folder not in seen else None
        if file is None:
            continue
        seen.add(folder)
        k = parse_kustomization(source, file)
        off = off or _disables(source, file)
        files.update(k.files)
        if off:
            disabled.update(k.files)
            if folder == directory and rendered:
                disabled.add(rendered_name(own))
        pending.extend((d, off) for d in k.dirs)
    return files, disabled


def _disables(source: Any, file: str) -> bool:
    """Whether the kustomization `file` adds `kustomize.toolkit.fluxcd.io/substitute:
    disabled` to what it builds (`commonLabels`, `commonAnnotations`, a `labels` entry's
    `pairs`): Flux checks the built object (SubstituteVariables, res.GetLabels())."""
    from gpudrv_check.read.kustomize import adds_metadata

    return adds_metadata(source, file, DISABLED, DISABLED_VALUE)


@record
class Unknowns:
    """What the run could not know: per object, its unknown placeholders (and, as entries
    starting with `FAILED`, why the Flux build that applies it fails)."""

    by_object: dict[tuple[str, str, str | None], set[str]] = field(default_factory=dict)
    dropped: int = 0
    # what was dropped, so runs of several clusters count a finding they share once
    dropped_keys: set[tuple] = field(default_factory=set)

    @property
    def names(self) -> list[str]:
        return sorted(
            {n for names in self.by_object.values() for n in names if not n.startswith(FAILED)}
        )

    @property
    def failures(self) -> list[str]:
        return sorted(
            {n[1:] for names in self.by_object.values() for n in names if n.startswith(FAILED)}
        )

    def note(self) -> str | None:
        names, failures = self.names, self.failures
        if not names and not failures:
            return None
        parts = []
        if names:
            shown = ", ".join("${" + n + "}" for n in names[:MAX_NAMES_SAID])
            if len(names) > MAX_NAMES_SAID:
                shown += f" and {len(names) - MAX_NAMES_SAID} more"
            parts.append(f"placeholders {shown} (Flux postBuild or envsubst) are unknown values")
        if failures:
            shown = "; ".join(failures[:MAX_NAMES_SAID])
            if len(failures) > MAX_NAMES_SAID:
                shown += f"; and {len(failures) - MAX_NAMES_SAID} more"
            parts.append(f"the Flux build fails, so Flux applies none of its objects ({shown})")
        tail = "; a Flux Kustomization's postBuild.substitute gives them values" if names else ""
        return (
            f"{'; '.join(parts)}: {self.dropped} finding(s) built on the "
            f"{len(self.by_object)} object(s) holding them not reported{tail}"
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


class _Unreadable(Exception):
    """A `substituteFrom` source whose variables are not known here."""


def _source_map(found: Manifest) -> dict[str, str]:
    """The variables a ConfigMap or Secret gives (LoadVariables: `data`, newlines removed; a
    Secret's `data` base64-decoded, with `stringData` over it as the API server stores it)."""
    if found.get("sops") is not None:
        raise _Unreadable("encrypted with SOPS")
    out: dict[str, str] = {}
    data = found.get("data")
    if data is not None and not isinstance(data, LMap):
        raise _Unreadable("data is not a mapping")
    for key, value in (data or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise _Unreadable("a value is not a string")  # the API server refuses it
        if found.kind == "Secret":
            import base64  # a Secret's data only: not on every run's start-up path

            try:
                value = base64.b64decode(value.encode("ascii"), validate=True).decode()
            except (binascii.Error, UnicodeError, ValueError) as e:
                raise _Unreadable("data is not base64 of UTF-8 text") from e
        out[key] = value.replace("\n", "")
    if found.kind == "Secret":
        extra = found.get("stringData")
        if extra is not None and not isinstance(extra, LMap):
            raise _Unreadable("stringData is not a mapping")
        for key, value in (extra or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise _Unreadable("a value is not a string")
            out[key] = value.replace("\n", "")
    return out


def flux_scopes(manifests: list[Manifest], source: Any = None) -> list[Scope]:
    """The Flux Kustomizations of the repo, deepest path first (`source` reads the
    kustomization files their paths hold), with their variables and whether their build
    fails for a reason that does not depend on the objects (an invalid variable name or a
    `substitute` value that is not a string)."""
    sources = {
        (m.kind, m.namespace or "default", m.name): m
        for m in manifests
        if m.kind in ("ConfigMap", "Secret")
    }
    scopes = []
    for m in manifests:
        if m.kind != "Kustomization" or not m.api_version.startswith(FLUX_GROUP):
            continue
        path = m.get("spec", "path")
        path = "./" if path is None else path
        if not isinstance(path, str):
            continue
        folder = posixpath.normpath(path.lstrip("/"))
        if folder == ".." or folder.startswith("../"):
            continue
        folder = "" if folder == "." else folder
        prefix = folder + "/" if folder else ""
        files, disabled = _kustomize_files(source, folder)
        namespace = m.namespace or "flux-system"
        scope = Scope(
            prefix, {}, files, disabled=disabled, label=f"Kustomization {namespace}/{m.name}"
        )
        post = m.get("spec", "postBuild")
        if _refused(post):
            continue  # the API server refuses it: it does not exist, it substitutes nothing
        if isinstance(post, LMap):
            _load(scope, post, namespace, sources)
        scopes.append(scope)
    scopes.sort(key=lambda s: -len(s.prefix))
    return scopes


def _refused(post: Any) -> bool:
    """Whether the CRD's schema refuses `spec.postBuild` (kustomize.toolkit.fluxcd.io/v1
    PostBuild): an object whose `substitute` maps names to strings and whose `substituteFrom`
    lists {kind: ConfigMap|Secret, name: string}. A null is pruned as if absent (structural
    schemas drop nulls of fields that are not nullable)."""
    if post is None:
        return False
    if not isinstance(post, LMap):
        return True
    inline = post.get("substitute")
    if inline is not None and (
        not isinstance(inline, LMap)
        or any(v is not None and not isinstance(v, str) for v in inline.values())
    ):
        return True
    refs = post.get("substituteFrom")
    if refs is None:
        return False
    if not isinstance(refs, LSeq):
        return True
    return any(
        not isinstance(ref, LMap)
        or ref.get("kind") not in ("ConfigMap", "Secret")
        or not isinstance(ref.get("name"), str)
        for ref in refs
    )


def _load(scope: Scope, post: LMap, namespace: str, sources: dict) -> None:
    """LoadVariables, then `substitute` on top, then varSubstitution's name check."""
    variables = scope.variables
    refs = post.get("substituteFrom")
    for ref in refs if isinstance(refs, LSeq) else ():
        if not isinstance(ref, LMap) or ref.get("kind") not in ("ConfigMap", "Secret"):
            continue  # LoadVariables reads these two kinds only (the CRD allows no other)
        kind, name = ref.get("kind"), ref.get("name")
        found = sources.get((kind, namespace, name)) if isinstance(name, str) else None
        if found is None:
            if ref.get("optional") is True:
                continue  # Flux skips an optional source that does not exist
            scope.open = True  # Flux fails when it is absent; the cluster may hold it
            variables.clear()
            continue
        try:
            loaded = _source_map(found)
        except _Unreadable:
            scope.open = True  # a later source or `substitute` may still set a variable
            variables.clear()
            continue
        variables.update(loaded)
    inline = post.get("substitute")
    if isinstance(inline, LMap):
        for key, value in inline.items():
            if isinstance(value, str):  # `_refused` let no other value through but null
                variables[str(key)] = value.replace("\n", "")
    strategy = post.get("substituteStrategy")
    scope.always = strategy == "Always"
    if scope.runs is not False:
        for key in variables:
            if not VARIABLE_NAME.match(key):
                scope.fail(
                    f"envsubst error: '{key}' var name is invalid, must match "
                    "'^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
                )
                break


def _disabled(m: Manifest) -> bool:
    return DISABLED_VALUE in (m.labels.get(DISABLED), m.annotations.get(DISABLED))


#: what a text gives under one scope: its value (as written when the scope does not
#: substitute), or UNKNOWN
UNKNOWN = object()


def _text_under(
    text: str, scope: Scope | None, nodes: list | None, unknown: set[str], budget: Budget
) -> Any:
    """The text Flux substitutes for `text` under `scope` (None: no Kustomization applies
    it, every placeholder unknown); UNKNOWN with the names added to `unknown`; BuildError
    when the scope's build fails on it."""
    from gpudrv_check.model.envsubst import Unsupported, evaluate

    if nodes is None:
        return text  # no placeholder, no escape
    runs = None if scope is None else scope.runs
    if runs is False:
        return text  # SubstituteVariables: no variables, default strategy: as written
    names = _names(nodes)
    if runs is None and scope is not None and not scope.variables:
        unknown.update(names or {"$$"})
        return UNKNOWN
    if scope is None:
        unknown.update(names)
        return UNKNOWN if names else text

    def lookup(name: str) -> tuple[str | None, bool]:
        if name in scope.variables:
            return scope.variables[name], True
        return (None, False) if scope.open else ("", False)

    before = len(unknown)
    try:
        value = evaluate(nodes, lookup, True, unknown, budget)
    except Unsupported:
        unknown.update(names)
        return UNKNOWN
    if value is None:
        if len(unknown) == before:
            unknown.update(names)
        return UNKNOWN
    return value


def _names(nodes: list, depth: int = 0) -> set[str]:
    """Every variable the parsed text names."""
    from gpudrv_check.model.envsubst import Func

    out: set[str] = set()
    for node in nodes:
        if isinstance(node, Func):
            out.add(node.param)
            if depth < 64:
                for arg in node.args:
                    out |= _names(arg, depth + 1)
    return out


def _reread(filled: str) -> Any:
    """The filled text of a plain scalar as go-yaml v2 reads it (varSubstitution's
    yaml.YAMLToJSON): surrounding spaces dropped, a ` #` comment cut, one quoted scalar
    unquoted, the rest typed as a YAML 1.1 plain scalar (core/yaml_scalars.py). Unsupported
    for what would change the document's structure or is not read here (a `: ` or a
    leading `- ` makes a mapping or a list, flow collections, anchors, tags, block
    scalars, line breaks)."""
    from gpudrv_check.model.envsubst import Unsupported

    if any(c in filled for c in "\n\r\t"):
        raise Unsupported("a line break or tab in a substituted value")
    text = filled.strip(" ")
    if not text or text.startswith("#"):
        return None  # an empty value, or a comment: null
    first = text[0]
    if first in "\"'":
        value, rest = _quoted(text)
        rest = rest.strip(" ")
        if rest and not rest.startswith("#"):
            raise Unsupported("text after a quoted scalar")
        return value
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut].rstrip(" ")
    if first in "[]{}&*!|>%@`,":
        raise Unsupported("a flow collection, anchor, alias, tag or block scalar")
    if first in "-?:" and (len(text) == 1 or text[1] == " "):
        raise Unsupported("a sequence entry or mapping key")
    if ": " in text or text.endswith(":"):
        raise Unsupported("a mapping")
    return resolve_plain(text)


def _not_plain(text: str) -> bool:
    """Whether `text` as read cannot have been written as a one-line plain scalar, so it was
    quoted or a block scalar (the reader keeps no style): it starts with an indicator or a
    space, or holds `: `, ` #`, a line break or a tab."""
    return (
        text[:1] in _INDICATORS
        or (text[:1] in "-?:" and text[1:2] in ("", " "))
        or text != text.strip(" ")
        or any(part in text for part in (": ", " #", "\n", "\r", "\t"))
        or text.endswith(":")
    )


_INDICATORS = frozenset("#&*!|>%@`\"'[]{},")


def _quoted_fill(filled: str, text: str) -> str:
    """A filled value that was quoted or a block scalar stays a string: Flux substitutes
    inside it. In a block scalar (a line break in `text`) whatever it holds; in a quoted one,
    a quote or backslash the substitution adds changes its meaning by a style not kept
    here: unknown."""
    from gpudrv_check.model.envsubst import Unsupported

    if "\n" not in text and any(filled.count(c) > text.count(c) for c in "\"'\\"):
        raise Unsupported("a quote or backslash substituted into a quoted value")
    return filled


_DOUBLE_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _quoted(text: str) -> tuple[str, str]:
    """A quoted scalar at the start of `text`, and what follows it."""
    from gpudrv_check.model.envsubst import Unsupported

    quote, out, i = text[0], [], 1
    while i < len(text):
        c = text[i]
        if quote == "'" and c == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), text[i + 1 :]
        if quote == '"' and c == '"':
            return "".join(out), text[i + 1 :]
        if quote == '"' and c == "\\":
            escaped = _DOUBLE_ESCAPES.get(text[i + 1 : i + 2])
            if escaped is None:
                raise Unsupported("an escape in a double-quoted scalar")
            out.append(escaped)
            i += 2
            continue
        out.append(c)
        i += 1
    raise Unsupported("an unterminated quoted scalar")


def _prepare(text: str) -> list | None:
    """The parsed text, None when it holds no placeholder and no escape (Flux leaves it as
    it is). BuildError when envsubst refuses it, Unsupported when not read here."""
    if "$" not in text or ("${" not in text and "$$" not in text):
        return None
    from gpudrv_check.model.envsubst import parse

    return parse(text)


@record
class _Site:
    """One string of an object that Flux may change: a value (`key` in `node`) or a key of
    `node` (`is_key`)."""

    node: Any
    key: Any
    text: str
    is_key: bool = False


def _same(a: Any, b: Any) -> bool:
    return a is not UNKNOWN and type(a) is type(b) and a == b


def _site_value(
    site: _Site, scopes: list[Scope | None], m: Manifest, unknown: set[str], budget: Budget
) -> Any:
    """What `site` holds as applied: its value under every scope applying the object, when
    they agree, or UNKNOWN (names added to `unknown`). A scope whose build fails on it
    records why (`Scope.fail`)."""
    from gpudrv_check.model.envsubst import BuildError, Unsupported

    text = site.text
    try:
        nodes = _prepare(text)
        problem: Exception | None = None
    except (BuildError, Unsupported) as e:
        nodes, problem = None, e
    if nodes is None and problem is None:
        return text
    names = _names(nodes) if nodes is not None else set(_NAME_AFTER.findall(text))
    values: list[Any] = []
    for scope in scopes:
        off = scope is not None and (scope.runs is False or m.file in scope.disabled)
        if off or _disabled(m):
            values.append(text)
            continue
        if problem is not None:
            if scope is not None and isinstance(problem, BuildError) and scope.runs:
                # the scope's objects are unknown with the reason (`substitute`)
                scope.fail(f"envsubst error: variable substitution failed: {problem}")
            else:
                unknown.update(names or {"$$"})
            values.append(UNKNOWN)
            continue
        try:
            value = _text_under(text, scope, nodes, unknown, budget)
        except BuildError as e:
            if scope is not None:  # always: without a scope nothing is evaluated
                scope.fail(f"envsubst error: variable substitution failed: {e}")
            value = UNKNOWN
        if value is not UNKNOWN and value != text:
            try:
                value = _quoted_fill(value, text) if _not_plain(text) else _reread(value)
            except Unsupported:
                unknown.update(names or {"$$"})
                value = UNKNOWN
        values.append(value)
    first = values[0]
    if all(_same(first, v) for v in values):
        return first
    if first is not UNKNOWN:
        unknown.update(names or {"$$"})  # two Kustomizations give it different values
    return UNKNOWN


_NAME_AFTER = lazy_compile(r"\$\{#?([^\W]\w*)")


def _sites(root: Any) -> list[_Site]:
    """The strings of an object Flux's envsubst may change (a `$` in them), keys included."""
    out = []
    for node in containers(root, MAX_VISITED):
        if isinstance(node, LMap):
            for key, value in node.items():
                if isinstance(key, str) and "$" in key:
                    out.append(_Site(node, key, key, is_key=True))
                if isinstance(value, str) and "$" in value:
                    out.append(_Site(node, key, value))
        else:
            for i, item in enumerate(node):
                if isinstance(item, str) and "$" in item:
                    out.append(_Site(node, i, item))
    return out


def substitute(manifests: list[Manifest], files: set[str], source: Any = None) -> Unknowns:
    """Fill in what the Flux Kustomizations give, in place, in the objects of `files` (those
    whose text holds `${`); the rest is unknown, and so is every object of a Kustomization
    whose build fails."""
    unknowns = Unknowns()
    if not files and not any(_with_post_build(m) for m in manifests if m.kind == "Kustomization"):
        return unknowns  # no placeholder, and no Flux build that may fail on its variables
    # (the envsubst reader is imported only here, by a run with something to substitute)
    from gpudrv_check.model.envsubst import Budget

    scopes = flux_scopes(manifests, source)
    chosen = [m for m in manifests if m.file in files]
    _unshare(chosen)
    budget = Budget()
    for m in chosen:
        covering: list[Scope | None] = [s for s in scopes if s.covers(m.file)]
        if not any(s.runs is not False for s in covering if s is not None):
            # no Kustomization substitutes it: unknown when none applies it, as written
            # when those that do have no variables
            covering = covering or [None]
        unknown: set[str] = set()
        sites = _sites(m.data)
        values = [_site_value(site, covering, m, unknown, budget) for site in sites]
        _apply(sites, values, unknown)
        _refresh(m, covering, unknown, budget)
        if unknown:
            unknowns.by_object[(m.file, m.kind, m.name)] = unknown
    failed = [s for s in scopes if s.failure]
    if failed:
        for m in manifests:
            reasons = {FAILED + s.failure for s in failed if s.covers(m.file) and s.failure}
            if reasons:
                unknowns.by_object.setdefault((m.file, m.kind, m.name), set()).update(reasons)
    return unknowns


def _with_post_build(m: Manifest) -> bool:
    return m.api_version.startswith(FLUX_GROUP) and isinstance(m.get("spec", "postBuild"), LMap)


def _apply(sites: list[_Site], values: list[Any], unknown: set[str]) -> None:
    """The values written in place; keys renamed per mapping (`_fill_keys`)."""
    renames: dict[int, tuple[LMap, dict[str, Any]]] = {}
    for site, value in zip(sites, values, strict=True):
        if site.is_key:
            renames.setdefault(id(site.node), (site.node, {}))[1][site.key] = value
        elif value is not UNKNOWN and value is not site.text:
            site.node[site.key] = value
    for node, renamed in renames.values():
        _fill_keys(node, renamed, unknown)


def _refresh(m: Manifest, scopes: list[Scope | None], unknown: set[str], budget: Budget) -> None:
    """The object's name and namespace as substituted: the reader took them from the text as
    written (`name: trainer-${TEAM}`), and identities, messages and a budget's namespace
    follow them. The namespace is filled in as the object holds it, which is a kustomization's
    when one set it (Flux substitutes after the build)."""
    for attr in ("name", "namespace"):
        text = getattr(m, attr)
        if text is None or "$" not in text:
            continue
        value = _site_value(_Site(None, None, text), scopes, m, unknown, budget)
        if value is None and attr == "namespace":
            m.namespace = None
        elif value is not UNKNOWN and value is not None:
            setattr(m, attr, value if isinstance(value, str) else str(value))


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


def _fill_keys(node: LMap, renamed: dict[str, Any], unknown: set[str]) -> None:
    """Placeholders in the keys of a mapping, filled in: Flux substitutes the whole text before
    decoding (fluxcd/pkg kustomize/kustomize_varsub.go, envsubst over the YAML), so
    `${GPU_LABEL}: "true"` is a key like any other. Order and positions are kept; when two
    keys would become one (a duplicate the decoder refuses), or a key would not be a string,
    they stay unknown."""
    for key, value in list(renamed.items()):
        if value is UNKNOWN or value == key:
            del renamed[key]
        elif not isinstance(value, str):
            unknown.update(_NAME_AFTER.findall(key) or {"$$"})
            del renamed[key]
    targets = [renamed.get(key, key) for key in node]
    if len(set(targets)) != len(targets):
        for key in renamed:
            unknown.update(_NAME_AFTER.findall(key) or {"$$"})
        return
    if not renamed:
        return
    items = list(node.items())
    node.clear()
    node.update((renamed.get(key, key), value) for key, value in items)
    node.kpos = {renamed.get(key, key): pos for key, pos in node.kpos.items()}
    if node.raw is not None:
        node.raw = {renamed.get(key, key): text for key, text in node.raw.items()}
