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
