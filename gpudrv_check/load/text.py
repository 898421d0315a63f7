"""Bytes → text, with every way a file can fail to be text reported at its position."""

from __future__ import annotations

import codecs

from gpudrv_check.load.yaml_docs import LoadProblem


def line_col_at(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in bytes) of a byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def decode_text(data: bytes) -> tuple[str | None, LoadProblem | None]:
    """Decode a manifest file: UTF-8 (with or without BOM) or UTF-16/32 with a BOM.

    Returns the text, or None and the problem that makes the file unreadable.
    """
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding = "utf-32"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
        nul = data.find(b"\x00")
        if nul >= 0:
            line, col = line_col_at(data, nul)
            return None, LoadProblem(
                "GPU000",
                line,
                col,
                "binary content (NUL byte); not a YAML or JSON text file",
                "Move binary files out of the checked paths or exclude them in the config.",
            )
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        if encoding == "utf-8-sig":
            line, col = line_col_at(data, err.start)
            what = f"invalid UTF-8 byte 0x{data[err.start]:02x}"
        else:
            line, col = 1, 1
            what = f"invalid {encoding.upper()} text"
        return None, LoadProblem(
            "GPU000",
            line,
            col,
            f"{what}; the file is not readable text",
            "Save the file as UTF-8.",
        )
    if encoding != "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        return None, LoadProblem("GPU000", 1, 1, "binary content (NUL character) in text")
    return text, None
