"""Append one row to the support matrix CSV, leaving every existing byte as it is."""

from __future__ import annotations

from gpudrv_check.core.finding import quoted
from gpudrv_check.edit.safe_write import EditError
from gpudrv_check.read.matrix import REQUIRED_COLUMNS


def row_text(header: list[str], values: dict[str, str]) -> str:
    """The row in the header's column order; columns other than the three stay empty."""
    for name, value in values.items():
        if any(ch in value for ch in ',"\r\n') or not value:
            raise EditError(f"cannot write {name} {quoted(value)} into a CSV row")
    return ",".join(values.get(column, "") for column in header)


def append_row(original: bytes, header: list[str], branch: str, kernel: str, os_tag: str) -> bytes:
    """``original`` with ``branch,kernel,os_tag`` appended as its last line.

    Keeps the file's line ending (CRLF when its lines use it) and adds the missing newline of
    an unterminated last line first.
    """
    if not header or any(column not in header for column in REQUIRED_COLUMNS):
        raise EditError("the support matrix has no `driver_branch,kernel,os_tag` header")
    values = dict(zip(REQUIRED_COLUMNS, (branch, kernel, os_tag), strict=True))
    newline = b"\r\n" if b"\r\n" in original else b"\n"
    prefix = b"" if not original or original.endswith((b"\n", b"\r")) else newline
    return original + prefix + row_text(header, values).encode("utf-8") + newline
