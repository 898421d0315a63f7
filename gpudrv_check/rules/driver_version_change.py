"""GPU016 driver-version-change: nodes the next reconcile moves to another driver branch.

The configured version (ClusterPolicy driver.version, or the owning NVIDIADriver's version) against
the branch the node's GFD labels report; one info finding on the version key lists the nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU016"


def check(ctx: Context) -> Iterator[Finding]:
    yield from plan_findings(ctx, ID)
