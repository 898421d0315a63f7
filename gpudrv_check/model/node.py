"""A node of the inventory, from a `kind: Node` object or a compact NodeInventory entry."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from gpudrv_check.core.finding import Location, ObjectRef
from gpudrv_check.core.located import Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record

GPU_PRESENT = "nvidia.com/gpu.present"

#: where each part of a `kind: Node` object is written in a compact NodeInventory entry
INVENTORY_FIELDS: dict[tuple[str, str], str] = {
    ("metadata", "name"): "name",
    ("metadata", "labels"): "labels",
    ("metadata", "annotations"): "annotations",
    ("spec", "taints"): "taints",
    ("spec", "unschedulable"): "unschedulable",
    ("status", "capacity"): "capacity",
    ("status", "allocatable"): "allocatable",
}
_ENTRY_TO_OBJECT = {entry: obj for obj, entry in INVENTORY_FIELDS.items()}


def entry_to_object_path(rest: Path) -> Path:
    """A path inside a NodeInventory entry (`("labels", k)`) → the Node object's (`metadata`…)."""
    if not rest:
        return ()
    head = _ENTRY_TO_OBJECT.get(str(rest[0]))
    return (*head, *rest[1:]) if head else tuple(rest)


@record(kw_only=True)
class Node:
    """A node's facts as the model reads them. Built only by model/inventory.py from values it
    has checked (each finding of a bad value made there, at its key), so it is a plain record:
    validating it again would only cost time (2,000 nodes at 10k workloads) and the start-up of
    pydantic's schema machinery for its field types."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)  # valid taints only
    unschedulable: bool = False
    capacity: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    manifest: Manifest
    # where this node's fields live inside manifest.data
    labels_path: Path = ("metadata", "labels")
    name_path: Path = ("metadata", "name")
    taints_path: Path = ("spec", "taints")
    unschedulable_path: Path = ("spec", "unschedulable")
    # nvidia.com/gpu.present as the operator writes it from NFD's PCI labels (None: as written)
    gpu_present: bool | None = None

    @property
    def is_gpu(self) -> bool:
        if self.gpu_present is not None:
            return self.gpu_present
        return self.labels.get(GPU_PRESENT) == "true"

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(kind="Node", name=self.name)

    def label_path(self, key: str) -> Path:
        return (*self.labels_path, key)

    def location(self, path: Path) -> Location:
        return self.manifest.location(path)

    @property
    def entry_path(self) -> Path | None:
        """Where this node's entry sits in a NodeInventory (`("nodes", 3)`); None for a Node."""
        if self.manifest.kind == "Node":
            return None
        return self.name_path[:-1]

    def object_path(self, path: Path) -> Path:
        """A path inside the manifest → the same key in the `kind: Node` shape.

        Identity that does not depend on where the node sits in an inventory list, so a
        fingerprint survives inserting a node above it or moving to Node objects.
        """
        base = self.entry_path
        if base is None or tuple(path[: len(base)]) != base:
            return tuple(path)
        return entry_to_object_path(tuple(path[len(base) :]))

    def source_path(self, path: Path) -> Path:
        """A path in the `kind: Node` shape → where that key is written in the manifest."""
        base = self.entry_path
        if base is None:
            return tuple(path)
        field = INVENTORY_FIELDS.get(tuple(path[:2]))  # type: ignore[arg-type]
        if field is not None:
            return (*base, field, *path[2:])
        return base

    def object_data(self) -> Any:
        """The node as a `kind: Node` object (what custom policies validate)."""
        base = self.entry_path
        if base is None:
            return self.manifest.data
        entry = self.manifest.get(*base)
        view: dict[str, Any] = {"apiVersion": "v1", "kind": "Node"}
        if isinstance(entry, dict):
            for (section, key), field in INVENTORY_FIELDS.items():
                if field in entry:
                    view.setdefault(section, {})[key] = entry[field]
        return view

    def label_location(self, key: str) -> Location:
        """The label's key when present, else the labels mapping (or the node's name)."""
        if key in self.labels:
            return self.location(self.label_path(key))
        if self.manifest.get(*self.labels_path) is not None:
            return self.location(self.labels_path)
        return self.location(self.name_path)


def apply_gpu_presence(nodes: list[Node]) -> str:
    """Decide each node's GPU presence the way the GPU Operator does, and say how.

    The operator keeps ``nvidia.com/gpu.present`` in sync with NFD's PCI labels
    (``reconcileCommonGPULabel``; ``labelGPUNodes`` before v26.7): ``true`` when a
    ``pci-10de``/``pci-0302_10de``/``pci-0300_10de`` ``.present=true`` label is there, ``false``
    when none is. So when the repo's nodes carry PCI labels at all, those decide; when no node
    has any (a trimmed export, a compact inventory), the label is taken as written.
    """
    from gpudrv_check.nvidia.driver_image import derived_gpu_present, has_pci_labels

    if not any(has_pci_labels(node.labels) for node in nodes):
        return f"{GPU_PRESENT} as written (no node has NFD PCI labels)"
    changed = []
    for node in nodes:
        node.gpu_present = derived_gpu_present(node.labels) == "true"
        if node.gpu_present != (node.labels.get(GPU_PRESENT) == "true"):
            changed.append(f"{node.name}={'true' if node.gpu_present else 'false'}")
    text = f"{GPU_PRESENT} derived from NFD PCI labels (pci-10de, pci-0302_10de, pci-0300_10de)"
    if changed:
        text += "; the operator relabels " + ", ".join(sorted(changed))
    return text
