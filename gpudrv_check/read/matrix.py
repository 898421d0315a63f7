"""The support matrix CSV: the driver images that were really built and pushed.

Header `driver_branch,kernel,os_tag` (extra columns ignored, in any order), `#` comment lines
and blank lines allowed, CRLF line ends and a UTF-8 BOM tolerated. Malformed and duplicate rows
become findings at their line; the good rows are still used.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import field

from gpudrv_check.core.finding import Finding, Location, quoted
from gpudrv_check.core.records import record
from gpudrv_check.read.policy import builtin

REQUIRED_COLUMNS = ("driver_branch", "kernel", "os_tag")
_BRANCH = re.compile(r"[0-9]+\Z")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
_LINE_END = re.compile(r"\r\n|\r|\n")


@record(frozen=True, kw_only=True)
class MatrixRow:
    """A row of the support matrix: one precompiled driver image that exists. Made only by
    `parse_matrix` from cells it checked (each bad row a finding at its line)."""

    driver_branch: str
    kernel: str
    os_tag: str
    line: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver_branch, self.kernel, self.os_tag)


@record
class Matrix:
    file: str
    rows: list[MatrixRow] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    header_line: int = 0
    header: list[str] = field(default_factory=list)  # column names, lower case, as written
    data_lines: int = 0  # lines after the header that are not blank or comments
    end_line: int = 0  # number of the file's last line (a new row goes after it)
    digest: str = ""  # sha256 of the bytes read, to notice a change before rewriting

    def __post_init__(self) -> None:
        self._keys: set[tuple[str, str, str]] | None = None

    def has(self, branch: str, kernel: str, os_tag: str) -> bool:
        if self._keys is None:
            self._keys = {r.key for r in self.rows}
        return (branch, kernel, os_tag) in self._keys

    def find(self, branch: str, kernel: str, os_tag: str) -> MatrixRow | None:
        for row in self.rows:
            if row.key == (branch, kernel, os_tag):
                return row
        return None


def _problem(
    file: str,
    line: int,
    column: int,
    message: str,
    hint: str,
    case: str | None = None,
    row: str = "",
) -> Finding:
    # identity is the row's text, not its line number: a row added above keeps it (PR mode)
    return Finding(
        rule=builtin("invalid-matrix-row").id,
        severity=builtin("invalid-matrix-row").severity_of(case),
        message=message,
        hint=hint,
        location=Location(file=file, line=line, column=column),
        path=["row", row.strip()] if row.strip() else ["file"],
    )


#: an example value of each column, for a fix written in the header's order
_EXAMPLE = {"driver_branch": "550", "kernel": "5.15.0-119-generic", "os_tag": "ubuntu22.04"}
_PLACEHOLDER = {"driver_branch": "<branch>", "kernel": "<kernel>", "os_tag": "<os_tag>"}


def _row_hint(names: list[str]) -> str:
    """How to write a row under this header: its columns in its order (the file may order them
    as it likes; other columns are left empty)."""
    shape = ",".join(_PLACEHOLDER.get(n, "") for n in names)
    example = ",".join(_EXAMPLE.get(n, "") for n in names)
    return f"Write the row as `{shape}`, e.g. `{example}`."


def parse_matrix(file: str, data: bytes) -> Matrix:
    matrix = Matrix(file, digest=hashlib.sha256(data).hexdigest())
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        matrix.problems.append(
            _problem(
                file,
                line,
                1,
                "support matrix is not UTF-8 text",
                "Save it as UTF-8.",
            )
        )
        return matrix
    header: dict[str, int] | None = None
    seen: dict[tuple[str, str, str], int] = {}
    # lines end at LF, CRLF or CR only (str.splitlines also splits at VT, FF, NEL, LS, …,
    # which would shift every line number after one of them)
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the text ends with a line break: no line after it
    matrix.end_line = len(lines)
    for number, raw_line in enumerate(lines, start=1):
        stripped = raw_line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if header is not None:
            matrix.data_lines += 1
        try:
            cells = next(csv.reader([raw_line]))
        except csv.Error as err:
            matrix.problems.append(
                _problem(
                    file,
                    number,
                    1,
                    f"malformed CSV line: {err}",
                    "Fix the quoting.",
                    row=raw_line,
                )
            )
            continue
        cells = [c.strip() for c in cells]
        if header is None:
            names = [c.lower() for c in cells]
            missing = [c for c in REQUIRED_COLUMNS if c not in names]
            if missing:
                matrix.problems.append(
                    _problem(
                        file,
                        number,
                        1,
                        f"header lacks column(s) {', '.join(missing)}; expected "
                        "`driver_branch,kernel,os_tag`",
                        "Make the first non-comment line the header `driver_branch,kernel,os_tag`.",
                        row=raw_line,
                    )
                )
                return matrix
            header = {name: names.index(name) for name in REQUIRED_COLUMNS}
            matrix.header_line = number
            matrix.header = names
            continue
        width = max(header.values()) + 1
        if len(cells) < width:
            matrix.problems.append(
                _problem(
                    file,
                    number,
                    1,
                    f"row has {len(cells)} field(s), needs driver_branch, kernel and os_tag",
                    _row_hint(matrix.header or list(REQUIRED_COLUMNS)),
                    row=raw_line,
                )
            )
            continue
        branch, kernel, os_tag = (cells[header[c]] for c in REQUIRED_COLUMNS)
        bad = []
        if not _BRANCH.match(branch):
            bad.append(f"driver_branch {quoted(branch)} is not a number like 550")
        if not _TOKEN.match(kernel):
            bad.append(f"kernel {quoted(kernel)} is not a kernel version like 5.15.0-119-generic")
        if not _TOKEN.match(os_tag):
            bad.append(f"os_tag {quoted(os_tag)} is not an OS tag like ubuntu22.04")
        if bad:
            matrix.problems.append(
                _problem(
                    file,
                    number,
                    1,
                    "; ".join(bad),
                    "Each row is the three parts of a precompiled driver image tag.",
                    row=raw_line,
                )
            )
            continue
        key = (branch, kernel, os_tag)
        if key in seen:
            matrix.problems.append(
                _problem(
                    file,
                    number,
                    1,
                    f"duplicate row {','.join(key)} (first on line {seen[key]})",
                    "Delete the repeated row.",
                    "duplicate-row",
                    row=raw_line,
                )
            )
            continue
        seen[key] = number
        matrix.rows.append(
            MatrixRow(driver_branch=branch, kernel=kernel, os_tag=os_tag, line=number)
        )
    if header is None:
        matrix.problems.append(
            _problem(
                file,
                1,
                1,
                "support matrix is empty: no header `driver_branch,kernel,os_tag`",
                "Add the header line and one row per driver image you built.",
            )
        )
    return matrix
