"""Built-in rules: one folder each, registered here explicitly.

A rule is a folder `GPUxxx_<name>/`: `rule.yaml` holds its metadata and user documentation (id,
name, severity, why, fix, params, what it reads and at which scope), `rule.py` its check
(`ID` and `check(ctx)`, a generator of Findings) and `cases/` its pass/fail examples, which
tests/rules/test_cases.py runs. Adding a rule is its folder plus one line in FOLDERS, and
`rules/catalog.json` written again from the folders (read/policy.py `write_compiled_catalog`).
A folder without `rule.py` describes a finding the reader or the model emits (`source: load`);
its id and severity are read from the same catalog (read/policy.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudrv_check.core.finding import Finding
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.rules.context import Context

#: the rules with a check, by folder, in evaluation order (findings are sorted afterwards)
FOLDERS: tuple[str, ...] = (
    "GPU001_driver_image_missing",
    "GPU002_driver_tag_label_missing",
    "GPU003_precompiled_os_conflict",
    "GPU013_driver_os_tag_mixed",
    "GPU014_driver_image_spec_invalid",
    "GPU015_nvidiadriver_owner_conflict",
    "GPU016_driver_version_change",
    "GPU010_workload_unschedulable",
    "GPU011_cuda_driver_too_old",
    "GPU012_gpu_request_without_gpu_node",
    "GPU017_nvidia_runtime_on_cpu_node",
    "GPU030_operand_chain_broken",
    "GPU031_gpu_node_missing_operands",
    "GPU032_operand_taint_not_tolerated",
    "GPU033_gpu_sharing_config",
    "GPU034_mig_config",
    "GPU020_pdb_blocks_drain",
    "GPU021_anti_affinity_no_spare_domain",
    "GPU022_driver_upgrade_state",
    "GPU023_upgrade_drain_unscoped",
    "GPU024_pod_in_multiple_pdbs",
    "GPU025_upgrade_policy_invalid",
)


def rule_id(folder: str) -> str:
    """The id of the rule in `folder` (`GPU010_workload_unschedulable`: GPU010)."""
    return folder.partition("_")[0]


def rule_module(folder: str) -> ModuleType:
    """The module of the rule in `folder`, imported when first asked for."""
    return import_module(f"{__name__}.{folder}.rule")


class _Check:
    """A rule's check, whose module is imported when the check is first called: a run that
    takes a rule's findings from the cache (engine/cache/partition.py `ClusterFindings`)
    imports neither the rule nor what only it uses (a steady node edit of a 1k repo: 1.6 % of
    its instructions). The module's `check` is looked up on every call."""

    __slots__ = ("folder",)

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, ctx: Context) -> Iterator[Finding]:
        return rule_module(self.folder).check(ctx)


def registered() -> dict[str, Callable[[Context], Iterator[Finding]]]:
    return {rule_id(folder): _Check(folder) for folder in FOLDERS}


def __getattr__(name: str) -> object:
    """`RULE_MODULES`: every rule's module, in FOLDERS order (imported when asked for)."""
    if name == "RULE_MODULES":
        return tuple(rule_module(folder) for folder in FOLDERS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def reading_all_namespaces(repo: Repo) -> list[str]:
    """The rules that, on this repo, read objects of every namespace: those with a `reads:`
    entry `when:` a condition holds (their `reads_all_namespaces(repo)`)."""
    from gpudrv_check.rules.plan import conditional_rules

    conditional = conditional_rules()
    return [
        rule_id(folder)
        for folder in FOLDERS
        if rule_id(folder) in conditional and rule_module(folder).reads_all_namespaces(repo)
    ]
