"""`kubectl get nodes` → a compact NodeInventory: only what the checker reads, sorted, stable.

The export is read by the checker's own reader (so a node means here what it means to `check`:
the same label, taint and quantity rules, the same findings for what is wrong), and each node
is written back with the facts the rules use:

- labels of the families the rules and common node selectors read (`KEPT_LABELS`), plus any
  prefix given with `--labels-prefix`; labels without a prefix (`pool: gpu`) are kept;
- the annotations the checker reads (`nvidia.com/`, `gpudrv-check.io/`);
- valid taints (without `timeAdded`), `unschedulable` when true;
- every `capacity` and `allocatable` quantity (a node has about ten; every one counts in
  scheduling).

Nothing that changes while the cluster does not is kept: no conditions, heartbeats, images,
addresses, resource versions or timestamps, so importing an unchanged cluster again gives the
same bytes. The header says what the file was made from and when the newest node joined.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.records import record
from gpudrv_check.model.inventory import (
    INVENTORY_API,
    INVENTORY_KIND,
    build_inventory,
    is_inventory,
)
from gpudrv_check.model.node import Node
from gpudrv_check.read.manifests import parse_manifest_bytes

#: label prefixes kept by default: what the rules read (GFD/operator `nvidia.com/`, NFD's
#: kernel, OS and PCI features) and what node selectors of GPU workloads commonly name
#: (well-known Kubernetes labels, cloud node-pool and accelerator labels)
KEPT_LABELS: tuple[str, ...] = (
    "nvidia.com/",
    "feature.node.kubernetes.io/kernel-version.",
    "feature.node.kubernetes.io/system-os_release.",
    "feature.node.kubernetes.io/pci-",
    "kubernetes.io/",
    "node.kubernetes.io/",
    "topology.kubernetes.io/",
    "node-role.kubernetes.io/",
    "beta.kubernetes.io/",
    "failure-domain.beta.kubernetes.io/",
    "cloud.google.com/",
    "eks.amazonaws.com/",
    "karpenter.sh/",
    "karpenter.k8s.aws/",
    "kubernetes.azure.com/",
    "node.openshift.io/",
    "amd.com/",
)
#: annotations the checker reads
KEPT_ANNOTATIONS: tuple[str, ...] = ("nvidia.com/", "gpudrv-check.io/")
HEADER_MARK = "#:"  # the lines of the header `inventory import` writes (and rewrites)

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
# words YAML 1.1 readers (and some 1.2 ones) take for booleans or null
_RESERVED = frozenset(
    "y yes n no on off true false null".split()  # compared lower-cased
)


class ImportError_(Exception):
    """The input is not a node export; nothing is written."""


@record
class Imported:
    """The nodes of one export, and what the reader found wrong in it."""

    source: str
    nodes: list[Node]
    findings: list[Finding] = field(default_factory=list)
    shape: str = ""  # "a List of 3 Node objects", "a Node"
    skipped_items: int = 0  # List items that are not Nodes
    newest: str | None = None  # the newest metadata.creationTimestamp


def read_export(name: str, data: bytes) -> Imported:
    """The nodes of a `kubectl get nodes -o json|yaml` export (a List, NodeList or Nodes; also
    a NodeInventory, which comes out normalised)."""
    result = parse_manifest_bytes(name, data)
    manifests = result.manifests
    nodes_m = [
        m for m in manifests if (m.kind == "Node" and m.api_version == "v1") or is_inventory(m)
    ]
    if not nodes_m:
        errors = [f for f in result.problems if f.severity.value == "error"]
        if errors:
            first = errors[0]
            raise ImportError_(f"{first.location}: {first.message}")
        raise ImportError_(
            f"{name}: no Node object found (expected the output of `kubectl get nodes -o json`)"
        )
    nodes, findings = build_inventory(nodes_m)
    objects = [m for m in nodes_m if m.kind == "Node"]
    plural = "s" if len(objects) != 1 else ""
    if not objects:
        shape = "a NodeInventory"
    elif any(m.item is not None for m in objects):
        shape = f"a List of {len(objects)} Node object{plural}"
    else:
        shape = f"{len(objects)} Node object{plural}"
    stamps = [
        stamp
        for m in nodes_m
        if isinstance(meta := m.data.get("metadata"), dict)
        and isinstance(stamp := meta.get("creationTimestamp"), str)
    ]
    return Imported(
        source=name,
        nodes=sorted(nodes, key=lambda n: n.name),
        findings=[*result.problems, *findings],
        shape=shape,
        skipped_items=len(manifests) - len(nodes_m),
        newest=max(stamps) if stamps else None,
    )


def _kept(key: str, prefixes: Iterable[str]) -> bool:
    return "/" not in key or any(key.startswith(p) for p in prefixes)


def entry(node: Node, label_prefixes: Sequence[str] = ()) -> dict[str, Any]:
    """One NodeInventory entry: plain, sorted values."""
    prefixes = (*KEPT_LABELS, *label_prefixes)
    out: dict[str, Any] = {"name": node.name}
    labels = {k: v for k, v in node.labels.items() if _kept(k, prefixes)}
    if labels:
        out["labels"] = dict(sorted(labels.items()))
    annotations = {
        k: v for k, v in node.annotations.items() if any(k.startswith(p) for p in KEPT_ANNOTATIONS)
    }
    if annotations:
        out["annotations"] = dict(sorted(annotations.items()))
    taints = [
        {k: str(t[k]) for k in ("key", "value", "effect") if t.get(k) not in (None, "")}
        for t in node.taints
    ]
    if taints:
        out["taints"] = sorted(taints, key=lambda t: (t["key"], t.get("value", ""), t["effect"]))
    if node.unschedulable:
        out["unschedulable"] = True
    for section in ("capacity", "allocatable"):
        values = getattr(node, section)
        if values:
            out[section] = dict(sorted(values.items()))
    return out


def _quoted(text: str) -> str:
    """`text` double-quoted: JSON escapes are YAML double-quoted escapes, except that JSON
    writes a character beyond U+FFFF as a surrogate pair (`\\ud83d\\ude80`), which YAML
    rejects: those are written `\\U0001F680`."""
    if all(ord(char) <= 0xFFFF for char in text):
        return json.dumps(text)
    body = "".join(
        f"\\U{ord(char):08X}" if ord(char) > 0xFFFF else json.dumps(char)[1:-1] for char in text
    )
    return f'"{body}"'


def _scalar(text: str) -> str:
    """A map key or name: plain when YAML reads it back as the same string, else quoted."""
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return _quoted(text)


def _value(text: str) -> str:
    return _quoted(text)


def header(imported: Imported, label_prefixes: Sequence[str] = ()) -> list[str]:
    nodes = len(imported.nodes)
    text = (
        f"NodeInventory of {nodes} node{'s' if nodes != 1 else ''} imported from"
        f" {imported.source} ({imported.shape})."
    )
    if imported.newest:
        text += f" The newest node was created {imported.newest}."
    extra = sorted(set(label_prefixes) - set(KEPT_LABELS))
    text += (
        " Kept: the label families of docs/inventory.md"
        + (f" and {', '.join(extra)}" if extra else "")
        + ", nvidia.com/ and gpudrv-check.io/ annotations, taints, unschedulable, capacity"
        " and allocatable."
        " Not kept: conditions, images, addresses, times."
        " Made by `kubectl get nodes -o json | gpudrv-check inventory import -`."
    )
    width = 100 - len(HEADER_MARK) - 1
    return [f"{HEADER_MARK} {line}" for line in textwrap.wrap(text, width, break_on_hyphens=False)]


def render(imported: Imported, label_prefixes: Sequence[str] = ()) -> str:
    """The NodeInventory text: block style, one fact per line, so a change is a small diff."""
    lines = header(imported, label_prefixes)
    lines += [f"apiVersion: {INVENTORY_API}", f"kind: {INVENTORY_KIND}"]
    entries = [entry(node, label_prefixes) for node in imported.nodes]
    if not entries:
        lines.append("nodes: []")
        return "\n".join(lines) + "\n"
    lines.append("nodes:")
    for item in entries:
        lines.append(f"- name: {_scalar(item['name'])}")
        for section in ("labels", "annotations"):
            if section in item:
                lines.append(f"  {section}:")
                lines += [f"    {_scalar(k)}: {_value(v)}" for k, v in item[section].items()]
        if "taints" in item:
            lines.append("  taints:")
            for taint in item["taints"]:
                body = ", ".join(f"{k}: {_value(v)}" for k, v in taint.items())
                lines.append(f"  - {{{body}}}")
        if item.get("unschedulable"):
            lines.append("  unschedulable: true")
        for section in ("capacity", "allocatable"):
            if section in item:
                lines.append(f"  {section}:")
                lines += [f"    {_scalar(k)}: {_value(v)}" for k, v in item[section].items()]
    return "\n".join(lines) + "\n"


# --- updating a file in place, keeping its comments -------------------------------------------

_NODE_START = re.compile(r"- name: (?P<name>.+?)\s*\Z")
_SECTION = re.compile(r"  (?P<section>[a-z]+):\s*\Z")
_ITEM = re.compile(r"    (?P<key>\S.*?): ")
_TAINT = re.compile(r"  - \{")


def _split_comment(line: str) -> tuple[str, str]:
    """`body`, `  # comment` (or "") of one line: a `#` after a space, outside double quotes."""
    quoted_ = False
    escaped = False
    for i, char in enumerate(line):
        if quoted_:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted_ = False
        elif char == '"':
            quoted_ = True
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            body = line[:i].rstrip()
            return body, line[len(body) :]
    return line, ""


def _name_of(text: str) -> str:
    text = text.strip()
    if text.startswith('"'):
        try:
            return str(json.loads(text))
        except ValueError:
            return text
    return text


def _identities(lines: list[str]) -> list[tuple[Any, ...] | None]:
    """For each line of a rendered inventory, what it says (None: not a node fact)."""
    out: list[tuple[Any, ...] | None] = []
    node: str | None = None
    section: str | None = None
    taint = 0
    for raw in lines:
        line, _ = _split_comment(raw)
        if not line.strip():
            out.append(None)
            continue
        if m := _NODE_START.match(line):
            node, section, taint = _name_of(m["name"]), None, 0
            out.append((node,))
        elif node is not None and (m := _SECTION.match(line)):
            section = m["section"]
            out.append((node, section))
        elif node is not None and section == "taints" and _TAINT.match(line):
            out.append((node, "taints", line.strip()))
            taint += 1
        elif node is not None and section and (m := _ITEM.match(line)):
            out.append((node, section, _name_of(m["key"])))
        elif node is not None and line.startswith("  unschedulable:"):
            out.append((node, "unschedulable"))
        else:
            out.append(None)
    return out


BOM = b"\xef\xbb\xbf"


def split_encoding(data: bytes) -> tuple[str, bool, bool]:
    """(text with `\\n` line ends, had a UTF-8 byte order mark, used CRLF line ends) of an
    inventory file; raises UnicodeDecodeError for bytes that are not UTF-8."""
    bom = data.startswith(BOM)
    text = data[len(BOM) :].decode("utf-8") if bom else data.decode("utf-8")
    crlf = "\r\n" in text
    return (text.replace("\r\n", "\n") if crlf else text), bom, crlf


def join_encoding(text: str, bom: bool, crlf: bool) -> bytes:
    """`text` written back the way `split_encoding` found the file."""
    if crlf:
        text = text.replace("\n", "\r\n")
    return (BOM if bom else b"") + text.encode("utf-8")


_DOC_MARK = re.compile(r"(---|\.\.\.)(\s|\Z)")


def _content(line: str) -> bool:
    """A line that holds YAML content: not blank, not a comment, not a directive."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("#", "%"))


def check_updatable(name: str, existing: str) -> None:
    """Raise ImportError_ when `update` cannot rewrite ``existing`` without losing part of it:
    a file of more than one YAML document (`update` writes one, the others would be dropped)
    or a JSON / flow-style file (`update` writes block YAML, one fact per line)."""
    lines = existing.splitlines()
    first = next(
        (line.strip() for line in lines if _content(line) and not _DOC_MARK.match(line)), ""
    )
    if first.startswith(("{", "[")):
        raise ImportError_(
            f"{name} is JSON (or flow-style YAML); --write rewrites it as block YAML: convert it "
            "by hand first, or use --output FILE; nothing written"
        )
    seen = False
    for number, line in enumerate(lines, 1):
        if _DOC_MARK.match(line):
            if seen and any(
                _content(rest) and not _DOC_MARK.match(rest) for rest in lines[number:]
            ):
                raise ImportError_(
                    f"{name}:{number}: holds more than one YAML document; --write would keep only "
                    "the NodeInventory and drop the others: move them to another file, or use "
                    "--output FILE; nothing written"
                )
        elif _content(line):
            seen = True


def update(existing: str, imported: Imported, label_prefixes: Sequence[str] = ()) -> str:
    """The new inventory text for a file that holds `existing`, keeping the reader's comments.

    A comment on its own line stays above the node fact it preceded, a comment after a value
    stays after it, and comments above `apiVersion` (other than the import header) stay on
    top, while the fact is still there. A file not written by `inventory import` keeps only
    the comments above `apiVersion`.
    """
    fresh = render(imported, label_prefixes).splitlines()
    old = existing.splitlines()
    top: list[str] = []
    body_start = 0
    for i, line in enumerate(old):
        if line.startswith("apiVersion:"):
            body_start = i
            break
        stripped = line.strip()
        if not line.startswith(HEADER_MARK) and (not stripped or stripped.startswith("#")):
            top.append(line)  # the reader's comments and blank lines, never content
    else:
        body_start = len(old)
    before: dict[tuple[Any, ...], list[str]] = {}
    after: dict[tuple[Any, ...], str] = {}
    if any(line.startswith(HEADER_MARK) for line in old):
        pending: list[str] = []
        body = old[body_start:]
        for line, ident in zip(body, _identities(body), strict=True):
            stripped = line.strip()
            if stripped.startswith("#") or not stripped:
                pending.append(line)  # blank lines too: a section comment stays with its node
                continue
            if ident is None:
                pending = []
                continue
            if pending:
                before[ident] = pending
                pending = []
            _, comment = _split_comment(line)
            if comment:
                after[ident] = comment
    head = [line for line in fresh if line.startswith(HEADER_MARK)]
    rest = fresh[len(head) :]
    out = [*head, *top]
    for line, ident in zip(rest, _identities(rest), strict=True):
        if ident is not None:
            out += before.get(ident, [])
            line += after.get(ident, "")
        out.append(line)
    return "\n".join(out) + "\n"
