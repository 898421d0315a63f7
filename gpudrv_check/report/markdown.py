"""Markdown: a summary for a pull-request comment or `$GITHUB_STEP_SUMMARY`.

The document is a heading, the totals, and then the sections of `report/sections/`, in their
`ORDER`. A section is a module there with `ORDER: int`, `TITLE: str` and
`render(report) -> str | None` (None or empty: the section is left out). Sections are found by
listing the package, so a new one (placement, upgrade plans, ...) is added by dropping a module
in, without editing this one.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudrv_check.report import Report


@cache
def sections() -> tuple[ModuleType, ...]:
    from gpudrv_check.report import sections as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if callable(getattr(module, "render", None)):
            found.append(module)
    return tuple(sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.__name__)))


def cell(text: object) -> str:
    """Text safe inside a table cell: no pipes, no line breaks, no HTML."""
    value = str(text).replace("\\", "\\\\").replace("|", "\\|")
    value = value.replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(value.split())


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render(report: Report, *, colour: bool = False) -> str:
    s = report.summary
    verdict = "failed" if s.exit_code else "passed"
    counts = s.counts
    parts = [
        "## gpudrv-check",
        "",
        f"**{verdict}** (fail on {s.fail_on}): {plural(counts.get('error', 0), 'error')}, "
        f"{plural(counts.get('warning', 0), 'warning')}, {counts.get('info', 0)} info; "
        f"{s.suppressed} suppressed; {plural(s.files, 'file')}, {plural(s.objects, 'object')} read"
        + (f"; baseline `{s.baseline}`" if s.baseline else "")
        + ".",
    ]
    for module in sections():
        body = module.render(report)
        if body:
            parts += ["", f"### {module.TITLE}", "", body.rstrip("\n")]
    return "\n".join(parts) + "\n"
