"""JSON output: `{"findings": [...], "suppressed": [...], "summary": {...}}`, described by
schemas/output.schema.json."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpudrv_check.model.finding import Finding

if TYPE_CHECKING:
    from gpudrv_check.report import Report


def finding_dict(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rule": f.rule,
        "severity": f.severity.value,
        "message": f.message,
        "hint": f.hint,
        "location": {"file": f.location.file, "line": f.location.line, "column": f.location.column},
        "object": None
        if f.object is None
        else {
            "kind": f.object.kind,
            "namespace": f.object.namespace,
            "name": f.object.name,
        },
        "path": f.path,
        "fingerprint": f.fingerprint(),
    }
    if f.suppressed_by:
        out["suppressed_by"] = f.suppressed_by
    return out


def summary_dict(report: Report) -> dict[str, Any]:
    s = report.summary
    out: dict[str, Any] = {
        "files": s.files,
        "objects": s.objects,
        "skipped_documents": s.skipped_documents,
        "errors": s.counts.get("error", 0),
        "warnings": s.counts.get("warning", 0),
        "info": s.counts.get("info", 0),
        "suppressed": s.suppressed,
        "suppressed_by": dict(sorted(s.suppressed_by.items())),
        "fail_on": s.fail_on,
        "exit_code": s.exit_code,
    }
    if s.baseline:
        out["baseline"] = s.baseline
    if s.base is not None:
        out.update(base=s.base, new=s.new, fixed=s.fixed, unchanged=s.unchanged)
    return out


def render(report: Report, *, colour: bool = False) -> str:
    doc = {
        "findings": [finding_dict(f) for f in report.findings],
        "suppressed": [finding_dict(f) for f in report.suppressed],
        "summary": summary_dict(report),
    }
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
