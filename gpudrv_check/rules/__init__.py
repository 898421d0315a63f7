"""Built-in rules: one module each, registered here explicitly.

A rule module has `ID` (its policy in `policies/rules/<ID>.yaml` holds the title, severity and
documentation) and `check(ctx)`, a generator of Findings; its docstring is its user doc.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from gpudrv_check.rules import (
    anti_affinity_no_spare_domain,
    cuda_driver_too_old,
    driver_image_missing,
    driver_image_spec_invalid,
    driver_os_tag_mixed,
    driver_tag_label_missing,
    driver_upgrade_state,
    driver_version_change,
    gpu_node_missing_operands,
    gpu_request_without_gpu_node,
    nvidia_runtime_on_cpu_node,
    nvidiadriver_owner_conflict,
    operand_chain_broken,
    operand_taint_not_tolerated,
    pdb_blocks_drain,
    pod_in_multiple_pdbs,
    precompiled_os_conflict,
    upgrade_drain_unscoped,
    upgrade_policy_invalid,
    workload_unschedulable,
)

if TYPE_CHECKING:
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.rules.context import Context

RULE_MODULES: tuple[ModuleType, ...] = (
    driver_image_missing,
    driver_tag_label_missing,
    precompiled_os_conflict,
    driver_os_tag_mixed,
    driver_image_spec_invalid,
    nvidiadriver_owner_conflict,
    driver_version_change,
    workload_unschedulable,
    cuda_driver_too_old,
    gpu_request_without_gpu_node,
    nvidia_runtime_on_cpu_node,
    operand_chain_broken,
    gpu_node_missing_operands,
    operand_taint_not_tolerated,
    pdb_blocks_drain,
    anti_affinity_no_spare_domain,
    driver_upgrade_state,
    upgrade_drain_unscoped,
    pod_in_multiple_pdbs,
    upgrade_policy_invalid,
)


def registered() -> dict[str, Callable[[Context], Iterator[Finding]]]:
    return {module.ID: module.check for module in RULE_MODULES}
