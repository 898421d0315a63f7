"""A node of the inventory, from a `kind: Node` object or a compact NodeInventory entry."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpudrv_check.load.located import Path
from gpudrv_check.model.finding import Location, ObjectRef
from gpudrv_check.model.manifest import Manifest

GPU_PRESENT = "nvidia.com/gpu.present"


class Node(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, Any]] = Field(default_factory=list)  # valid taints only
    unschedulable: bool = False
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    manifest: Manifest
    # where this node's fields live inside manifest.data
    labels_path: Path = ("metadata", "labels")
    name_path: Path = ("metadata", "name")
    taints_path: Path = ("spec", "taints")
    unschedulable_path: Path = ("spec", "unschedulable")

    @property
    def is_gpu(self) -> bool:
        return self.labels.get(GPU_PRESENT) == "true"

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(kind="Node", name=self.name)

    def object_path(self, path: Path) -> Path:
        """A path inside the manifest as a path inside this node: a NodeInventory entry drops
        its `nodes[i]` prefix, so the identity of a finding survives entries added above it."""
        if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
            return path[2:]
        return path

    def label_path(self, key: str) -> Path:
        return (*self.labels_path, key)

    def location(self, path: Path) -> Location:
        return self.manifest.location(path)

    def label_location(self, key: str) -> Location:
        """The label's key when present, else the labels mapping (or the node's name)."""
        if key in self.labels:
            return self.location(self.label_path(key))
        if self.manifest.get(*self.labels_path) is not None:
            return self.location(self.labels_path)
        return self.location(self.name_path)
