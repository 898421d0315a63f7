"""Output formats: one module each, all rendered from the same `Report`.

A format module has `render(report, *, colour=False) -> str`. `FORMATS` names them; the
check command pairs each `--format` with its `--output` (see cli/commands/check.py).
"""

from __future__ import annotations

import importlib
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gpudrv_check.core.finding import MAX_MESSAGE, Finding, Severity, printable
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.read.policy import RulePolicy

#: format name → module in this package
FORMATS: dict[str, str] = {
    "text": "text",
    "concise": "concise",
    "json": "json_report",
    "sarif": "sarif",
    "junit": "junit",
    "github": "github",
    "gitlab": "gitlab",
    "markdown": "markdown",
    "html": "html",
}
#: the formats that render sections of the repo model (report/sections), not only findings
MODEL_FORMATS = frozenset(("markdown", "html"))


@record
class Summary:
    files: int = 0
    objects: int = 0
    skipped_documents: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in Severity})
    suppressed: int = 0
    suppressed_by: dict[str, int] = field(default_factory=dict)  # annotation|config|baseline
    fail_on: str = "error"
    exit_code: int = 0
    baseline: str | None = None  # the --baseline file, when one was used
    # pull-request mode (--base): the base revision and how the findings compare with it
    base: str | None = None
    new: int = 0
    fixed: int = 0
    unchanged: int = 0
    # what was not checked and why, and other things said once (model/coverage.py)
    notes: list[str] = field(default_factory=list)
    skipped_rules: list[dict[str, Any]] = field(default_factory=list)
    # a repo of several clusters: each one's name, files, nodes and how it was found
    clusters: list[dict[str, Any]] = field(default_factory=list)


#: a byte of a name that is not UTF-8 (as `surrogateescape` holds it): no text names the file
_NOT_TEXT = lazy_compile("[\udc80-\udcff]")
#: what a workflow command line must not carry raw (tab, CR and LF aside: CR and LF escaped)
_NOT_COMMAND = lazy_compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


@record
class Report:
    """What every format renders: the findings, the suppressed ones, the rules, the repo."""

    findings: list[Finding]
    suppressed: list[Finding]
    rules: dict[str, RulePolicy]
    summary: Summary
    repo: Repo | None = None
    # prepended to finding files in formats CI systems resolve against the repository root
    path_prefix: str = ""
    tool_version: str = ""
    # how a person reads it: the line width of the text format, and --quiet (errors only,
    # no summary) for the text and concise formats
    width: int = 100
    quiet: bool = False
    # finding file → the name as the file system has it (str with `surrogateescape` bytes),
    # for the names the reader escaped for display (read/tree.py `display_name`)
    disk_paths: dict[str, str] = field(default_factory=dict)
    # the rules --select/--ignore left out (their findings dropped): not said to pass
    not_selected: frozenset[str] = frozenset()

    def uri(self, file: str) -> str:
        """A finding's file as a path from the working directory (see `path_prefix`)."""
        return self.path_prefix + file

    def path(self, file: str, controls: bool = True) -> str:
        """`uri` with the file's own name where reports show it escaped (read/tree.py
        `display_name`: a tab, a newline, a control character), for a format whose consumer
        finds the file by it (GitLab's `location.path`, a GitHub annotation's `file`); the
        escaped text for a name that is not UTF-8, which no text names. `controls`: whether
        the format carries any control character (JSON does; a workflow command carries tab,
        CR and LF, the last two escaped, and the others stay escaped)."""
        raw = self.disk_paths.get(file)
        if raw is None or _NOT_TEXT.search(raw) or (not controls and _NOT_COMMAND.search(raw)):
            return self.uri(file)
        return self.path_prefix + raw

    def link(self, file: str) -> str:
        """`uri` as a URI path: the name's own octets percent-encoded (RFC 3986 section 2.1),
        so a name that is not UTF-8 (bytes FF FE) links to `%FF%FE`, the file itself, not to
        `%5Cxff%5Cxfe`, the escaped text the other formats show."""
        raw = self.path_prefix + self.disk_paths.get(file, file)
        return quote(raw, safe="/", errors="surrogateescape")

    def rule(self, rule_id: str) -> RulePolicy | None:
        return self.rules.get(rule_id)

    @property
    def all_findings(self) -> list[Finding]:
        """Reported and suppressed findings, in report order."""
        return sorted([*self.findings, *self.suppressed], key=Finding.sort_key)

    def counts_by_rule(self) -> dict[str, tuple[int, int]]:
        """rule id → (reported, suppressed), for rules with either."""
        reported = Counter(f.rule for f in self.findings)
        suppressed = Counter(f.rule for f in self.suppressed)
        return {r: (reported[r], suppressed[r]) for r in sorted(set(reported) | set(suppressed))}


def suppression_source(finding: Finding) -> str:
    """`annotation`, `config` or `baseline`: which mechanism suppressed the finding."""
    return (finding.suppressed_by or "").split(" ", 1)[0]


def suppression_text(finding: Finding) -> str:
    """Why the finding is suppressed, as every report shows it. The reason after `#` in an
    annotation, or a config exemption's `reason`, is text from the repo: made printable and
    cut as a message is (core/finding.py `_line_of_text`), so it forges no line, terminal
    escape or bidirectional reordering and carries no megabytes into each suppressed result."""
    text = finding.suppressed_by or ""
    if not text.isprintable():
        text = printable(text, line_breaks=" ")
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def path_prefix(root: str, cwd: str | None = None) -> str:
    """The checked root as seen from the working directory, when it lies inside it.

    CI systems (GitHub annotations and code scanning, GitLab) resolve paths against the
    repository root, which is the working directory of a CI job: `gpudrv-check check deploy/`
    must report `deploy/k8s/x.yaml`, not `k8s/x.yaml`.
    """
    try:
        rel = os.path.relpath(os.path.realpath(root), os.path.realpath(cwd or os.getcwd()))
    except ValueError:  # another drive on Windows
        return ""
    if rel == "." or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return ""
    return rel.replace(os.sep, "/") + "/"


# what JSON leaves raw with ensure_ascii=False and a reader could be fooled by: DEL and C1
# controls, line and paragraph separators, bidirectional marks and overrides, lone surrogates
_JSON_UNSAFE = lazy_compile(
    "[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def json_safe(text: str) -> str:
    """Rendered JSON (or SARIF) with those characters written as `\\uXXXX` escapes: the same
    JSON values, but no raw U+202E or U+2028 in the bytes (they only occur inside strings)."""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def render(fmt: str, report: Report, colour: bool = False) -> str:
    module: Any = importlib.import_module(f"gpudrv_check.report.{FORMATS[fmt]}")
    return module.render(report, colour=colour)


def iter_pieces(fmt: str, report: Report, colour: bool = False) -> Iterator[str]:
    """`render`'s text in pieces that join to it: the text format's cut between files'
    blocks (report/text.py `report_pieces`), any other format's whole (none for no text). One
    piece at a time, each made when the one before it is taken (a caller that encodes each
    piece holds the encoded ones, not every piece of text too)."""
    module: Any = importlib.import_module(f"gpudrv_check.report.{FORMATS[fmt]}")
    make = getattr(module, "pieces", None)
    if make is not None:
        return iter(make(report, colour=colour))
    text = module.render(report, colour=colour)
    return iter([text] if text else [])
