"""GitLab Code Quality: a JSON array of Code Climate issues for `artifacts:reports:codequality`.

Each reported finding becomes `{description, check_name, fingerprint, severity, location:
{path, lines: {begin}}}`; severities map error → critical, warning → major, info → info.
Fingerprints are unique within the report (GitLab shows only the first issue of a repeated
one) and stable across line shifts, so the merge request widget compares runs correctly.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Severity, unique_fingerprints

if TYPE_CHECKING:
    from gpudrv_check.report import Report

SEVERITIES = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def render(report: Report, *, colour: bool = False) -> str:
    issues: list[dict[str, Any]] = []
    for f, fingerprint in zip(report.findings, unique_fingerprints(report.findings), strict=True):
        policy = report.rule(f.rule)
        issue: dict[str, Any] = {
            "type": "issue",
            "check_name": f.rule,
            "description": f"{f.rule} {f.message}",
            "categories": ["Bug Risk"],
            "fingerprint": fingerprint,
            "severity": SEVERITIES[f.severity],
            "location": {
                "path": report.path(f.location.file),
                "lines": {"begin": f.location.line},
            },
        }
        if f.hint or policy is not None:
            issue["content"] = {"body": f.hint or policy.fix}  # type: ignore[union-attr]
        issues.append(issue)
    from gpudrv_check.report import json_safe

    return json_safe(json.dumps(issues, indent=2, ensure_ascii=False)) + "\n"
