"""Colons inside plain scalars of flow collections, read as kubectl reads them.

`{image: nvcr.io/nvidia/cuda:12.4.1-base}` is valid YAML for Kubernetes: its decoder (go-yaml,
`yaml_parser_scan_plain_scalar` in scannerc.go) ends a plain scalar at `:` only when a blank
follows, also inside `{}` and `[]`, so `nvcr.io/nvidia/cuda:12.4.1-base` is one scalar. PyYAML
reads it the same way. The libyaml bundled with ruamel.yaml.clib refuses it ("found unexpected
':'"), as libyaml did before 0.2.5. So where libyaml stops at such a colon, the colon is
replaced by a private-use character of the same length (positions do not move), the text is
parsed again, and the character is turned back into `:` in every key and value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpudrv_check.core.located import LMap, LSeq
from gpudrv_check.read.yaml_docs import LoadProblem, ParsedFile

#: stands for a colon while libyaml reads the text (never in a real manifest; checked)
STAND_IN = "\ue000"
#: colons replaced in one file at most (each costs a parse of the file)
MAX_COLONS = 200


# a colon inside a plain scalar: after a character that can end one (not a quote or bracket,
# where `"a":1` makes the colon an indicator) and before a non-blank that is no flow indicator
_INNER_COLON = re.compile(r"(?<=[^\s'\"\]}]):(?=[^\s,\[\]{}])")


def reparse(text: str, first: ParsedFile, parse: Callable[[str], ParsedFile]) -> ParsedFile:
    """`first` (libyaml's refusal) read again with each refused colon kept in its scalar.

    First with every colon inside a scalar replaced at once (one parse; a colon in block
    context or in a quoted string reads the same either way, as the stand-in is turned back
    into `:` everywhere); when that does not read, colon by colon where libyaml stops."""
    if STAND_IN in text:
        return first
    at_once = parse(_INNER_COLON.sub(STAND_IN, text))
    if not at_once.failed:
        return _restored(at_once)
    result, chars = first, list(text)
    for _ in range(MAX_COLONS):
        at = result.flow_colon
        if at < 0 or at >= len(chars) or chars[at] != ":":
            break
        chars[at] = STAND_IN
        result = parse("".join(chars))
        if result.flow_colon < 0:
            # read, or stopped by a later error of its own (reported with the colons as written)
            return _restored(result)
    return first


def _restored(result: ParsedFile) -> ParsedFile:
    for doc in result.docs:
        doc.data = _restore(doc.data)
    result.problems = [_problem(p) for p in result.problems]
    return result


def _problem(p: LoadProblem) -> LoadProblem:
    if STAND_IN in p.message:
        p.message = p.message.replace(STAND_IN, ":")
    return p


def _text(value: Any) -> Any:
    return value.replace(STAND_IN, ":") if isinstance(value, str) and STAND_IN in value else value


def _restore(root: Any) -> Any:
    """Every key and string value with the stand-in turned back into `:` (iteratively)."""
    if isinstance(root, str):
        return _text(root)
    pending = [root] if isinstance(root, (LMap, LSeq)) else []
    while pending:
        node = pending.pop()
        if isinstance(node, LMap):
            _restore_map(node)
            pending.extend(v for v in node.values() if isinstance(v, (LMap, LSeq)))
        else:
            for i, item in enumerate(node):
                if isinstance(item, str) and STAND_IN in item:
                    node[i] = _text(item)
                elif isinstance(item, (LMap, LSeq)):
                    pending.append(item)
    return root


def _restore_map(node: LMap) -> None:
    keys = [k for k in node if STAND_IN in k]
    if keys:  # the parser shares kpos dicts between mappings (yaml_docs.LAYOUTS): a copy
        node.kpos = dict(node.kpos)
    for key in keys:
        value, pos = node.pop(key), node.kpos.pop(key, node.pos)
        raw = node.raw.pop(key, None) if node.raw else None
        new = _text(key)
        node[new] = value
        node.kpos[new] = pos
        if raw is not None and node.raw is not None:
            node.raw[new] = raw
    for key, value in node.items():
        if isinstance(value, str) and STAND_IN in value:
            node[key] = _text(value)
