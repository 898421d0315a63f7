"""Findings per rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudrv_check.report import Report

ORDER = 10
TITLE = "Findings per rule"


def render(report: Report) -> str | None:
    from gpudrv_check.report.markdown import cell

    counts = report.counts_by_rule()
    if not counts:
        return None
    lines = ["| rule | name | severity | findings | suppressed |", "|---|---|---|---:|---:|"]
    for rule_id, (reported, suppressed) in counts.items():
        policy = report.rule(rule_id)
        name = f"`{policy.name}`" if policy else ""
        severity = policy.severity.value if policy else ""
        lines.append(f"| {cell(rule_id)} | {name} | {severity} | {reported} | {suppressed} |")
    return "\n".join(lines)
