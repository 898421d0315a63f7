"""Built-in rules: one folder each, registered here explicitly.

A rule is a folder `GPUxxx_<name>/`: `rule.yaml` holds its metadata and user documentation (id,
name, severity, why, fix, params, what it reads and at which scope), `rule.py` its check
(`ID` and `check(ctx)`, a generator of Findings) and `cases/` its pass/fail examples, which
tests/rules/test_cases.py runs. Adding a rule is its folder plus one line in RULE_MODULES.
A folder without `rule.py` describes a finding the reader or the model emits (`source: load`);
its id and severity are read from the same catalog (read/policy.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from gpudrv_check.rules.GPU001_driver_image_missing import rule as GPU001
from gpudrv_check.rules.GPU002_driver_tag_label_missing import rule as GPU002
from gpudrv_check.rules.GPU003_precompiled_os_conflict import rule as GPU003
from gpudrv_check.rules.GPU010_workload_unschedulable import rule as GPU010
from gpudrv_check.rules.GPU011_cuda_driver_too_old import rule as GPU011
from gpudrv_check.rules.GPU012_gpu_request_without_gpu_node import rule as GPU012
from gpudrv_check.rules.GPU013_driver_os_tag_mixed import rule as GPU013
from gpudrv_check.rules.GPU014_driver_image_spec_invalid import rule as GPU014
from gpudrv_check.rules.GPU015_nvidiadriver_owner_conflict import rule as GPU015
from gpudrv_check.rules.GPU016_driver_version_change import rule as GPU016
from gpudrv_check.rules.GPU020_pdb_blocks_drain import rule as GPU020
from gpudrv_check.rules.GPU021_anti_affinity_no_spare_domain import rule as GPU021
from gpudrv_check.rules.GPU022_driver_upgrade_state import rule as GPU022
from gpudrv_check.rules.GPU023_upgrade_drain_unscoped import rule as GPU023
from gpudrv_check.rules.GPU024_pod_in_multiple_pdbs import rule as GPU024
from gpudrv_check.rules.GPU025_upgrade_policy_invalid import rule as GPU025
from gpudrv_check.rules.GPU030_operand_chain_broken import rule as GPU030
from gpudrv_check.rules.GPU031_gpu_node_missing_operands import rule as GPU031
from gpudrv_check.rules.GPU032_operand_taint_not_tolerated import rule as GPU032

if TYPE_CHECKING:
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.rules.context import Context

# the evaluation order (findings are sorted afterwards, so it shows only in timings)
RULE_MODULES: tuple[ModuleType, ...] = (
    GPU001,
    GPU002,
    GPU003,
    GPU013,
    GPU014,
    GPU015,
    GPU016,
    GPU010,
    GPU011,
    GPU012,
    GPU030,
    GPU031,
    GPU032,
    GPU020,
    GPU021,
    GPU022,
    GPU023,
    GPU024,
    GPU025,
)


def registered() -> dict[str, Callable[[Context], Iterator[Finding]]]:
    return {module.ID: module.check for module in RULE_MODULES}


def reading_all_namespaces(repo: Repo) -> list[str]:
    """The rules that, on this repo, read objects of every namespace: those with a `reads:`
    entry `when:` a condition holds (their `reads_all_namespaces(repo)`)."""
    return [
        module.ID
        for module in RULE_MODULES
        if hasattr(module, "reads_all_namespaces") and module.reads_all_namespaces(repo)
    ]
