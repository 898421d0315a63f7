"""GitHub Actions workflow commands: one annotation per finding, then the summary line.

`::error file=k8s/node3.yaml,line=14,col=5,title=GPU001::message` (`warning` and `notice` for
the other severities). Chosen automatically when GITHUB_ACTIONS=true and no --format is given.
Escaping follows the runner: in the message `%`, CR and LF become `%25`, `%0D`, `%0A`; property
values also escape `:` and `,` (`%3A`, `%2C`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Severity

if TYPE_CHECKING:
    from gpudrv_check.report import Report

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, *, colour: bool = False) -> str:
    from gpudrv_check.report.text import render_summary

    lines = []
    for f in report.findings:
        loc = f.location
        props = ",".join(
            f"{key}={escape_property(value)}"
            for key, value in (
                ("file", report.uri(loc.file)),
                ("line", str(loc.line)),
                ("col", str(loc.column)),
                ("title", f.rule),
            )
        )
        message = f.message + (f"\nfix: {f.hint}" if f.hint else "")
        lines.append(f"::{COMMANDS[f.severity]} {props}::{escape_data(message)}")
    lines.append(render_summary(report))
    return "\n".join(lines) + "\n"
