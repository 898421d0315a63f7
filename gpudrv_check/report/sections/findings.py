"""The reported findings as a table, each linked to its file and line.

Links are relative (`k8s/node.yaml#L14`), or absolute to the commit being checked when
GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_SHA are set (a pull-request comment does not
resolve relative links).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudrv_check.report import Report

ORDER = 20
TITLE = "Findings"
MAX_ROWS = 200  # a pull-request comment holds 65536 characters


def link_base() -> str:
    server = os.environ.get("GITHUB_SERVER_URL")
    repo = os.environ.get("GITHUB_REPOSITORY")
    sha = os.environ.get("GITHUB_SHA")
    if server and repo and sha:
        return f"{server.rstrip('/')}/{repo}/blob/{sha}/"
    return ""


def render(report: Report) -> str | None:
    from gpudrv_check.report.markdown import cell

    if not report.findings:
        return "No findings."
    base = link_base()
    lines = ["| severity | rule | where | object | message |", "|---|---|---|---|---|"]
    for f in report.findings[:MAX_ROWS]:
        uri = report.uri(f.location.file)
        where = f"{uri}:{f.location.line}:{f.location.column}"
        link = f"[{cell(where)}]({base}{report.link(f.location.file)}#L{f.location.line})"
        obj = cell(f.object) if f.object else ""
        lines.append(f"| {f.severity.value} | {f.rule} | {link} | {obj} | {cell(f.message)} |")
    more = len(report.findings) - MAX_ROWS
    if more > 0:
        lines += ["", f"… and {more} more (see the text or SARIF report)."]
    return "\n".join(lines)
