"""GPU014 driver-image-spec-invalid: the configured driver image cannot exist.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU014"


def check(ctx: Context) -> Iterator[Finding]:
    yield from plan_findings(ctx, ID)
