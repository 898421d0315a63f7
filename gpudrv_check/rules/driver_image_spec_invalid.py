"""GPU014 driver-image-spec-invalid: the configured driver image cannot exist.

A precompiled driver with a full version or a digest, or an NVIDIADriver whose repository, image
and version are not all set (ImagePath: a CR has no environment default).

resolveDriverTag (ClusterPolicy) and GetPrecompiledImagePath (NVIDIADriver) build
`<version>-<kernel>-<os-tag>` from the version as written: `550.90.07` names a tag that is never
built, a digest is refused. The finding sits on the version key.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.driver_plan_findings import plan_findings

ID = "GPU014"


def check(ctx: Context) -> Iterator[Finding]:
    yield from plan_findings(ctx, ID)
