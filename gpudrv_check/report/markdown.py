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
import re
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import printable

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


# markdown syntax repo text must not carry into the report: code spans, emphasis, links and
# images, strike-through, headings (CommonMark: any ASCII punctuation may be backslash-escaped)
_SYNTAX = re.compile(r"[\\`*\[\]!~#|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# what GitHub turns into a notification or a link after rendering: @mentions, bare URLs; a
# zero-width space (as Renovate writes `@&#8203;user`) keeps the text and breaks the match
_LIVE = re.compile(r"@(?=[A-Za-z0-9])|:(?=//)|(?i:www)(?=\.)")


def cell(text: object) -> str:
    """Repo text safe inside a table cell (and anywhere in a line): no pipes, line breaks,
    HTML, markdown syntax, mentions, autolinks or control characters."""
    value = printable(str(text), " ")
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _SYNTAX.sub(lambda m: "\\" + m.group(), value)
    value = _LIVE.sub(lambda m: m.group() + "&#8203;", value)
    return " ".join(value.split())


def code(text: object) -> str:
    """Repo text as an inline code span: fenced by more backticks than it holds."""
    value = " ".join(printable(str(text), " ").split()).replace("|", "\\|")  # a table's pipe
    fence = "`" * (max((len(r) for r in re.findall("`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


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
