"""JSON output: `{"findings": [...], "summary": {...}}`, described by schemas/output.schema.json."""

from __future__ import annotations

import json
from typing import Any

from gpudrv_check.model.finding import Finding


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
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


def render(findings: list[Finding], summary: dict[str, Any]) -> str:
    doc = {"findings": [finding_dict(f) for f in findings], "summary": summary}
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
