"""GPU015 nvidiadriver-owner-conflict: NVIDIADriver CRs that cannot be assigned to nodes.

internal/nvidiadriver AssignOwners (v26.7): two non-default CRs matching one node, two defaults,
a default with a nodeSelector, the reserved owner label in a selector; before v26.7 the
nodeSelector validator's overlap check. The finding sits on each CR involved.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU015"


def check(ctx: Context) -> Iterator[Finding]:
    yield from plan_findings(ctx, ID)
