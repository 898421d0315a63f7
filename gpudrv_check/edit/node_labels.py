"""Rewrite a node's labels in an inventory file with ruamel.yaml's round-trip mode.

The file is loaded with `YAML(typ="rt")` (comments, key order, anchors and the quoting style
of every scalar kept), the label values are replaced in place - each new value in the quoting
style of the value it replaces - and the documents are dumped back with the file's own
indentation, document start marker, line ending and byte order mark. A guard then compares the
result with the original line by line: only the lines holding the changed label values may
differ. Anything else (a layout ruamel.yaml would normalise, such as mixed indentation or
`[ a, b ]` spacing) refuses the edit, and the caller tells the user which lines to change by
hand. Works for `kind: Node` objects, Nodes inside a `kind: List`, and NodeInventory entries.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.located import Path
from gpudrv_check.edit.safe_write import EditError
from gpudrv_check.read.yaml_docs import resolve_plain

BOM = b"\xef\xbb\xbf"


def _key_column(line: str) -> int:
    """Column where the key of a (possibly `- `-prefixed) mapping line starts."""
    column = len(line) - len(line.lstrip(" "))
    while line.startswith("- ", column) or line.startswith("-\t", column):
        column += 2
        column += len(line[column:]) - len(line[column:].lstrip(" "))
    return column


def _opens_block(line: str) -> bool:
    """`key:` with nothing (or only a comment) after it: a nested block follows."""
    content = line.split(" #", 1)[0].rstrip()
    return content.endswith(":") and not content.lstrip(" -").startswith(("'", '"', "{", "["))


def guess_indent(text: str) -> tuple[int, int]:
    """(mapping indent, sequence dash offset) of a block-style YAML text.

    Taken from the first nested mapping and the first block sequence under a key, as
    ruamel.yaml's own `load_yaml_guess_indent` does (which reads a single document only);
    defaults 2 and 0.
    """
    mapping: int | None = None
    offset: int | None = None
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    for current, following in zip(lines, lines[1:], strict=False):
        if not _opens_block(current):
            continue
        base = _key_column(current)
        indent = len(following) - len(following.lstrip(" "))
        if following.lstrip(" ").startswith("- "):
            if offset is None and indent >= base:
                offset = indent - base
        elif mapping is None and indent > base:
            mapping = indent - base
        if mapping is not None and offset is not None:
            break
    return (mapping or 2, offset or 0)


def _decode(original: bytes, rel: str) -> tuple[str, bool, bool]:
    """(text with \\n line ends, had a BOM, used CRLF)."""
    bom = original.startswith(BOM)
    data = original[len(BOM) :] if bom else original
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditError(f"{rel} is not UTF-8 text") from None
    crlf = "\r\n" in text
    if crlf:
        if text.count("\r\n") != text.count("\n") or text.count("\r") != text.count("\n"):
            raise EditError(f"{rel} mixes line endings; rewrite it by hand")
        text = text.replace("\r\n", "\n")
    elif "\r" in text:
        raise EditError(f"{rel} uses bare CR line endings; rewrite it by hand")
    return text, bom, crlf


def _starts_explicitly(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("%"):
            continue
        return stripped.startswith("---")
    return False


def _walk(node: object, path: Path, rel: str) -> object:
    for step in path:
        try:
            node = node[step]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            raise EditError(f"{rel}: {'.'.join(map(str, path))} not found") from None
    return node


def _shared(node: object) -> str | None:
    """Why ``node`` may be shared with another part of the file: an anchor (`&name`, so an
    alias `*name` reads the same object) or a merge key (`<<: *name`); None when neither."""
    from ruamel.yaml.comments import merge_attrib

    anchor = getattr(node, "anchor", None)
    name = getattr(anchor, "value", None)
    if name:
        return f"has an anchor &{name} (its aliases *{name} share it)"
    if getattr(node, merge_attrib, None):
        return "merges another mapping (`<<:`)"
    return None


def _refuse_shared(root: object, path: Path, rel: str, node_name: str) -> None:
    """Refuse when the labels mapping, or anything on the path to it, is anchored, an alias,
    or merges another mapping: a change there would change every node sharing it (or could
    not be written where the value is), so the user edits such a file by hand."""
    node = root
    for depth in range(len(path) + 1):
        if depth:
            node = node[path[depth - 1]]  # type: ignore[index]
        why = _shared(node)
        if why is not None:
            where = ".".join(map(str, path[:depth])) or "the document"
            raise EditError(
                f"{rel}: the labels of {node_name} may be shared: {where} {why}; "
                "a rewrite could change other nodes too; edit the file by hand; nothing written"
            )


def _styled(old: object, new: str) -> object:
    """``new`` in the quoting style of ``old`` (a label written as a number becomes quoted)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString

    if isinstance(old, ScalarString):
        return type(old)(new)
    if isinstance(old, str) and isinstance(resolve_plain(new), str):
        return new  # stays plain
    return DoubleQuotedScalarString(new)  # plain `07` would read back as a number


def rewrite_labels(
    original: bytes,
    rel: str,
    doc_index: int,
    labels_path: Path,
    name_path: Path,
    node_name: str,
    changes: Mapping[str, str],
) -> bytes:
    """``original`` with ``changes`` (label key -> new value) applied to one node's labels.

    ``labels_path`` and ``name_path`` lead from document ``doc_index`` to the node's labels
    mapping and its name; every changed key must already be a label of the node.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError

    text, bom, crlf = _decode(original, rel)
    mapping, offset = guess_indent(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never fold a long line
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    yaml.explicit_start = _starts_explicitly(text)
    yaml.explicit_end = any(line.rstrip() == "..." for line in text.splitlines())
    try:
        docs = list(yaml.load_all(text))
    except YAMLError as err:
        raise EditError(f"{rel}: cannot parse for rewriting: {err}") from None
    if not 0 <= doc_index < len(docs):
        raise EditError(f"{rel}: document {doc_index} not found")
    if _walk(docs[doc_index], name_path, rel) != node_name:
        raise EditError(f"{rel}: node {node_name} is no longer at {'.'.join(map(str, name_path))}")
    labels = _walk(docs[doc_index], labels_path, rel)
    if not isinstance(labels, CommentedMap):
        raise EditError(f"{rel}: the labels of {node_name} are not a mapping")
    _refuse_shared(docs[doc_index], labels_path, rel, node_name)
    allowed: set[int] = set()
    for key, value in changes.items():
        if key not in labels:
            raise EditError(f"{rel}: node {node_name} has no label {key}")
        if _shared(labels[key]) is not None:
            raise EditError(
                f"{rel}: label {key} of {node_name} has an anchor (`&`) other values may share; "
                "edit the file by hand; nothing written"
            )
        line, _ = labels.lc.value(key)
        allowed.add(line)
        labels[key] = _styled(labels[key], value)
    out = io.StringIO()
    yaml.dump_all(docs, out)
    updated = out.getvalue()
    if not text.endswith("\n") and updated.endswith("\n"):
        updated = updated[:-1]
    _guard(text, updated, allowed, rel)
    if crlf:
        updated = updated.replace("\n", "\r\n")
    return (BOM if bom else b"") + updated.encode("utf-8")


def _guard(before: str, after: str, allowed: set[int], rel: str) -> None:
    """Only the label value lines (0-based ``allowed``) may differ."""
    old_lines = before.split("\n")
    new_lines = after.split("\n")
    if len(old_lines) != len(new_lines):
        raise EditError(
            f"{rel}: rewriting it with ruamel.yaml would change its layout ({len(old_lines)} "
            f"lines become {len(new_lines)}); nothing written"
        )
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if old != new and number not in allowed:
            raise EditError(
                f"{rel}:{number + 1}: rewriting it with ruamel.yaml would also change this line "
                f"({quoted(old.strip())} -> {quoted(new.strip())}); nothing written"
            )
