"""GPU013 driver-os-tag-mixed: the GPU nodes run several OS releases under one ClusterPolicy driver.

The ClusterPolicy's images all carry the OS tag of the first GPU node the operator lists
(controllers/state_manager.go getGPUNodeOSInfo, client.Limit(1) through the node cache, whose order
is not defined): with mixed OS releases some nodes get an image for the wrong OS. The finding sits
on the configuration's driver section and names every OS tag and its nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU013"


def check(ctx: Context) -> Iterator[Finding]:
    yield from plan_findings(ctx, ID)
