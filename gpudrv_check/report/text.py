"""Human-readable output, grouped by file, each line at most the terminal width.

```
k8s/node3.yaml
  14:5 error GPU001 node lab-node-3 needs driver image 550-6.8.0-52-generic-ubuntu24.04,
      which is not in the support matrix (support-matrix.csv)
      fix: Build and push the driver image 550-6.8.0-52-generic-ubuntu24.04, then add the
        row …

N files, M objects read; E errors, W warnings[; S suppressed]
```

Files in report order (the findings are sorted by file, line, column); message and fix wrap
under the location at word boundaries (a word longer than the line, such as an image tag, is
never cut). `--format concise` (report/concise.py) keeps one `file:line:col:` line each.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding

if TYPE_CHECKING:
    from gpudrv_check.report import Report

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_RESET = "\033[0m"
#: the width when the output is no terminal and COLUMNS is not set
DEFAULT_WIDTH = 100
MIN_WIDTH = 40
_MESSAGE_INDENT = " " * 6
_FIX_INDENT = " " * 8


def use_colour(stream, choice: str = "auto", environ: Mapping[str, str] | None = None) -> bool:
    """`--color always|never`, else NO_COLOR (any value: off) over FORCE_COLOR (any value but
    empty or 0: on), else whether the stream is a terminal (https://no-color.org,
    https://force-color.org)."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def terminal_width(stream=None) -> int:
    """COLUMNS, else the width of the terminal `stream` is, else DEFAULT_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    try:
        fileno = stream.fileno() if stream is not None else None
        if fileno is not None and os.isatty(fileno):
            return max(MIN_WIDTH, os.get_terminal_size(fileno).columns)
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


def _severity(f: Finding, colour: bool) -> str:
    severity = f.severity.value
    return f"{_COLOURS[severity]}{severity}{_RESET}" if colour else severity


def finding_line(f: Finding, colour: bool = False) -> str:
    """`file:line:col: severity RULE message`: one line (concise, and the `-v` listings)."""
    return f"{f.location}: {_severity(f, colour)} {f.rule} {f.message}"


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """textwrap.wrap without cutting words (or at hyphens). Printable text (the findings of a
    large repo: thousands of them) takes `_wrap_spaces`, which gives the same lines at a
    fraction of textwrap's cost: `str.isprintable` is false for every whitespace character but
    the space (categories Cc, Zs, Zl, Zp). Anything else takes textwrap itself."""
    if text.isprintable() and min(width - len(first), width - len(rest)) > 0:
        return _wrap_spaces(text, width, first, rest) or [first.rstrip()]
    return wrap_by_textwrap(text, width, first, rest)


def wrap_by_textwrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """The lines textwrap itself gives (what `_wrap_spaces` must equal: tests/report);
    imported here: a report of printable text, nearly every one, never asks it."""
    import textwrap

    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _wrap_spaces(text: str, width: int, first: str, rest: str) -> list[str]:
    """textwrap's greedy fill (`TextWrapper._wrap_chunks`: break_long_words=False,
    break_on_hyphens=False, drop_whitespace) for text whose only whitespace is the space: its
    chunks are the runs of spaces and of other characters, so each line is found with one
    `rfind` instead of a loop over the chunks."""
    lines: list[str] = []
    end, at = len(text), 0
    while at < end:
        if lines and text[at] == " ":  # a line after the first starts past the spaces
            at = _past_spaces(text, at)
            if at == end:
                break
        indent = rest if lines else first
        cut = _fill(text, at, width - len(indent))
        line = text[at:cut].rstrip(" ")  # the last chunk, when it is spaces, is dropped
        if line:
            lines.append(indent + line)
        at = cut
    return lines


def _past_spaces(text: str, at: int) -> int:
    while at < len(text) and text[at] == " ":
        at += 1
    return at


def _fill(text: str, at: int, room: int) -> int:
    """Where the line starting at `at` ends: after the last whole chunk that fits in `room`
    columns, or after the first chunk when even that one does not fit (a long word)."""
    limit = at + room
    if limit >= len(text):
        return len(text)
    if text[limit] == " " or text[limit - 1] == " ":
        cut = limit if text[limit - 1] != " " else len(text[at:limit].rstrip(" ")) + at
        if cut > at:
            return cut
    else:
        space = text.rfind(" ", at, limit)
        if space >= 0:
            return space + 1
    # no chunk boundary within the room: the first chunk alone, however long
    if text[at] == " ":
        return _past_spaces(text, at)
    space = text.find(" ", at)
    return len(text) if space < 0 else space


def finding_block(
    f: Finding, width: int, colour: bool = False, fixes: dict[str, list[str]] | None = None
) -> list[str]:
    """One finding under its file's heading: location, severity and rule, then the message
    and the fix wrapped to `width` (colour codes do not count: they take no column).
    `fixes`: the wrapped lines of each fix text seen so far at this width (a large repo's
    findings share a few dozen fixes among thousands of findings)."""
    loc = f.location
    head = f"  {loc.line}:{loc.column} {f.severity.value} {f.rule} "
    lines = _wrap(head + f.message, width, "", _MESSAGE_INDENT)
    if colour:
        plain = f"{f.severity.value} "
        lines[0] = lines[0].replace(plain, _severity(f, True) + " ", 1)
    hint = f.hint
    if hint:
        fix = fixes.get(hint) if fixes is not None else None
        if fix is None:
            fix = _wrap(f"fix: {hint}", width, _MESSAGE_INDENT, _FIX_INDENT)
            if fixes is not None:
                fixes[hint] = fix
        lines += fix
    return lines


def finding_text(f: Finding, width: int, fixes: dict[str, list[str]] | None = None) -> str:
    """`finding_block` as one text, without colour: what the partition cache keeps of a
    finding (`Finding.rendered`), for the runs that take the finding from it."""
    return "\n".join(finding_block(f, width, False, fixes))


#: about how long a piece of a report is (`report_pieces`)
PIECE = 1 << 20


def report_pieces(
    findings: Iterable[Finding], summary: str | None, colour: bool = False, width: int = 0
) -> Iterator[str]:
    """The report in pieces of about `PIECE` characters, cut between files' blocks (never
    inside a line, so never inside a colour code); joined, they are the report. A large
    repo's report is never one string: it is written and cached a piece at a time (10k
    workloads: 14 MB of report, which as one string was copied whole by the final join, by
    the stream's encoder and by `marshal`, at the run's peak of memory). Each piece is made
    once the one before it is taken: `check` encodes each to UTF-8 as it comes, and holds
    those bytes, not the text too (a 10k report's text with an arrow in it is two bytes a
    character: 28 MB)."""
    width = width or DEFAULT_WIDTH
    # one text per file's block, its lines joined as soon as the block is complete: the lines
    # of a large repo's report (hundreds of thousands of small strings) are never all held
    pieces: list[str] = []
    blocks: list[str] = []  # the blocks of the piece being made
    size = 0

    def add(block: str) -> None:
        nonlocal size
        if size >= PIECE:
            pieces.append("\n\n".join(blocks) + "\n\n")
            blocks.clear()
            size = 0
        blocks.append(block)
        size += len(block) + 2

    lines: list[str] = []
    current: str | None = None
    fixes: dict[str, list[str]] = {}
    for f in findings:
        if f.location.file != current:
            if current is not None:
                add("\n".join(lines))
                if pieces:
                    yield from pieces
                    pieces.clear()
            current = f.location.file
            lines = [current]
        rendered = f.rendered
        if rendered is not None and rendered[0] == width:
            # the text the partition cache kept with the finding: its block, as
            # finding_block writes it (the colour of its severity is the one difference),
            # given up once the report holds it (a large repo's texts, held twice, were the
            # run's peak of memory); a second report at this width wraps the finding again
            f.rendered = None
            text = rendered[1]
            if colour:  # in its first line only, as finding_block colours it
                first, newline, rest = text.partition("\n")
                severity = f"{f.severity.value} "
                text = first.replace(severity, _severity(f, True) + " ", 1) + newline + rest
            lines.append(text)
        else:
            lines += finding_block(f, width, colour, fixes)
    if current is not None:
        add("\n".join(lines))
    if summary is not None:
        add(summary)
    if blocks:
        pieces.append("\n\n".join(blocks) + "\n")
    yield from pieces


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
    """The summary (printed alone when the reports go to files)."""
    s = report.summary
    line = "".join(f"note: {note}\n" for note in s.notes)
    line += summary_line(s.files, s.objects, s.counts, s.suppressed)
    if s.baseline:
        line += f" (baseline {s.baseline})"
    if s.base is not None:
        line += f"\n{s.new} new, {s.fixed} fixed, {s.unchanged} unchanged (base {s.base})"
    return line


def shown(report: Report) -> list[Finding]:
    """The findings a terminal format shows: all, or the errors alone with --quiet."""
    if report.quiet:
        return [f for f in report.findings if f.severity.value == "error"]
    return report.findings


def render(report: Report, *, colour: bool = False) -> str:
    return "".join(pieces(report, colour=colour))


def pieces(report: Report, *, colour: bool = False) -> Iterator[str]:
    """`render`'s text in pieces (`report_pieces`), one at a time."""
    summary = None if report.quiet else render_summary(report)
    return report_pieces(shown(report), summary, colour, report.width)
