"""The repo as the rules see it: objects, nodes, the matrix and the config."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from gpudrv_check.config import Config
from gpudrv_check.model.manifest import Manifest
from gpudrv_check.model.node import Node

if TYPE_CHECKING:
    from gpudrv_check.load.matrix import Matrix


@dataclass
class Repo:
    root: str
    config: Config
    manifests: list[Manifest]
    nodes: list[Node]
    matrix: Matrix | None
    files_read: int = 0
    extras: dict = field(default_factory=dict)

    @cached_property
    def gpu_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.is_gpu]

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def of_kind(self, *kinds: str) -> list[Manifest]:
        return [m for m in self.manifests if m.kind in kinds]
