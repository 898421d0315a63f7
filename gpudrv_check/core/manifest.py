"""A Kubernetes object read from the repo, with where it came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpudrv_check.core.finding import Location, ObjectRef
from gpudrv_check.core.located import LMap, Path, locate
from gpudrv_check.core.records import record

_MAPPINGS = (dict, Mapping)  # dict first: a located mapping is one, and the ABC check is slow


def value_at(node: Any, path: Sequence[str | int]) -> Any:
    """The value at `path` under `node` (keys of mappings, indexes of lists), or None when any
    step is missing or of the wrong type."""
    for step in path:
        cls = node.__class__
        if (cls is LMap or cls is dict) and step.__class__ is str:  # the usual step, first
            node = node.get(step)
        elif node is None:
            return None
        elif isinstance(step, str) and isinstance(node, _MAPPINGS):
            node = node.get(step)
        elif isinstance(step, int) and isinstance(node, list) and 0 <= step < len(node):
            node = node[step]
        else:
            return None
    return node


@record(slots=True)
class Manifest:
    """One object: a document of a file, or one item of a `kind: List` document."""

    file: str
    doc: int
    data: Any  # LMap
    api_version: str
    kind: str
    name: str | None
    namespace: str | None
    item: int | None = None  # index in the List's `items`, when it came from a List

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(kind=self.kind, name=self.name, namespace=self.namespace)

    def location(self, path: Path = ()) -> Location:
        line, col = locate(self.data, path)
        return Location(file=self.file, line=line, column=col)

    def get(self, *path: str | int) -> Any:
        """The value at `path`, or None when any step is missing or of the wrong type."""
        return value_at(self.data, path)

    @property
    def labels(self) -> dict:
        value = self.get("metadata", "labels")
        return value if isinstance(value, dict) else {}

    @property
    def annotations(self) -> dict:
        value = self.get("metadata", "annotations")
        return value if isinstance(value, dict) else {}


#: the slot that holds a Manifest's tree (CachedManifest reads and fills it past its property)
_DATA: Any = Manifest.__dict__["data"]
_FIELDS = ("file", "doc", "data", "api_version", "kind", "name", "namespace", "item")


class CachedManifest(Manifest):
    """A Manifest read back from the per-file cache whose tree is decoded when first asked for
    (engine/cache/files.py `FilesCache.result`): a node file's objects, whose facts the model
    takes from the cache with them (model/inventory.py `node_file_facts`), so an edit run that
    asks nothing else of a node decodes none of the fleet's trees. `facts`: what
    `node_file_facts` kept for this object; `_lazy`: the file's trees and this object's index
    among them (engine/cache/files.py `_Trees`; None once its tree is in)."""

    __slots__ = ("facts", "_lazy")
    facts: Any
    _lazy: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lazy = None
        self.facts = None
        super().__init__(*args, **kwargs)

    @classmethod
    def undecoded(cls, header: tuple, facts: Any, lazy: tuple[Any, int]) -> CachedManifest:
        """An object whose tree is `trees.tree(index)`, taken when first read (`lazy`: that
        pair); `header`: (file, doc, api_version, kind, name, namespace, item)."""
        self = cls.__new__(cls)
        (self.file, self.doc, self.api_version, self.kind, self.name, self.namespace, self.item) = (
            header
        )
        self.facts = facts
        self._lazy = lazy
        return self

    @property
    def data(self) -> Any:
        lazy = self._lazy
        if lazy is not None:
            trees, index = lazy
            self.data = trees.tree(index)  # the setter: in, and the trees let go
        return _DATA.__get__(self, Manifest)

    @data.setter
    def data(self, value: Any) -> None:
        self._lazy = None
        _DATA.__set__(self, value)

    @property
    def annotations(self) -> dict:
        """The node's annotations as the model read them (model/inventory.py `_string_map`:
        a string as written, a number or boolean as its text, null as "", any other value
        left out), without decoding the tree: every reader of an object's annotations takes
        a value's text (`scalar_text`) or compares it with a string, and finds the same in
        either (engine/exemptions.py `annotation_ignores` reads every object's)."""
        facts = self.facts
        if facts is None or facts[0] is None:
            return super().annotations
        return facts[0][2]

    def __eq__(self, other: Any) -> Any:
        # equal to the plain Manifest of the same object (the record's own `__eq__` compares
        # objects of one class): the cache changes how a tree is decoded, not what it is
        if isinstance(other, Manifest):
            return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a Manifest's (mutable, compared by value)

    def __reduce__(self) -> tuple:
        # a copy or a pickle is the plain Manifest of the object, its tree decoded
        return (Manifest, tuple(getattr(self, f) for f in _FIELDS))
