"""Files → Kubernetes objects (Manifests), with every skipped document accounted for."""

from __future__ import annotations

import hashlib
import os
import posixpath
import sys
from collections.abc import Callable, Iterable
from dataclasses import field, replace
from functools import partial
from typing import Any, Protocol

from gpudrv_check.core.finding import Finding, Location
from gpudrv_check.core.located import LMap, LSeq, key_at, scalar_text, type_name
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.reads import NOTHING_SKIPPED, SkimPlan
from gpudrv_check.core.records import record
from gpudrv_check.read.block_yaml import forget as forget_lines
from gpudrv_check.read.kustomization import (
    PatchRef,
    applied_namespaces,
    in_namespaces,
    is_kustomization,
    patch_refs,
)
from gpudrv_check.read.policy import builtin
from gpudrv_check.read.prefetched import Prefetched
from gpudrv_check.read.safe_io import TooLarge
from gpudrv_check.read.text import decode_text
from gpudrv_check.read.tree import FileRef, Skipped
from gpudrv_check.read.yaml_docs import (
    NON_SCALAR_KEY,
    LoadProblem,
    ParsedFile,
    event_built_bytes,
    parse_text,
)

# loader problems of one rule listed per file; the rest are counted in one more finding
MAX_PROBLEMS_PER_RULE = 100


class Source(Protocol):
    def read(self, rel: str, limit: int = ..., follow_inside: bool = False) -> bytes: ...


class Decoding(Protocol):
    """Which files a run decodes (engine/cache/partition.py `Plan`)."""

    #: the namespaces whose findings come from the cache
    clean: set[str]

    def decode(self, rel: str) -> bool: ...


class FileCache(Protocol):
    """The per-file cache `read_repo` consults. The engine passes one (engine/cache/files.py):
    how entries are keyed and stored, and which files a run may leave undecoded, are its
    business, not the reader's."""

    def open(self, source: Any, reading: tuple[object, ...]) -> None:
        """Load the entries of `source` valid for this way of reading."""

    def hit(self, rel: str, file_digest: str, helm: bool) -> bool:
        """Whether the cache holds what a file with these bytes yields."""
        ...

    def result(
        self, rel: str, reparse: Callable[[], FileResult] | None = None
    ) -> FileResult | None:
        """The cached FileResult of a hit; None when it holds none or it does not decode.
        `reparse`: the file parsed again, should a part decoded late not decode."""

    def add(self, result: FileResult, helm: bool, blob: bytes | None, placeholders: bool) -> None:
        """What a freshly parsed file yields (`blob`: already encoded, or None)."""

    def needed(self, result: FileResult) -> None:
        """A hit's result, parsed again because `result` gave none: keep it from now on."""

    def placeholders(self, rel: str) -> bool:
        """Whether a hit's file holds `${` (as read when its entry was stored)."""
        ...

    def knows(self, rel: str, file_digest: str, helm: bool) -> bool:
        """Whether `hit` would answer yes (and nothing is recorded)."""
        ...

    def has_result(self, rel: str) -> bool:
        """Whether a hit's entry holds an encoded result (`result` may still not decode it)."""
        ...

    def save(self) -> None: ...

    def partitions(
        self, reads: list[tuple[str, str]], namespaces: dict[str, tuple] | None = None
    ) -> Decoding | None:
        """Which files this run decodes, from how each was read; None: all of them."""

    def unread(self, rel: str) -> tuple[int, int]:
        """The objects a file not decoded holds, and the documents it skipped."""
        ...


@record
class FileResult:
    """What one file contributes: its objects, its problems, and what was skipped in it."""

    rel: str
    manifests: list[Manifest] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    digest: str = ""  # sha256 of the bytes read, to notice a change before rewriting


@record
class RepoContent:
    files: list[FileResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # files never read (walk level)
    # files whose findings came from the partition cache (engine/cache/partition.py): counted,
    # not decoded
    unread_files: int = 0
    unread_objects: int = 0
    unread_skipped: int = 0
    plan: Decoding | None = None  # which files this run decodes (the partition plan), or None
    # files whose bytes hold `${`: the only ones with placeholders (model/placeholders.py)
    placeholder_files: set[str] = field(default_factory=set)
    # a file the caches had taken at one content was read with another (written while the run
    # was under way): what this run finds is not stored under the keys it planned with
    unsettled: bool = False
    # a file's name as reports show it → as the file system has it, for the names the walk
    # escaped (read/tree.py `display_name`): report links name the file itself (Report.link)
    disk_names: dict[str, str] = field(default_factory=dict)

    @property
    def manifests(self) -> list[Manifest]:
        return [m for f in self.files for m in f.manifests]

    @property
    def problems(self) -> list[Finding]:
        return [p for f in self.files for p in f.problems]

    @property
    def object_count(self) -> int:
        return sum(len(f.manifests) for f in self.files) + self.unread_objects

    @property
    def file_count(self) -> int:
        return len(self.files) + self.unread_files

    @property
    def skipped_documents(self) -> int:
        return sum(len(f.skipped) for f in self.files) + self.unread_skipped


def problem_finding(rel: str, problem: LoadProblem) -> Finding:
    from gpudrv_check.read.policy import default_severity

    return Finding(
        rule=problem.rule,
        severity=default_severity(problem.rule),
        message=problem.message,
        hint=problem.hint,
        location=Location(file=rel, line=problem.line, column=problem.column),
    )


def chart_template_dirs(files: Iterable[FileRef]) -> list[str]:
    """`<chart>/templates/` prefixes: files there are Helm templates, not manifests."""
    dirs = []
    for f in files:
        if posixpath.basename(f.rel) == "Chart.yaml":
            parent = posixpath.dirname(f.rel)
            dirs.append((parent + "/" if parent else "") + "templates/")
    return sorted(dirs)


def _not_checkable(rel: str, line: int, message: str, hint: str) -> Finding:
    return Finding(
        rule=builtin("not-checkable").id,
        severity=builtin("not-checkable").severity,
        message=message,
        hint=hint,
        location=Location(file=rel, line=line, column=1),
    )


HELM_HINT = (
    "Render the chart (helm template) and check the output, e.g. "
    "`helm template … | gpudrv-check check - --stdin-name rendered.yaml`, or exclude the path."
)


TERRAFORM_HINT = (
    "Terraform fills this template in (templatefile); check what it renders, e.g. "
    "`terraform console` output piped into `gpudrv-check check -`, or exclude the path."
)
CHART_HINT = (
    "Render the chart and check the output: `helm template NAME CHART -f values.yaml | "
    "gpudrv-check check - --stdin-name rendered.yaml`, or exclude the chart's path."
)


def _is_terraform(text: str) -> bool:
    """A template Terraform's templatefile() fills in: `%{ if … }` directives or `${ … }`."""
    return "%{" in text or "${" in text


def chart_findings(files: list[FileRef], templates: list[str]) -> dict[str, Finding]:
    """One GPU009 per Helm chart with templates (`templates`: chart_template_dirs(files)), at
    its Chart.yaml, by that file's path."""
    out: dict[str, Finding] = {}
    for prefix in templates:
        count = sum(1 for f in files if f.rel.startswith(prefix))
        if not count:
            continue
        chart_dir = prefix[: -len("templates/")]
        chart_file = chart_dir + "Chart.yaml"
        name = chart_dir.rstrip("/") or "."
        out[chart_file] = _not_checkable(
            chart_file,
            1,
            f"chart {name}: {count} template{'s' if count != 1 else ''} not rendered; pipe "
            "`helm template` into `gpudrv-check check -`",
            CHART_HINT,
        ).copy_with(path=["templates"])  # its fingerprint survives a new template
    return out


KUSTOMIZE_HINT = (
    "Render the overlay (`kustomize build DIR > rendered.yaml`) and check the output; "
    "the patch is checked as part of the objects it changes."
)


def _over_limit(rel: str, size: int, max_bytes: int) -> FileResult:
    result = FileResult(rel)
    result.problems.append(
        problem_finding(
            rel,
            LoadProblem(
                builtin("unreadable-file").id,
                1,
                1,
                f"file is {size} bytes, over the max_file_bytes limit of {max_bytes}; not read",
                "Split the file, exclude it, or raise max_file_bytes in .gpudrv-check.yaml (a "
                "node inventory: name it under `inventory:`, read up to max_inventory_bytes).",
            ),
        )
    )
    return result


def _over_budget(rel: str, budget: int) -> FileResult:
    result = FileResult(rel)
    message = f"the run's input budget of {budget} bytes (max_total_bytes) is spent; not read"
    hint = "Exclude generated or vendored files, or raise max_total_bytes in .gpudrv-check.yaml."
    result.problems.append(
        problem_finding(rel, LoadProblem(builtin("unreadable-file").id, 1, 1, message, hint))
    )
    return result


class _Budget:
    """The bytes a run may still read; stderr says once when they are spent."""

    def __init__(self, total: int | None) -> None:
        self.left, self.total, self.said = total, total, False

    def take(self, rel: str, size: int) -> FileResult | None:
        """None when `size` bytes fit (and are taken), else the finding for `rel`."""
        if self.left is None or self.total is None:
            return None
        if size <= self.left:
            self.left -= size
            return None
        self.left = 0  # the rest of the run reads nothing more: a deterministic cut in path order
        if not self.said:
            self.said = True
            sys.stderr.write(
                f"gpudrv-check: warning: the input budget of {self.total} bytes "
                "(max_total_bytes) is spent; the remaining files are not read\n"
            )
        return _over_budget(rel, self.total)


def _read_bytes(source: Source, ref: FileRef, max_bytes: int) -> bytes | FileResult:
    """The file's bytes, or the FileResult that says why they cannot be used."""
    if ref.error is not None:
        result = FileResult(ref.rel)
        result.problems.append(
            problem_finding(ref.rel, LoadProblem(builtin("unreadable-file").id, 1, 1, ref.error))
        )
        return result
    if ref.size > max_bytes:
        return _over_limit(ref.rel, ref.size, max_bytes)
    try:
        data = source.read(ref.rel, max_bytes)
    except TooLarge as err:  # it grew since the walk
        return _over_limit(ref.rel, err.size, max_bytes)
    except OSError as err:
        result = FileResult(ref.rel)
        reason = err.strerror or type(err).__name__
        result.problems.append(
            problem_finding(
                ref.rel, LoadProblem(builtin("unreadable-file").id, 1, 1, f"cannot read: {reason}")
            )
        )
        return result
    if len(data) > max_bytes:  # it grew since the walk
        return _over_limit(ref.rel, len(data), max_bytes)
    return data


def kustomize_patch_result(rel: str, patch: PatchRef) -> FileResult:
    result = FileResult(rel)
    result.problems.append(
        _not_checkable(
            rel,
            1,
            f"Kustomize patch (listed in {patch.kustomization}:{patch.line} {patch.field}): "
            "a partial object, not checkable on its own",
            KUSTOMIZE_HINT,
        )
    )
    return result


def _is_json_name(rel: str) -> bool:
    return rel.lower().endswith(".json")


def parse_document_text(rel: str, text: str, skim: SkimPlan = NOTHING_SKIPPED) -> ParsedFile:
    """YAML, or JSON for `.json` files that libyaml refuses but that are valid JSON.
    `skim`: what is not kept (see yaml_docs.parse_text). The JSON reader is imported only
    for a `.json` file: most runs read none."""
    if _is_json_name(rel) and "\x85" in text:
        from gpudrv_check.read.json_docs import parse_json

        # YAML 1.1 folds a NEL inside a quoted string into a space; JSON keeps the character
        as_json = parse_json(text)
        if not as_json.failed:
            return as_json
    parsed = parse_text(text, skim)
    if parsed.failed and _is_json_name(rel):
        from gpudrv_check.read.json_docs import parse_json

        as_json = parse_json(text)
        settings = _jsonc_settings(text) if as_json.failed else None
        if settings is not None:
            return settings
        # a JSON-looking file gets the JSON reader's complaint; YAML in a .json file the YAML one
        if not as_json.failed or text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
            return as_json
    return parsed


def _jsonc_settings(text: str) -> ParsedFile | None:
    """Editor or tool settings in JSONC (comments, trailing commas): documents that are no
    Kubernetes object (skipped). None for anything else: a manifest written so is still a
    syntax error (kubectl refuses it)."""
    from gpudrv_check.read.json_docs import parse_json
    from gpudrv_check.read.jsonc import without_comments

    plain = without_comments(text)
    if plain is None:
        return None
    parsed = parse_json(plain)
    if parsed.failed or any(is_object(doc.data) for doc in parsed.docs):
        return None
    return parsed


def _is_templated(text: str, parsed: ParsedFile) -> bool:
    """`{{ … }}` that broke the YAML, or that YAML read as a mapping used as a key."""
    if "{{" not in text:
        return False
    return parsed.failed or any(p.message.startswith(NON_SCALAR_KEY) for p in parsed.problems)


def _capped(problems: list[LoadProblem]) -> list[LoadProblem]:
    """At most MAX_PROBLEMS_PER_RULE per rule, plus one that counts the rest."""
    seen: dict[str, int] = {}
    first_unlisted: dict[str, LoadProblem] = {}
    out = []
    for p in problems:
        seen[p.rule] = seen.get(p.rule, 0) + 1
        if seen[p.rule] <= MAX_PROBLEMS_PER_RULE:
            out.append(p)
        elif p.rule not in first_unlisted:
            first_unlisted[p.rule] = p
    for rule, p in first_unlisted.items():
        more = seen[rule] - MAX_PROBLEMS_PER_RULE
        out.append(
            LoadProblem(
                rule,
                p.line,
                p.column,
                f"{more} more {rule} problem(s) in this file from here on, not listed "
                f"(the first {MAX_PROBLEMS_PER_RULE} are)",
                p.hint,
            )
        )
    return out


def parse_manifest_bytes(
    rel: str,
    data: bytes,
    helm_template: bool = False,
    skim: SkimPlan = NOTHING_SKIPPED,
    digest: str | None = None,
) -> FileResult:
    """`digest`: the SHA-256 of `data` when the caller has it already."""
    result = FileResult(rel, digest=digest or hashlib.sha256(data).hexdigest())
    text, problem = decode_text(data)
    if problem is not None:
        result.problems.append(problem_finding(rel, problem))
        return result
    assert text is not None
    if helm_template:
        # said once for the whole chart, at its Chart.yaml (chart_findings)
        result.skipped.append(Skipped(rel, "Helm chart template, not rendered"))
        return result
    parsed = parse_document_text(rel, text, skim)
    if parsed.failed and _is_terraform(text):
        result.problems.append(
            _not_checkable(
                rel,
                1,
                "Terraform template (%{ … } / ${ … }): not checkable unless rendered",
                TERRAFORM_HINT,
            ).copy_with(severity=builtin("not-checkable").severity_of("terraform"))
        )
        return result
    if _is_templated(text, parsed):
        result.problems.append(
            _not_checkable(
                rel,
                1,
                "templated file ({{ … }}): not checkable unless rendered",
                HELM_HINT,
            )
        )
        return result
    for p in _capped(_object_problems(parsed)):
        result.problems.append(problem_finding(rel, p))
    for doc in parsed.docs:
        _collect(result, rel, doc.index, doc.data, doc.pos)
    if result.problems and result.manifests:
        _own_duplicate_keys(result, parsed.docs)
    return result


def _own_duplicate_keys(result: FileResult, docs: list[Any]) -> None:
    """A duplicate key (GPU008) is a problem of the object it is written in, at its key: the
    object's annotation and the config's exemptions by kind and name reach it, and its
    fingerprint is the object's and the key's, not the file's (a `git mv` makes it no new
    finding). The key is found where the builder kept it (the repeated key's position); in
    a part of the object that is not built (a skimmed value), the object alone."""
    rule = builtin("duplicate-key").id
    starts = sorted((d.pos, d.index) for d in docs)
    for i, finding in enumerate(result.problems):
        if finding.rule != rule or finding.object is not None:
            continue
        at = (finding.location.line, finding.location.column)
        doc = [index for start, index in starts if start <= at]
        owners = [m for m in result.manifests if doc and m.doc == doc[-1]]
        for m in owners:
            path = key_at(m.data, at)
            if path is not None:
                result.problems[i] = finding.copy_with(object=m.ref, path=list(path))
                break
        else:
            started = [m for m in owners if getattr(m.data, "pos", (0, 0)) <= at]
            if started:
                result.problems[i] = finding.copy_with(object=started[-1].ref)


def _collect(result: FileResult, rel: str, index: int, data: Any, pos: tuple[int, int]) -> None:
    where = f"{rel}#{index}"
    if data is None:
        result.skipped.append(Skipped(where, "empty document"))
        return
    if isinstance(data, LSeq) and not _holds_objects(data):
        # an Ansible playbook, a task list, a JSON 6902 patch: not meant as Kubernetes objects
        result.skipped.append(Skipped(where, "a list, not a Kubernetes object"))
        return
    if not isinstance(data, LMap):
        shape = "a list" if isinstance(data, LSeq) else "a scalar"
        result.problems.append(
            _not_checkable(
                rel,
                pos[0],
                f"document {index} is {shape}, not a Kubernetes object; skipped",
                "A manifest is a mapping with apiVersion and kind; exclude this file if it is "
                "not one.",
            )
        )
        return
    if sops_encrypted(data):
        result.skipped.append(Skipped(where, SOPS_SKIPPED))
        return
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if api_version is None or kind is None:
        result.skipped.append(Skipped(where, "no apiVersion/kind: not a Kubernetes object"))
        return
    if not isinstance(api_version, str) or not isinstance(kind, str):
        key = "kind" if not isinstance(kind, str) else "apiVersion"
        line, col = data.key_pos(key)
        result.problems.append(
            Finding(
                rule=builtin("invalid-field").id,
                severity=builtin("invalid-field").severity,
                message=f"{key} must be a string; object skipped",
                hint="Write apiVersion and kind as strings, e.g. `kind: Deployment`.",
                location=Location(file=rel, line=line, column=col),
            )
        )
        return
    items = data.get("items")
    if kind.endswith("List") and isinstance(items, LSeq) and kind != "NodeInventory":
        for i, item in enumerate(items):
            _collect_item(result, rel, index, i, item, (api_version, kind))
        return
    _check_name_types(result, rel, data)
    result.manifests.append(_manifest(rel, index, data, api_version, kind, None))


SOPS_SKIPPED = "SOPS-encrypted: Flux decrypts it before applying; its values are not known here"


def sops_encrypted(data: LMap) -> bool:
    """Whether a document is SOPS-encrypted: a top-level `sops` mapping with a non-empty
    `mac`, as Flux's kustomize-controller tells one (internal/decryptor/decryptor.go,
    isSOPSEncryptedResource) and decrypts it before applying. Its values are `ENC[…]` text
    standing for numbers and strings nobody here knows, so the document is skipped (and
    counted, `-v`) rather than checked as written: a GPU count of `ENC[AES256_GCM,…]` is
    no mistake of the repo's."""
    metadata = data.get("sops")
    return isinstance(metadata, LMap) and metadata.get("mac") not in (None, "")


def _holds_objects(items: LSeq) -> bool:
    """Whether a top-level list holds Kubernetes objects (kubectl refuses it: not a List)."""
    return any(isinstance(item, LMap) and "apiVersion" in item and "kind" in item for item in items)


def is_object(data: Any) -> bool:
    """Whether a document is meant as a Kubernetes object (or a list of them)."""
    if isinstance(data, LMap):  # as _collect reads it: both, or it is skipped
        return "apiVersion" in data and "kind" in data
    return isinstance(data, LSeq) and _holds_objects(data)


#: problems that concern Kubernetes objects only: in a CI config, a Home Assistant or Ansible
#: file (`!secret`, `!include`, a repeated key) they are that tool's business, not findings
OBJECT_ONLY_RULES = frozenset(("duplicate-key", "not-checkable"))


def _object_problems(parsed: ParsedFile) -> list[LoadProblem]:
    """The parse problems, without those of OBJECT_ONLY_RULES inside documents that are not
    Kubernetes objects (a document spans from its start to the next one's)."""
    foreign = [
        (doc.pos, parsed.docs[i + 1].pos if i + 1 < len(parsed.docs) else None)
        for i, doc in enumerate(parsed.docs)
        if doc.data is not None and not is_object(doc.data)
    ]
    if not foreign:
        return parsed.problems

    def inside(p: LoadProblem) -> bool:
        at = (p.line, p.column)
        return any(start <= at and (end is None or at < end) for start, end in foreign)

    object_only = {builtin(name).id for name in OBJECT_ONLY_RULES}
    return [
        p
        for p in parsed.problems
        if p.rule not in object_only and not p.message.startswith(NON_SCALAR_KEY) or not inside(p)
    ]


def _check_name_types(result: FileResult, rel: str, data: LMap) -> None:
    """metadata.name/namespace written as YAML booleans or numbers (`name: n` is false)."""
    meta = data.get("metadata")
    if not isinstance(meta, LMap):
        return
    for key in ("name", "namespace"):
        value = meta.get(key)
        if value is None or isinstance(value, str):
            continue
        text = scalar_text(meta, key)
        line, col = meta.key_pos(key)
        result.problems.append(
            Finding(
                rule=builtin("invalid-field").id,
                severity=builtin("invalid-field").severity,
                message=f"metadata.{key} is read as a YAML {type_name(value)}, not a string"
                + (f" (`{text}`)" if text else ""),
                hint=f'Quote it: `{key}: "{text}"`.'
                if text
                else f"Write metadata.{key} as a string.",
                location=Location(file=rel, line=line, column=col),
            )
        )
        if text is not None:
            meta[key] = text  # read on as the text written, so the object is still checked


def _collect_item(
    result: FileResult, rel: str, index: int, item_index: int, item: Any, listed: tuple[str, str]
) -> None:
    """One item of a List. An item with neither apiVersion nor kind is of the list's own type:
    the list's apiVersion and its kind without `List` (a `NodeList` from the API, as
    `kubectl get --raw /api/v1/nodes` prints it, holds Nodes written without either), as
    apimachinery's unstructured decoding sets them (unstructured/helpers.go decodeToList)."""
    where = f"{rel}#{index}.items[{item_index}]"
    if not isinstance(item, LMap):
        result.skipped.append(Skipped(where, "List item is not a mapping"))
        return
    api_version = item.get("apiVersion")
    kind = item.get("kind")
    # GetAPIVersion and GetKind read a value that is no string as ""
    unset = not isinstance(api_version, str) or not api_version
    if unset and (not isinstance(kind, str) or not kind) and listed[1] != "List":
        api_version, kind = listed[0], listed[1][: -len("List")]
    if not isinstance(api_version, str) or not isinstance(kind, str):
        result.skipped.append(Skipped(where, "List item without apiVersion/kind"))
        return
    _check_name_types(result, rel, item)
    result.manifests.append(_manifest(rel, index, item, api_version, kind, item_index))


def _manifest(
    rel: str, index: int, data: LMap, api_version: str, kind: str, item: int | None
) -> Manifest:
    meta = data.get("metadata")
    name = namespace = None
    if isinstance(meta, dict):
        raw_name = meta.get("name")
        raw_ns = meta.get("namespace")
        name = raw_name if isinstance(raw_name, str) else None
        namespace = raw_ns if isinstance(raw_ns, str) else None
        generate = meta.get("generateName")
        if name is None and isinstance(generate, str) and generate:
            name = generate + "*"  # the API server appends a random suffix
    return Manifest(
        file=rel,
        doc=index,
        data=data,
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=namespace,
        item=item,
    )


def kustomize_patches(source: Source, files: list[FileRef], max_bytes: int) -> dict[str, PatchRef]:
    """Patch files named by the repo's kustomizations (the first naming wins), by path."""
    return kustomize_layout(source, files, max_bytes)[0]


def kustomize_layout(
    source: Source, files: list[FileRef], max_bytes: int
) -> tuple[dict[str, PatchRef], dict[str, tuple[str | None, ...]]]:
    """What the repo's kustomizations say of the other files: the patch files they name (the
    first naming wins), and the namespaces they build listed files into
    (read/kustomization.py `applied_namespaces`), by path."""
    listed = {ref.rel for ref in files}
    out: dict[str, PatchRef] = {}
    documents: dict[str, Any] = {}
    for ref in files:
        if not is_kustomization(ref.rel):
            continue
        data = _read_bytes(source, ref, max_bytes)
        if isinstance(data, FileResult):
            continue  # reported when the file itself is read
        text, problem = decode_text(data)
        if text is None or problem is not None:
            continue
        for doc in parse_text(text).docs:
            if isinstance(doc.data, LMap):
                documents.setdefault(ref.rel, doc.data)
            for rel, patch in patch_refs(ref.rel, doc.data).items():
                if rel in listed and rel not in out and rel != ref.rel:
                    out[rel] = patch
    namespaces = applied_namespaces(documents, listed - set(out))
    return out, namespaces


def _apply_namespaces(results: list[FileResult], namespaces: dict[str, tuple]) -> None:
    """Each object of a file a kustomization builds into a namespace, in that namespace (one
    object per namespace when several roots build it; file, line and column stay the file's)."""
    for result in results:
        targets = namespaces.get(result.rel)
        if targets is None:
            continue
        result.manifests = [
            m if ns == m.namespace else replace(m, namespace=ns)
            for m in result.manifests
            for ns in in_namespaces(m.kind, m.namespace, targets)
        ]
        for i, f in enumerate(result.problems):  # a problem of an object (GPU008): its namespace
            ref = f.object
            if ref is not None:
                ns = in_namespaces(ref.kind, ref.namespace, targets)[:1]
                if ns and ns[0] != ref.namespace:
                    result.problems[i] = f.copy_with(object=replace(ref, namespace=ns[0]))


@record
class ReadOptions:
    """How `read_repo` reads: worker processes, the per-file cache, a progress line."""

    jobs: int = 1  # processes parsing files (1: in this process)
    cache: FileCache | None = None  # the per-file cache (engine/cache/files.py), or None
    progress: Any = None  # called with (files done, total) now and then, or None
    #: bytes already read, by path (check reads them first); emptied as the files are parsed
    data: dict[str, bytes] | None = None
    #: what the parser may leave out (core/reads.py; the engine passes rules/plan.py's)
    skim: SkimPlan = NOTHING_SKIPPED
    #: manifest bytes the whole run may read (config `max_total_bytes`); None: no limit
    max_total_bytes: int | None = None


#: fewer files than this are parsed in-process whatever --jobs says (worker start-up costs more)
PARALLEL_MIN_FILES = 200
#: the first files are parsed in this process; worker processes take the rest only when the
#: event builder had to read at least this share of those files' bytes. The line reader
#: (read/block_yaml.py) reads a file for less than a worker's result costs to encode and
#: decode (10k corpus: parse 0.6 s, encode 0.23 s, decode 0.4 s), so workers only pay for
#: files it leaves to the builder (about three times its cost)
SAMPLE_FILES = 128
BUILT_SHARE = 0.25
#: the main process's share of the parsing relative to one worker's (it also decodes theirs)
MAIN_SHARE = 0.8
_CHUNK = 64


def _parse_chunk(items: list[tuple[str, bytes, bool, str | None]], skim: SkimPlan) -> list[bytes]:
    """In a worker process: parse files, return each FileResult encoded (read/codec.py)."""
    from gpudrv_check.read.codec import encode

    return [
        encode(parse_manifest_bytes(rel, data, helm, skim, digest))
        for rel, data, helm, digest in items
    ]


def _parse_all(
    todo: list[tuple[int, str, bytes, bool]],
    jobs: int,
    tick,
    skim: SkimPlan = NOTHING_SKIPPED,
    encoded_out: dict[int, bytes] | None = None,
    digests: dict[int, str] | None = None,
) -> dict[int, FileResult]:
    """Parse files (index, rel, bytes, helm template?), in worker processes when worth it;
    the results are the same whatever the number of processes. `digests`: the SHA-256 of
    some of them, by index, already computed."""
    out: dict[int, FileResult] = {}
    known = digests or {}
    if jobs <= 1 or len(todo) < PARALLEL_MIN_FILES:
        for index, rel, data, helm in todo:
            out[index] = parse_manifest_bytes(rel, data, helm, skim, known.get(index))
            tick()
        return out
    sample, todo = todo[:SAMPLE_FILES], todo[SAMPLE_FILES:]
    built = event_built_bytes()
    out = _parse_all(sample, 1, tick, skim, digests=known)
    built = event_built_bytes() - built
    if built < BUILT_SHARE * sum(len(data) for _, _, data, _ in sample):
        jobs = 1  # the line reader read them: this process reads the rest faster alone
    out.update(_parse_workers(todo, jobs, tick, skim, encoded_out, known))
    return out


def _parse_workers(
    todo: list[tuple[int, str, bytes, bool]],
    jobs: int,
    tick,
    skim: SkimPlan,
    encoded_out: dict[int, bytes] | None,
    digests: dict[int, str],
) -> dict[int, FileResult]:
    """`_parse_all` past the sample: with worker processes when asked and worth it."""
    out: dict[int, FileResult] = {}
    if jobs <= 1 or len(todo) < PARALLEL_MIN_FILES:
        return _parse_all(todo, 1, tick, skim, digests=digests)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    chunks = [todo[i : i + _CHUNK] for i in range(0, len(todo), _CHUNK)]
    # this process parses some chunks itself while the workers do the others; it also decodes
    # what the workers send back, so it takes a smaller share (a chunk costs it 1/MAIN_SHARE)
    mine, theirs = [], []
    load_mine, load_theirs = 0.0, 0.0
    for chunk in chunks:
        if load_mine + 1 / MAIN_SHARE <= load_theirs + 1 / (jobs - 1):
            mine.append(chunk)
            load_mine += 1 / MAIN_SHARE
        else:
            theirs.append(chunk)
            load_theirs += 1 / (jobs - 1)
    from gpudrv_check.core.signals import kill_workers, worker_start

    try:
        pool = ProcessPoolExecutor(
            max_workers=jobs - 1,
            mp_context=context,
            initializer=worker_start,
            initargs=(os.getpid(),),
        )
    except (OSError, ValueError, NotImplementedError):
        return _parse_all(todo, 1, tick, skim, digests=digests)
    try:
        _share_out(pool, theirs, mine, out, tick, skim, encoded_out, digests)
    except BaseException:  # SIGINT/SIGTERM: the workers go now, not after their chunks
        kill_workers(pool)
        raise
    pool.shutdown(wait=True)
    return out


def _share_out(
    pool: Any,
    theirs: list[list[tuple[int, str, bytes, bool]]],
    mine: list[list[tuple[int, str, bytes, bool]]],
    out: dict[int, FileResult],
    tick: Any,
    skim: SkimPlan,
    encoded_out: dict[int, bytes] | None,
    digests: dict[int, str],
) -> None:
    """Hand `theirs` to the pool, parse `mine` here, and gather every result into `out`
    (`digests`: the content digest the caches name a file by, where it is known)."""
    from gpudrv_check.core.signals import signals_held
    from gpudrv_check.read.codec import decode

    with signals_held():  # the workers forked here start with SIGINT/SIGTERM held
        futures = [
            (
                chunk,
                pool.submit(
                    _parse_chunk, [(r, d, h, digests.get(i)) for i, r, d, h in chunk], skim
                ),
            )
            for chunk in theirs
        ]
    for chunk in mine:
        for index, rel, data, helm in chunk:
            out[index] = parse_manifest_bytes(rel, data, helm, skim, digests.get(index))
            tick()
    for chunk, future in futures:
        try:
            encoded = future.result()
        except Exception:  # noqa: BLE001 - a worker that died: parse here instead
            encoded = None
        for n, (index, rel, data, helm) in enumerate(chunk):
            if encoded:
                out[index] = decode(encoded[n])
                if encoded_out is not None:  # the cache stores these bytes as they are
                    encoded_out[index] = encoded[n]
            else:
                out[index] = parse_manifest_bytes(rel, data, helm, skim, digests.get(index))
            tick()


def _plan_key(plan: SkimPlan) -> tuple[list[str], ...]:
    """The skim plan as cache keys take it (sorted: a frozenset's order varies by process)."""
    return (sorted(plan.kinds), sorted(plan.node_status), sorted(plan.container))


def _how_read(
    files: list[FileRef],
    results: list[FileResult | None],
    hits: dict[int, tuple[str, bool, bytes | None]],
    helm_of: dict[int, bool],
    patches: dict[str, PatchRef],
    namespaces: dict[str, tuple],
) -> list[tuple[str, str]]:
    """Per file, how it was read: its digest and Helm flag, a Kustomize patch, or why it was
    not read, and the namespaces kustomizations build it into; a change in any of them
    changes the partition keys."""
    out = []
    for i, ref in enumerate(files):
        result = results[i]
        patch = patches.get(ref.rel)
        if i in hits:
            how = f"{hits[i][0]} helm={hits[i][1]}"
        elif i in helm_of and result is not None:
            how = f"{result.digest} helm={helm_of[i]}"
        elif patch is not None:
            how = f"patch of {patch.kustomization}:{patch.line} {patch.field}"
        else:
            assert result is not None
            how = "unread: " + "; ".join(f.message for f in result.problems)
        if ref.rel in namespaces:
            how += f" namespaces={namespaces[ref.rel]!r}"
        out.append((ref.rel, how))
    return out


def _unsettled(content: RepoContent, options: ReadOptions) -> None:
    """A file was read with other content than the caches took it at (an editor saved it
    while the run was under way): the run reports what it read, and stores nothing under the
    keys it planned with (the partition, capacity and whole-result entries)."""
    content.unsettled = True
    if isinstance(options.data, Prefetched):
        options.data.unsettled = True


def _helm(rel: str, templates: Iterable[str]) -> bool:
    """Whether a file is read as a Helm chart template (below a chart's `templates/`)."""
    return any(rel.startswith(prefix) for prefix in templates)


def _digests(source: Source) -> Callable[[str, bytes], str]:
    """How the caches name a file's content: its git object id for a git source (the id git
    lists, without hashing the bytes again: read_repo reads them from that object), else the
    SHA-256 of its bytes."""
    blob_digest = getattr(source, "blob_digest", None)

    def digest_of(rel: str, data: bytes) -> str:
        found = blob_digest(rel) if blob_digest is not None else None
        return found if found is not None else hashlib.sha256(data).hexdigest()

    return digest_of


def _reparse(
    source: Source,
    ref: FileRef,
    max_bytes: int,
    hit: tuple[str, bool, bytes | None],
    options: ReadOptions,
) -> FileResult:
    """A cache hit's file parsed again (its trees, asked for late, did not decode)."""
    file_digest, helm, _ = hit
    data = _late_bytes(source, ref, max_bytes, hit)
    if isinstance(data, FileResult):
        return data
    return parse_manifest_bytes(ref.rel, data, helm, options.skim, file_digest)


def _late_bytes(
    source: Source, ref: FileRef, max_bytes: int, hit: tuple[str, bool, bytes | None]
) -> bytes | FileResult:
    """A cache hit's bytes, when the run needs them after all: those read for its key, or
    read now (a FileResult: unreadable since)."""
    kept = hit[2]
    return kept if kept is not None else _read_bytes(source, ref, max_bytes)


def read_repo(
    source: Source,
    files: list[FileRef],
    max_bytes: int,
    options: ReadOptions | None = None,
) -> RepoContent:
    """Every manifest file of a listing, in path order."""
    options = options or ReadOptions()
    content = RepoContent()
    content.disk_names = dict(getattr(source, "disk_names", None) or {})
    templates = chart_template_dirs(files)
    held: dict[str, str] = getattr(options.data, "held", {})
    hashed: dict[str, str] = getattr(options.data, "digests", {})
    cache = options.cache
    if cache is not None:
        cache.open(source, (max_bytes, templates, *_plan_key(options.skim)))
    expect = getattr(source, "expect", None)  # a git source reads what it is told in one batch
    if cache is not None and expect is not None and held:
        # before any read (the kustomizations are read next): what the cache does not answer
        expect(
            [
                ref.rel
                for ref in files
                if ref.error is None
                and ref.size <= max_bytes
                and not (
                    ref.rel in held
                    and cache.knows(ref.rel, held[ref.rel], _helm(ref.rel, templates))
                )
            ]
        )
    patches, namespaces = kustomize_layout(source, files, max_bytes)
    total = len(files)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if options.progress is not None and (done % 100 == 0 or done == total):
            options.progress(done, total)

    results: list[FileResult | None] = [None] * total
    budget = _Budget(options.max_total_bytes)
    # cache hits (digest, helm, bytes; None: a held file not read, see Prefetched)
    hits: dict[int, tuple[str, bool, bytes | None]] = {}
    digest_of = _digests(source)
    todo: list[tuple[int, str, bytes, bool]] = []
    digests: dict[int, str] = {}  # the digests computed for the cache, not computed again
    for i, ref in enumerate(files):
        helm = _helm(ref.rel, templates)
        patch = patches.get(ref.rel)
        if patch is not None:
            results[i] = kustomize_patch_result(ref.rel, patch)
            tick()
            continue
        # taken out as used: the caller's copy of the bytes is not held for the whole run
        pre = options.data.pop(ref.rel, None) if options.data is not None else None
        fits = ref.error is None and ref.size <= max_bytes  # else not read: costs nothing
        spent = budget.take(ref.rel, len(pre) if pre is not None else ref.size if fits else 0)
        known = held.get(ref.rel) if pre is None and fits and cache is not None else None
        if spent is not None:
            data: bytes | FileResult = spent
        elif known is not None and cache is not None and cache.hit(ref.rel, known, helm):
            if cache.placeholders(ref.rel):
                content.placeholder_files.add(ref.rel)
            hits[i] = (known, helm, None)  # read only if the run decodes it and has no result
            tick()
            continue
        elif pre is not None and len(pre) <= max_bytes and ref.error is None:
            data = pre
        else:
            data = _read_bytes(source, ref, max_bytes)
        if isinstance(data, FileResult):
            results[i] = data
            tick()
            continue
        if b"${" in data:
            content.placeholder_files.add(ref.rel)
        file_digest = ""
        if cache is not None:
            file_digest = (hashed.get(ref.rel) if data is pre else None) or digest_of(ref.rel, data)
        # the digest the key was taken with: held by its stamp, or hashed when check read it
        # (a second reading, engine/run.py `load`, finds no bytes left to take: it reads the
        # file again, and an editor may have saved it between the two)
        expected = held.get(ref.rel) or hashed.get(ref.rel)
        if file_digest and expected and file_digest != expected:
            _unsettled(content, options)  # changed since the key was taken
        if cache is not None and cache.hit(ref.rel, file_digest, helm):
            hits[i] = (file_digest, helm, data)
            tick()
            continue
        if file_digest:
            digests[i] = file_digest
        todo.append((i, ref.rel, data, helm))
    encoded: dict[int, bytes] = {}
    parsed_all = _parse_all(todo, options.jobs, tick, options.skim, encoded, digests)
    for i, parsed in parsed_all.items():
        results[i] = parsed
    forget_lines()  # the line reader's memo of this run's lines: not needed past the read
    # the bytes parsed are not needed past here: let them go (a large repo's are tens of MB)
    parsed_files = [(i, rel, helm) for i, rel, _, helm in todo]
    del todo, parsed_all
    if cache is not None:
        for i, rel, helm in parsed_files:
            result = results[i]
            assert result is not None
            cache.add(result, helm, encoded.get(i), rel in content.placeholder_files)
        helm_of = {i: helm for i, _, helm in parsed_files}
        how = _how_read(files, results, hits, helm_of, patches, namespaces)
        content.plan = cache.partitions(how, namespaces)
    if expect is not None and cache is not None:  # the hits this run reads late: one batch
        expect(
            [
                ref.rel
                for i, ref in enumerate(files)
                if i in hits
                and hits[i][2] is None
                and (content.plan is None or content.plan.decode(ref.rel))
                and not cache.has_result(ref.rel)
            ]
        )
    for i, ref in enumerate(files):
        if content.plan is not None and not content.plan.decode(ref.rel):
            assert cache is not None  # a file with no summary is shared: always decoded
            objects, skipped = cache.unread(ref.rel)
            results[i] = None
            content.unread_files += 1
            content.unread_objects += objects
            content.unread_skipped += skipped
        elif i in hits:
            assert cache is not None
            decoded = cache.result(
                ref.rel, partial(_reparse, source, ref, max_bytes, hits[i], options)
            )
            if decoded is None:  # not stored yet (or damaged): read, and stored from now on
                file_digest, helm, kept = hits[i]
                late = _late_bytes(source, ref, max_bytes, hits[i])
                if isinstance(late, FileResult):
                    decoded = late  # unreadable since its stamp was taken
                    _unsettled(content, options)
                else:
                    # bytes read this run were hashed as they were read (their hit's digest)
                    now = file_digest if kept is not None else digest_of(ref.rel, late)
                    decoded = parse_manifest_bytes(ref.rel, late, helm, options.skim, now)
                    if now == file_digest:  # not changed since its stamp either
                        cache.needed(decoded)
                    else:
                        _unsettled(content, options)
            results[i] = decoded
    if cache is not None:
        cache.save()
    content.files = [r for r in results if r is not None]
    _apply_namespaces(content.files, namespaces)
    charts = chart_findings(files, templates)
    for result in content.files:
        if result.rel in charts:
            result.problems.append(charts[result.rel])
    return content
