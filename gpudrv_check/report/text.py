"""Human-readable output: `file:line:col: severity RULE message`, a fix hint, and a summary."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding

if TYPE_CHECKING:
    from gpudrv_check.report import Report

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_RESET = "\033[0m"


def use_colour(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def finding_line(f: Finding, colour: bool = False) -> str:
    severity = f.severity.value
    if colour:
        severity = f"{_COLOURS[severity]}{severity}{_RESET}"
    return f"{f.location}: {severity} {f.rule} {f.message}"


def render_findings(findings: Iterable[Finding], summary: str, colour: bool = False) -> str:
    lines = []
    for f in findings:
        lines.append(finding_line(f, colour))
        if f.hint:
            lines.append(f"    fix: {f.hint}")
    lines.append(summary)
    return "\n".join(lines) + "\n"


def summary_line(files: int, objects: int, counts: dict[str, int], suppressed: int = 0) -> str:
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    text = (
        f"{plural(files, 'file')}, {plural(objects, 'object')} read; "
        f"{plural(counts.get('error', 0), 'error')}, {plural(counts.get('warning', 0), 'warning')}"
    )
    if counts.get("info"):
        text += f", {counts['info']} info"
    if suppressed:
        text += f"; {suppressed} suppressed"
    return text


def render_summary(report: Report) -> str:
    """The one-line summary (printed alone when the reports go to files)."""
    s = report.summary
    line = "".join(f"note: {note}\n" for note in s.notes)
    line += summary_line(s.files, s.objects, s.counts, s.suppressed)
    if s.baseline:
        line += f" (baseline {s.baseline})"
    if s.base is not None:
        line += f"\n{s.new} new, {s.fixed} fixed, {s.unchanged} unchanged (base {s.base})"
    return line


def render(report: Report, *, colour: bool = False) -> str:
    return render_findings(report.findings, render_summary(report), colour)
