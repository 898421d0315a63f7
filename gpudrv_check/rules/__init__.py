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
    driver_image_missing,
    driver_tag_label_missing,
    driver_upgrade_state,
    pdb_blocks_drain,
    pod_in_multiple_pdbs,
    precompiled_os_conflict,
    upgrade_drain_unscoped,
)

if TYPE_CHECKING:
    from gpudrv_check.model.finding import Finding
    from gpudrv_check.rules.context import Context

RULE_MODULES: tuple[ModuleType, ...] = (
    driver_image_missing,
    driver_tag_label_missing,
    precompiled_os_conflict,
    pdb_blocks_drain,
    anti_affinity_no_spare_domain,
    driver_upgrade_state,
    upgrade_drain_unscoped,
    pod_in_multiple_pdbs,
)


def registered() -> dict[str, Callable[[Context], Iterator[Finding]]]:
    return {module.ID: module.check for module in RULE_MODULES}
