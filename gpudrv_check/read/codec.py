"""FileResult ⇄ bytes, for worker processes and the cache.

Pickling located trees costs about as much as parsing them (a Python call per mapping), so a
file's result travels as builtin containers in `marshal` format instead: a mapping is the tuple
``(items, pos, key positions, raw texts)``, a sequence the list ``[pos, item positions, raw
texts, *items]``; scalars are themselves (never a tuple or a list, so the shapes cannot be
confused). Findings travel as their `Finding.record` tuples and are checked again when decoded.

`marshal` builds only builtin values: it never imports or calls anything named by the data, so
a forged entry cannot run code (the cache still checks a digest before decoding, see
engine/cache/store.py).
Anything that does not decode to the expected shapes raises `CodecError`.
"""

from __future__ import annotations

import marshal
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.located import LMap, LSeq, encode_tree
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.read.yaml_docs import (
    ITEM_LAYOUTS,
    LAYOUTS,
    POSITIONS,
    shared_items,
    shared_layout,
)

FORMAT = 2  # bump when the encoding changes


class CodecError(ValueError):
    """The bytes are not an encoded FileResult."""


def _dec(value: Any) -> Any:
    cls = value.__class__
    if cls is tuple:
        return _dec_map(value)
    if cls is list:
        return _dec_seq(value)
    return value


def _dec_map(value: tuple) -> LMap:
    items, pos, kpos, raw = value
    for k, v in items.items():  # containers decoded in place (no key is added or removed)
        c = v.__class__
        if c is tuple:
            items[k] = _dec_map(v)
        elif c is list:
            items[k] = _dec_seq(v)
    shared = POSITIONS.get
    layout = LAYOUTS.get((*kpos, *kpos.values()))
    if layout is None:  # a layout not seen yet: its positions as the shared tuples (yaml_docs)
        for k, p in kpos.items():
            kpos[k] = shared(p, p)
        layout = shared_layout(kpos)
    node = LMap.__new__(LMap)
    node.update(items)
    node.pos = shared(pos, pos)
    node.kpos = layout
    node.raw = raw
    return node


def _dec_seq(value: list) -> LSeq:
    seq = LSeq.__new__(LSeq)
    shared = POSITIONS.get
    seq.pos = shared(value[0], value[0])
    ipos = ITEM_LAYOUTS.get(tuple(value[1]))
    if ipos is None:  # not seen yet: its positions as the shared tuples (yaml_docs)
        ipos = shared_items([shared(p, p) for p in value[1]])
    seq.ipos = ipos
    seq.raw = value[2]
    for i in range(3, len(value)):
        c = value[i].__class__
        if c is tuple:
            value[i] = _dec_map(value[i])
        elif c is list:
            value[i] = _dec_seq(value[i])
    seq.extend(value[3:])
    return seq


def decode_tree(value: Any) -> Any:
    """One tree `encode_tree` wrote (core/located.py), as the reader made it, the value left
    as it is (`_dec` fills the containers it is given: a cache entry's value, stored again
    by a later save, must keep builtin values only); None when it has not that shape."""
    try:
        return _dec(marshal.loads(marshal.dumps(value)))
    except Exception:  # noqa: BLE001 - any malformed shape: not ours
        return None


def encode(result: Any) -> bytes:
    """A FileResult (read/manifests.py) as bytes."""
    manifests = [
        (m.file, m.doc, encode_tree(m.data), m.api_version, m.kind, m.name, m.namespace, m.item)
        for m in result.manifests
    ]
    problems = [f.record() for f in result.problems]
    skipped = [(s.rel, s.reason) for s in result.skipped]
    return marshal.dumps((FORMAT, result.rel, result.digest, manifests, problems, skipped))


def decode(data: bytes) -> Any:
    """The FileResult ``encode`` wrote; CodecError for anything else."""
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.read.manifests import FileResult
    from gpudrv_check.read.tree import Skipped

    try:
        fmt, rel, digest, manifests, problems, skipped = marshal.loads(data)
        if fmt != FORMAT:
            raise CodecError(f"encoding {quoted(fmt)}, expected {FORMAT}")
        result = FileResult(rel, digest=digest)
        result.manifests = [
            Manifest(file, doc, _dec(tree), api, kind, name, ns, item)
            for file, doc, tree, api, kind, name, ns, item in manifests
        ]
        result.problems = [Finding.from_record(p) for p in problems]
        result.skipped = [Skipped(r, why) for r, why in skipped]
    except (CodecError, MemoryError):  # running out of memory is not a malformed entry
        raise
    except Exception as err:  # any malformed shape: not ours
        raise CodecError(f"not an encoded file result: {type(err).__name__}") from None
    return result
