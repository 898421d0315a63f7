"""One line per finding: `file:line:col: severity RULE message`, then the summary.

The first line of each finding in earlier releases' text format, for grep, editors' error
parsers and logs; no fix hint (`--format text` has it, wrapped under the location).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.report.text import finding_line, render_summary, shown

if TYPE_CHECKING:
    from gpudrv_check.report import Report


def render(report: Report, *, colour: bool = False) -> str:
    lines = [finding_line(f, colour) for f in shown(report)]
    if not report.quiet:
        lines.append(render_summary(report))
    return "\n".join(lines) + "\n" if lines else ""
