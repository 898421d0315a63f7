"""Findings carry one printable line: nothing from a hostile repo reaches a terminal raw."""

from __future__ import annotations

import pytest

from gpudrv_check.core.finding import MAX_MESSAGE, Finding, Location, ObjectRef, printable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("bell\x07", "bell\\x07"),
        ("nel\x85", "nel\\x85"),
        ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
        ("rlo\u202eevil", "rlo\\u202eevil"),
        ("lone\ud800", "lone\\ud800"),
        ("two\nlines", "two\\x0alines"),
    ],
)
def test_printable_escapes(text, expected):
    assert printable(text) == expected


def test_messages_and_hints_are_one_line():
    f = Finding(
        rule="GPU000",
        severity="error",
        message="first\nsecond\r\n::error file=x::forged\x1b[0m",
        hint="a\nb",
        location=Location(file="new\nline.yaml", line=1, column=1),
        object=ObjectRef(kind="Node", name="n\x1b"),
    )
    assert f.message == "first second ::error file=x::forged\\x1b[0m"
    assert f.hint == "a b"
    assert f.location.file == "new\\x0aline.yaml"
    assert f.object.name == "n\\x1b"


def test_a_huge_message_is_cut():
    f = Finding(rule="GPU005", severity="error", message="x" * 10**6, location=Location(file="a"))
    assert len(f.message) == MAX_MESSAGE and f.message.endswith("…")
