"""The repo as the rules see it: objects, nodes, the matrix and the config."""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING

from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.model.node import Node
from gpudrv_check.read.config import Config

if TYPE_CHECKING:
    from gpudrv_check.model.disruption import PDB, Disruption
    from gpudrv_check.model.occupancy import Occupancy
    from gpudrv_check.model.operands import OperandPlacement
    from gpudrv_check.model.operator import EmbeddedReader, OperatorConfig
    from gpudrv_check.model.placement import Placement
    from gpudrv_check.model.workload import Workload
    from gpudrv_check.nvidia.cuda import CudaTable
    from gpudrv_check.read.matrix import Matrix


@record
class Repo:
    root: str
    config: Config
    manifests: list[Manifest]
    nodes: list[Node]
    matrix: Matrix | None
    files_read: int = 0
    workloads: list[Workload] = field(default_factory=list)
    pdbs: list[PDB] = field(default_factory=list)
    extras: dict = field(default_factory=dict)
    #: reads the YAML embedded in strings (Helm values): read/embedded.py, passed by the engine
    embedded: EmbeddedReader | None = None

    def forget(self) -> None:
        """Drop the models derived from this repo and cached on it (placement, occupancy,
        disruption…). Some of them refer back to the repo; without this, a run's whole model
        and trees wait for a garbage collection the command never makes (the collector is
        off, cli/__init__.py), and the reports rendered after it add to them."""
        for name, value in type(self).__dict__.items():
            if isinstance(value, cached_property):
                self.__dict__.pop(name, None)

    @cached_property
    def gpu_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.is_gpu]

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def of_kind(self, *kinds: str) -> list[Manifest]:
        return [m for m in self.manifests if m.kind in kinds]

    @cached_property
    def placement(self) -> Placement:
        from gpudrv_check.k8s.scheduler import scheduler_release
        from gpudrv_check.model.mig import mig_allocatable
        from gpudrv_check.model.placement import Placement, runtime_class_overheads
        from gpudrv_check.read.policy import builtin, rule_params

        version = rule_params(self.config, builtin("workload-unschedulable").id).get(
            "scheduler_version"
        )
        overheads = runtime_class_overheads(self.manifests)
        derived = mig_allocatable(self)
        return Placement(self.nodes, overheads, scheduler_release(version), derived)

    @cached_property
    def cuda_table(self) -> CudaTable:
        """policies/cuda.yaml extended by the config's `cuda:` (raises ConfigError if malformed)."""
        from gpudrv_check.model.cuda import cuda_table

        return cuda_table(self.config)

    @cached_property
    def occupancy(self) -> Occupancy:
        """The repo's pods over the nodes' allocatable: who runs, who stays Pending."""
        from gpudrv_check.model.occupancy import Occupancy

        extras = self.extras
        return Occupancy(
            self,
            extras.get("occupancy_inputs"),
            extras.get("occupancy_memo"),
            extras.get("occupancy_known"),
            extras.get("occupancy_same"),
        )

    @cached_property
    def disruption(self) -> Disruption:
        """PodDisruptionBudget coverage and budgets over the workloads (computed on first use)."""
        from gpudrv_check.model.disruption import Disruption

        return Disruption(self)

    @property
    def embedded_reader(self) -> EmbeddedReader:
        """What reads the YAML written inside strings (the engine's, else a new one)."""
        from gpudrv_check.read.embedded import EmbeddedYaml

        return self.embedded or EmbeddedYaml()

    @cached_property
    def operator_configs(self) -> list[OperatorConfig]:
        from gpudrv_check.model.operator import find_operator_configs

        return find_operator_configs(self.manifests, self.embedded_reader)

    @property
    def operator(self) -> OperatorConfig | None:
        """The operator configuration (the first one, when the repo states several)."""
        configs = self.operator_configs
        return configs[0] if configs else None

    @cached_property
    def operand_placement(self) -> OperandPlacement:
        """Which operand DaemonSet runs on which node, and why not (model/operands.py)."""
        from gpudrv_check.model.operands import build_operand_placement

        return build_operand_placement(self)
