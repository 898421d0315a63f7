"""Bytes → text, with every way a file can fail to be text reported at its position."""

from __future__ import annotations

import codecs
from codecs import BOM_UTF8

from gpudrv_check.read.policy import builtin
from gpudrv_check.read.yaml_docs import LoadProblem


def line_col_at(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters, as editors show it) of a UTF-8 byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    if start == 0 and data.startswith(BOM_UTF8):
        start = len(BOM_UTF8)
    return line, len(data[start:offset].decode("utf-8", "replace")) + 1


def text_line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _looks_like_utf16(data: bytes) -> bool:
    """ASCII-range text saved as UTF-16: every other byte is NUL."""
    sample = data[:4096]
    half = len(sample) // 2
    return half >= 2 and max(sample[0::2].count(0), sample[1::2].count(0)) >= half * 0.9


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
            if _looks_like_utf16(data):
                return None, LoadProblem(
                    builtin("unreadable-file").id,
                    1,
                    1,
                    "UTF-16 text without a byte order mark; not readable",
                    "Save the file as UTF-8 (or UTF-16 with a BOM).",
                )
            return None, LoadProblem(
                builtin("unreadable-file").id,
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
            builtin("unreadable-file").id,
            line,
            col,
            f"{what}; the file is not readable text",
            "Save the file as UTF-8.",
        )
    if encoding != "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    nul = text.find("\x00")
    if nul >= 0:
        line, col = text_line_col(text, nul)
        return None, LoadProblem(
            builtin("unreadable-file").id,
            line,
            col,
            "binary content (NUL character); not a YAML or JSON text file",
            "Move binary files out of the checked paths or exclude them in the config.",
        )
    return text, None
