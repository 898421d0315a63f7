"""Manifests → the node inventory: `kind: Node` objects and compact `NodeInventory` files."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from gpudrv_check.core.finding import QUOTE_LIMIT, Finding, ObjectRef, Severity, quoted
from gpudrv_check.core.label_reads import NodeLabels, entries
from gpudrv_check.core.located import (
    LMap,
    Path,
    encode_tree,
    field_path_text,
    scalar_text,
    schema_error_path,
    type_name,
)
from gpudrv_check.core.manifest import CachedManifest, Manifest
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.k8s.labels import (
    dns1123_subdomain_errors,
    label_key_errors,
    label_value_errors,
    labels_valid,
)
from gpudrv_check.k8s.numbers import TOO_LARGE, too_large
from gpudrv_check.k8s.quantity import milli_value, quantity_value
from gpudrv_check.k8s.resources import NEGATIVE, NOT_INTEGER, is_integer_resource
from gpudrv_check.model.node import Node, entry_to_object_path
from gpudrv_check.read.policy import builtin, default_severity

INVENTORY_API = "gpudrv-check.io/v1alpha1"
INVENTORY_KIND = "NodeInventory"


def _rejected(manifest: Manifest) -> str:
    """The rule of a value that cannot be: in a `kind: Node` object it is the API server's
    rejection (GPU040, as for any object); in a NodeInventory entry, the entry is malformed
    (GPU005): no API server reads that file, the checker's schema and reader do."""
    return builtin("invalid-inventory" if is_inventory(manifest) else "invalid-field").id


def _finding(
    rule: str,
    manifest: Manifest,
    path: Path,
    message: str,
    hint: str,
    node: str | None,
    severity: Severity | None = None,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity or default_severity(rule),
        message=message,
        hint=hint,
        location=manifest.location(path),
        object=ObjectRef(kind="Node", name=node) if node else manifest.ref,
        path=list(_object_path(manifest, path) if node else path),
    )


def _object_path(manifest: Manifest, path: Path) -> Path:
    """Inside an inventory entry, the path as the Node object would have it (no list index)."""
    if is_inventory(manifest) and len(path) >= 2 and path[0] == "nodes":
        return entry_to_object_path(tuple(path[2:]))
    return path


def _string_map(
    manifest: Manifest,
    path: Path,
    what: str,
    node: str,
    findings: list[Finding],
    warn_typed: bool,
) -> dict[str, str]:
    """A labels/annotations-like map read as strings, as the API server would store them."""
    value = manifest.get(*path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        findings.append(
            _finding(
                _rejected(manifest),
                manifest,
                path,
                f"{what}s must be a mapping of strings, not a {type_name(value)}",
                f"Write {what} as `key: value` lines.",
                node,
            )
        )
        return {}
    if all(item.__class__ is str for item in value.values()):
        return dict(value)  # the usual map, every value a string as written
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            out[key] = ""  # JSON null into a string leaves it empty
            continue
        text = scalar_text(value, key)
        if text is None:
            findings.append(
                _finding(
                    _rejected(manifest),
                    manifest,
                    (*path, key),
                    f"{what} {quoted(key)} must be a string, not a {type_name(item)}",
                    "Label and annotation values are strings.",
                    node,
                )
            )
            continue
        if warn_typed and not isinstance(item, str):
            findings.append(_typed_label(manifest, (*path, key), what, item, text, node))
        out[key] = text
    return out


def _shown(text: str) -> str:
    """A value as the API server quotes it (`"GPU_2"`), cut as `quoted` cuts: a hostile file's
    megabyte label makes no megabyte message."""
    if len(text) <= QUOTE_LIMIT:
        return json.dumps(text, ensure_ascii=False)
    return json.dumps(text[:QUOTE_LIMIT], ensure_ascii=False) + f"… ({len(text)} characters)"


def _labels(manifest: Manifest, path: Path, node: str, findings: list[Finding]) -> dict[str, str]:
    """A node's labels, each key and value checked as apimachinery `ValidateLabels` does for the
    Node's metadata (`ValidateObjectMeta`); a label the API server refuses is reported at its
    key and still read as written, as a workload's labels are (model/workload.py)."""
    plain = _string_map(manifest, path, "label", node, findings, True)
    # a NodeLabels records which values the run reads (core/label_reads.py): validating them
    # here reads the plain copy, which is no rule's reading
    labels = NodeLabels(plain)
    if labels_valid(plain):
        return labels
    where = field_path_text(path)
    for key, text in plain.items():
        for errors, shown, fix in (
            (label_key_errors(key), key, _LABEL_KEY_FIX),
            (label_value_errors(text), text, _LABEL_VALUE_FIX),
        ):
            if errors:
                message = f"{where}: Invalid value: {_shown(shown)}: {'; '.join(errors)}"
                findings.append(
                    _finding(_rejected(manifest), manifest, (*path, key), message, fix, node)
                )
    return labels


_LABEL_KEY_FIX = (
    "Write the label key as [prefix/]name: a DNS subdomain prefix, and a name of at most 63 "
    "alphanumerics, '-', '_' or '.', starting and ending alphanumeric."
)
_LABEL_VALUE_FIX = (
    "Write the label value as at most 63 alphanumerics, '-', '_' or '.', starting and ending "
    'alphanumeric (or empty, `""`).'
)


def _name_problem(manifest: Manifest, path: Path, name: str, findings: list[Finding]) -> None:
    """pkg/apis/core/validation `ValidateNodeName` (apimachinery `NameIsDNSSubdomain`): the
    API server refuses a Node named otherwise. The node is still read, under that name."""
    errors = dns1123_subdomain_errors(name)
    if errors:
        message = f"{field_path_text(path)}: Invalid value: {_shown(name)}: {'; '.join(errors)}"
        fix = (
            "Name the node as a lowercase RFC 1123 subdomain, at most 253 characters of lowercase "
            f"letters, digits, '-' and '.' (e.g. `{_suggested_name(name)}`)."
        )
        findings.append(_finding(_rejected(manifest), manifest, path, message, fix, name))


def _suggested_name(name: str) -> str:
    """The name lowercased, other characters as '-': what a hostname of that node would be."""
    text = "".join(c if c.isascii() and (c.isalnum() or c in ".-") else "-" for c in name.lower())
    return text.strip("-.")[:253] or "gpu-1"


def _typed_label(
    manifest: Manifest, path: Path, what: str, item: object, text: str, node: str
) -> Finding:
    """GPU007: a label value written as a number or boolean. The API server decodes labels
    into a map of strings and refuses the object; the checker reads the text that was meant.
    The wording and the fix follow the file: YAML `pool: "1"`, JSON `"pool": "1"`."""
    key = str(path[-1])
    kind = "boolean" if isinstance(item, bool) else "number"
    if manifest.file.lower().endswith(".json"):
        language, fix = "JSON", f"{json.dumps(key)}: {json.dumps(text)}"
    else:
        language, fix = "YAML", f'{key}: "{text}"'
    return _finding(
        builtin("label-value-not-string").id,
        manifest,
        path,
        f"{what} {quoted(key)} is written as a {language} {kind} ({text}); the API server "
        "rejects non-string label values",
        f"Quote it: `{fix}`.",
        node,
    )


def _quantities(
    manifest: Manifest, path: Path, node: str, findings: list[Finding]
) -> dict[str, str]:
    """A node's capacity or allocatable, without the quantities the API server refuses (each
    reported at its key): the model never counts an amount that cannot be."""
    value = manifest.get(*path)
    if not isinstance(value, dict):
        return {}
    out = {}
    for key in value:
        text = scalar_text(value, key)
        problem = _quantity_problem(key, value[key], text)
        if problem is not None:
            message, fix = problem
            where = field_path_text((*path, key))
            findings.append(
                _finding(
                    _rejected(manifest), manifest, (*path, key), f"{where}: {message}", fix, node
                )
            )
            continue
        if text is not None:
            out[key] = text
    return out


#: `_check_quantity` by resource, type written and text: a fleet's nodes write the same few
#: amounts thousands of times (10k corpus: 12,000 amounts, 5 distinct)
_QUANTITY_PROBLEMS: TextMemo[tuple[str, str] | None] = TextMemo()


def _quantity_problem(key: str, raw: object, text: str | None) -> tuple[str, str] | None:
    """`_check_quantity`, once per resource, type and text (all it reads of `raw`: the text is
    the raw value as written)."""
    if text is None:
        return _check_quantity(key, raw, text)
    memo_key = f"{key}\0{raw.__class__.__name__}\0{text}"
    return _QUANTITY_PROBLEMS.by_text(memo_key, _check_quantity, key, raw, text)


def _check_quantity(key: str, raw: object, text: str | None) -> tuple[str, str] | None:
    """Why the API server refuses a node's quantity, and the fix; None when it takes it.

    The text must parse (apimachinery resource `ParseQuantity`, when the Node is decoded), then
    pkg/apis/core/validation `ValidateNodeResources` checks each capacity and allocatable amount
    with `ValidateResourceQuantityValue`: not negative, and a whole number for the integer
    resources (`pods` and extended resources such as nvidia.com/gpu)."""
    if text is None:
        return f"must be a quantity, not a {type_name(raw)}", _QUANTITY_FIX
    if key == "nvidia.com/gpu" and too_large(text):
        return f"{quoted(text)} is {TOO_LARGE}", "Write the number of GPUs the node has, e.g. `8`."
    amount, why = quantity_value(raw)
    shown = _shown(text.strip())
    if amount is None:
        return f"Invalid value: {shown}: {why}", _QUANTITY_FIX
    if amount < 0:
        return f"Invalid value: {shown}: {NEGATIVE}", "Write the amount the node has, 0 or more."
    if is_integer_resource(key) and milli_value(amount) % 1000:
        return f"Invalid value: {shown}: {NOT_INTEGER}", f"Write a whole number of {key}, e.g. `8`."
    return None


_QUANTITY_FIX = (
    "Write a Kubernetes quantity: a number with an optional suffix, e.g. `8`, `500m`, `64Gi`."
)


def _taint_fix(path: tuple, message: str) -> str:
    """The fix of one taint problem (k8s/taints.py `validate_taints`)."""
    field = path[-1] if path else None
    if message.startswith("duplicate taint"):
        return "Keep one taint per key and effect: remove the repeated one."
    if field == "key" and message == "required":
        return "Give the taint a key (a label key, e.g. `nvidia.com/gpu`)."
    if field == "effect":
        return "Give the taint an effect: NoSchedule, PreferNoSchedule or NoExecute."
    if field in ("key", "value"):
        return f"Write the taint's {field} as a label {field}."
    return (
        "A taint is `{key, value, effect}` with effect NoSchedule, PreferNoSchedule or NoExecute."
    )


def _taints(manifest: Manifest, path: Path, node: str, findings: list[Finding]) -> list[dict]:
    value = manifest.get(*path)
    if value is None:
        return []
    from gpudrv_check.k8s.taints import validate_taints

    problems = validate_taints(value)
    bad_items = set()
    for problem in problems:
        full = (*path, *problem.path)
        where = field_path_text(full)
        findings.append(
            _finding(
                _rejected(manifest),
                manifest,
                full,
                f"{where}: {problem.message}",
                _taint_fix(problem.path, problem.message),
                node,
            )
        )
        if problem.path and isinstance(problem.path[0], int):
            bad_items.add(problem.path[0])
    if not isinstance(value, list):
        return []
    return [t for i, t in enumerate(value) if i not in bad_items and isinstance(t, dict)]


def _node_from_object(manifest: Manifest, findings: list[Finding]) -> Node | None:
    if not manifest.name:
        findings.append(
            _finding(
                _rejected(manifest),
                manifest,
                ("metadata", "name"),
                "Node without metadata.name; skipped",
                "Every Node has a name.",
                None,
            )
        )
        return None
    name = manifest.name
    _name_problem(manifest, ("metadata", "name"), name, findings)
    unschedulable = manifest.get("spec", "unschedulable")
    if unschedulable is not None and not isinstance(unschedulable, bool):
        findings.append(
            _finding(
                _rejected(manifest),
                manifest,
                ("spec", "unschedulable"),
                "spec.unschedulable must be true or false",
                "Write `unschedulable: true`.",
                name,
            )
        )
        unschedulable = False
    return Node(
        name=name,
        labels=_labels(manifest, ("metadata", "labels"), name, findings),
        annotations=_string_map(
            manifest, ("metadata", "annotations"), "annotation", name, findings, False
        ),
        taints=_taints(manifest, ("spec", "taints"), name, findings),
        unschedulable=bool(unschedulable),
        capacity=_quantities(manifest, ("status", "capacity"), name, findings),
        allocatable=_quantities(manifest, ("status", "allocatable"), name, findings),
        manifest=manifest,
    )


@lru_cache(maxsize=1)
def _inventory_validator() -> Any:
    from jsonschema import Draft202012Validator

    from gpudrv_check.read.packaged import packaged_json

    schema = packaged_json("schemas", "inventory.schema.json")
    return Draft202012Validator(schema)


#: JSON Schema's type names as a person reading YAML says them
_TYPE_WORDS = {"object": "mapping", "array": "list"}


def _field(path: Any) -> str:
    """`nodes[0].name` for a jsonschema error's path; "the document" for its root."""
    return field_path_text(tuple(path)) or "the document"


def _value_text(value: Any) -> str:
    """A value as YAML shows it (`null`, `"x"`, `12`), or its type when long."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= 40 else f"a {type_name(value)}"


def _short_message(error: Any) -> str:
    """What is wrong, in the document's words: the field, what it must be, what it is
    (jsonschema's own message quotes Python values: `None is not of type 'string'`)."""
    where, expected = _field(error.absolute_path), error.validator_value
    if error.validator == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        words = " or ".join(f"a {_TYPE_WORDS.get(k, k)}" for k in kinds)
        return f"{where} must be {words}, not {_value_text(error.instance)}"
    if error.validator == "const":
        return f"{where} must be {_value_text(expected)}, not {_value_text(error.instance)}"
    if error.validator == "enum" and isinstance(expected, list):
        options = ", ".join(_value_text(v) for v in expected)
        return f"{where} must be one of {options}, not {_value_text(error.instance)}"
    message = error.message
    shown = repr(error.instance)
    if len(shown) > 80 and shown in message:
        message = message.replace(shown, f"a {type_name(error.instance)}", 1)
    return message


def _nodes_from_inventory(manifest: Manifest, findings: list[Finding]) -> list[Node]:
    validator = _inventory_validator()
    bad_nodes: set[int] = set()
    doc_ok = True
    errors = sorted(validator.iter_errors(manifest.data), key=lambda e: list(map(str, e.path)))
    for error in errors:
        path = schema_error_path(error)
        if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
            bad_nodes.add(path[1])
        else:
            doc_ok = False
        findings.append(
            _finding(
                builtin("invalid-inventory").id,
                manifest,
                path,
                f"inventory: {_short_message(error)}",
                "See schemas/inventory.schema.json for the NodeInventory format.",
                None,
            )
        )
    if not doc_ok:
        return []
    nodes = []
    for index, entry in enumerate(manifest.data.get("nodes") or []):
        if index in bad_nodes or not isinstance(entry, LMap):
            continue
        base: Path = ("nodes", index)
        name = entry["name"]
        _name_problem(manifest, (*base, "name"), name, findings)
        unschedulable = entry.get("unschedulable", False)
        nodes.append(
            Node(
                name=name,
                labels=_labels(manifest, (*base, "labels"), name, findings),
                annotations=_string_map(
                    manifest, (*base, "annotations"), "annotation", name, findings, False
                ),
                taints=_taints(manifest, (*base, "taints"), name, findings),
                unschedulable=unschedulable is True,
                capacity=_quantities(manifest, (*base, "capacity"), name, findings),
                allocatable=_quantities(manifest, (*base, "allocatable"), name, findings),
                manifest=manifest,
                labels_path=(*base, "labels"),
                name_path=(*base, "name"),
                taints_path=(*base, "taints"),
                unschedulable_path=(*base, "unschedulable"),
            )
        )
    return nodes


def is_inventory(manifest: Manifest) -> bool:
    return manifest.kind == INVENTORY_KIND and manifest.api_version.startswith("gpudrv-check.io/")


_NODE_FACTS = ("labels", "annotations", "taints", "unschedulable", "capacity", "allocatable")


def _same_node(a: Node, b: Node) -> bool:
    """Whether two definitions of a node say the same (wherever they are written)."""
    return all(getattr(a, fact) == getattr(b, fact) for fact in _NODE_FACTS)


def node_file_facts(manifests: list[Manifest]) -> tuple | None:
    """What `build_inventory` makes of each object of a file of `kind: Node` objects, as
    builtin values the per-file cache keeps with the file (engine/cache/files.py): per object,
    its node's fields (None: no node, a nameless object) and its findings' records. A run that
    finds the file unchanged builds its nodes from them (`_node_from_facts`) without decoding
    their trees (core/manifest.py `CachedManifest`). None for any other file."""
    out = []
    for manifest in manifests:
        if manifest.kind != "Node" or manifest.api_version != "v1":
            return None
        findings: list[Finding] = []
        node = _node_from_object(manifest, findings)
        fields = None
        if node is not None:
            fields = (
                node.name,
                entries(node.labels),  # a plain copy: no value counts as read
                node.annotations,
                [encode_tree(taint) for taint in node.taints],  # located, as read
                node.unschedulable,
                node.capacity,
                node.allocatable,
            )
        out.append((fields, tuple(f.record() for f in findings)))
    return tuple(out)


def loaded_node_facts(value: Any) -> tuple | None:
    """One object's `node_file_facts` read back from the cache, as `_node_from_facts` takes
    them (its findings and taints made objects again), or None when the value has not that
    shape (a cached value is checked by exact class, never trusted)."""
    from gpudrv_check.read.codec import decode_tree

    if value.__class__ is not tuple or len(value) != 2 or value[1].__class__ is not tuple:
        return None
    fields, records = value
    try:
        findings = [Finding.from_record(record) for record in records]
    except ValueError:
        return None
    if fields is None:
        return (None, findings)
    if fields.__class__ is not tuple or len(fields) != 7:
        return None
    name, labels, annotations, taints, unschedulable, capacity, allocatable = fields
    if not (
        name.__class__ is str
        and _string_dict(labels)
        and _string_dict(annotations)
        and taints.__class__ is list
        and unschedulable.__class__ is bool
        and _string_dict(capacity)
        and _string_dict(allocatable)
    ):
        return None
    decoded = []
    for taint in taints:
        tree = decode_tree(taint)
        if tree is None or tree.__class__ is not LMap:
            return None
        decoded.append(tree)
    fields = (name, labels, annotations, decoded, unschedulable, capacity, allocatable)
    return (fields, findings)


def _string_dict(value: Any) -> bool:
    return value.__class__ is dict and all(
        k.__class__ is str and v.__class__ is str for k, v in value.items()
    )


def _node_from_facts(manifest: CachedManifest, findings: list[Finding]) -> Node | None:
    """`_node_from_object` of an unchanged node file's object, from what it gave when the
    file was cached (`node_file_facts`, read back by `loaded_node_facts`): the same node and
    findings, and no tree decoded."""
    fields, found = manifest.facts
    findings.extend(found)
    if fields is None:
        return None
    name, labels, annotations, taints, unschedulable, capacity, allocatable = fields
    # each call its own containers, as `_node_from_object` makes them (each cluster of a repo
    # builds its nodes from the same objects)
    return Node(
        name=name,
        labels=NodeLabels(labels),
        annotations=dict(annotations),
        taints=list(taints),
        unschedulable=unschedulable,
        capacity=dict(capacity),
        allocatable=dict(allocatable),
        manifest=manifest,
    )


def build_inventory(manifests: list[Manifest]) -> tuple[list[Node], list[Finding]]:
    """All nodes of the repo, in file order; a repeated name is reported and the first kept."""
    findings: list[Finding] = []
    nodes: list[Node] = []
    for manifest in manifests:
        if manifest.kind == "Node" and manifest.api_version == "v1":
            if manifest.__class__ is CachedManifest and manifest.facts is not None:
                node = _node_from_facts(manifest, findings)
            else:
                node = _node_from_object(manifest, findings)
            if node is not None:
                nodes.append(node)
        elif is_inventory(manifest):
            nodes.extend(_nodes_from_inventory(manifest, findings))
    unique: dict[str, Node] = {}
    seen: dict[str, int] = {}  # name -> definitions so far
    for node in nodes:
        first = unique.get(node.name)
        if first is None:
            unique[node.name] = node
            seen[node.name] = 1
            continue
        if first.manifest.file != node.manifest.file and _same_node(first, node):
            continue  # the same node copied into another file is one node (issue 13)
        seen[node.name] += 1
        where = first.location(first.name_path)
        again = "twice" if seen[node.name] == 2 else f"{seen[node.name]} times"
        findings.append(
            Finding(
                rule=builtin("duplicate-node").id,
                severity=builtin("duplicate-node").severity,
                message=f"node {quoted(node.name)} is defined {again} (first at {where}); "
                "the first definition is used",
                hint="Remove the stale entry.",
                location=node.location(node.name_path),
                object=node.ref,
                path=list(node.name_path),
            )
        )
    return list(unique.values()), findings
