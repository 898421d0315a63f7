"""Decoding: every way a file can fail to be text is a located GPU000."""

from __future__ import annotations

import codecs

import pytest

from gpudrv_check.read.text import decode_text


@pytest.mark.parametrize(
    "data",
    [
        b"a: 1\n",
        codecs.BOM_UTF8 + b"a: 1\n",
        "a: 1\n".encode("utf-16"),
        b"a: 1\r\nb: 2\r\n",
    ],
)
def test_text_encodings_that_are_read(data):
    text, problem = decode_text(data)
    assert problem is None
    assert text is not None and text.startswith("a: 1")


def test_nul_byte_is_binary_with_its_position():
    text, problem = decode_text(b"a: 1\nb: \x00\n")
    assert text is None
    assert (problem.rule, problem.line, problem.column) == ("GPU000", 2, 4)
    assert "binary" in problem.message


def test_invalid_utf8_points_at_the_byte():
    text, problem = decode_text(b"a: ok\nb: \xff\xfe bad\n")
    assert text is None
    assert (problem.line, problem.column) == (2, 4)
    assert "0xff" in problem.message
