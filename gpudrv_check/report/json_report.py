"""JSON output: `{"findings": [...], "suppressed": [...], "summary": {...}}`, described by
schemas/output.schema.json."""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Finding
from gpudrv_check.report import suppression_text

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
        out["suppressed_by"] = suppression_text(f)
    if f.cluster is not None:
        out["cluster"] = f.cluster
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
    if s.skipped_rules:
        out["skipped_rules"] = s.skipped_rules
    if s.notes:
        out["notes"] = s.notes
    if s.clusters:
        out["clusters"] = s.clusters
    if s.baseline:
        out["baseline"] = s.baseline
    if s.base is not None:
        out.update(base=s.base, new=s.new, fixed=s.fixed, unchanged=s.unchanged)
    return out


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _indented(value: Any, level: int, out: list[str]) -> None:
    """``json.dumps(value, indent=2, ensure_ascii=False)`` written straight into ``out``: with an
    indent the standard library falls back to its pure-Python encoder, several times slower on
    a report of thousands of findings. Raises TypeError on anything else than JSON's types (the
    caller then uses ``json.dumps``), so the bytes are always the same."""
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        out.append("[")
        for i, item in enumerate(value):
            out.append(inner if i == 0 else "," + inner)
            _indented(item, level + 1, out)
        out.append("\n" + "  " * level + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = "\n" + "  " * (level + 1)
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError("a key that is not a string")
            out.append(inner if i == 0 else "," + inner)
            out.append(encode_basestring(key))
            out.append(": ")
            _indented(item, level + 1, out)
        out.append("\n" + "  " * level + "}")
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


def render(report: Report, *, colour: bool = False) -> str:
    from gpudrv_check.report import json_safe

    doc = {
        "findings": [finding_dict(f) for f in report.findings],
        "suppressed": [finding_dict(f) for f in report.suppressed],
        "summary": summary_dict(report),
    }
    out: list[str] = []
    try:
        _indented(doc, 0, out)
    except (TypeError, RecursionError):
        return json_safe(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)) + "\n"
    return json_safe("".join(out)) + "\n"
