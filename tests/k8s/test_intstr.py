"""IntOrString scaling and validation (apimachinery intstr_test.go, PDB validation rules)."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.intstr import (
    IntOrPercent,
    parse_int_or_percent,
    scaled_value,
    scaling_error,
    validate_int_or_percent,
)

SCALE_ROWS = [
    # upstream TestGetScaledValueFromIntOrPercent, restated
    ("int passes through", 123, 0, False, 123),
    ("90% of 100", "90%", 100, True, 90),
    ("90% of 95 rounds up", "90%", 95, True, 86),
    ("90% of 95 rounds down", "90%", 95, False, 85),
    ("bare percent sign", "%", 0, False, None),
    ("wrong suffix", "90#", 0, False, None),
    ("not a number before %", "#%", 0, False, None),
    ("plain numeric string is not a percentage", "5", 10, True, None),
    # the numbers the disruption controller sees
    ("25% of 4", "25%", 4, True, 1),
    ("25% of 5 up", "25%", 5, True, 2),
    ("25% of 5 down", "25%", 5, False, 1),
    ("30% of 7 up (maxUnavailable)", "30%", 7, True, 3),
    ("34% of 3 up", "34%", 3, True, 2),
    ("28% of 11 up", "28%", 11, True, 4),
    ("28% of 22 up", "28%", 22, True, 7),
    ("1% of 1 up", "1%", 1, True, 1),
    ("0% of 10", "0%", 10, True, 0),
    ("100% of 7", "100%", 7, True, 7),
    ("50% of 0", "50%", 0, True, 0),
    # Go strconv.Atoi: optional sign, ASCII digits, leading zeros, no spaces or underscores
    ("leading zeros", "010%", 10, True, 1),
    ("plus sign", "+10%", 10, True, 1),
    ("negative percent up", "-15%", 10, True, -1),
    ("negative percent down", "-15%", 10, False, -2),
    ("leading space", " 10%", 10, True, None),
    ("underscore digits", "1_0%", 10, True, None),
    ("decimal percent", "10.5%", 10, True, None),
    ("double percent sign", "10%%", 10, True, None),
    ("non-ASCII digits", "\uff11\uff10%", 10, True, None),
    ("beyond int64", "99999999999999999999%", 10, True, None),
    # ints: int32 after JSON decoding
    ("negative int passes through", -3, 10, True, -3),
    ("int beyond int32", 2**31, 10, True, None),
    # wrong types
    ("boolean", True, 10, True, None),
    ("float", 1.0, 10, True, None),
    ("null", None, 10, True, None),
    ("list", [1], 10, True, None),
    ("object", {"a": 1}, 10, True, None),
    ("total not an int", "50%", "10", True, None),
    ("total boolean", "50%", True, True, None),
    ("int ignores a bad total", 5, None, True, 5),
]


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [row[1:] for row in SCALE_ROWS],
    ids=[row[0] for row in SCALE_ROWS],
)
def test_scaled_value(value: object, total: object, round_up: bool, expected: int | None) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


PARSE_ROWS = [
    ("int", 4, IntOrPercent(4, False)),
    ("percent", "25%", IntOrPercent(25, True)),
    ("zero percent", "0%", IntOrPercent(0, True)),
    ("not a percentage", "25", None),
    ("boolean", False, None),
]


@pytest.mark.parametrize(
    ("value", "expected"), [row[1:] for row in PARSE_ROWS], ids=[row[0] for row in PARSE_ROWS]
)
def test_parse_int_or_percent(value: object, expected: IntOrPercent | None) -> None:
    assert parse_int_or_percent(value) == expected
    assert (scaling_error(value) is None) is (expected is not None)


def test_scaling_error_says_why() -> None:
    assert "not a percentage" in (scaling_error("5") or "")
    assert "32-bit" in (scaling_error(2**40) or "")


VALIDATE_ROWS = [
    ("unset", None, None),
    ("zero", 0, None),
    ("positive int", 5, None),
    ("int above 100 is fine", 1000, None),
    ("negative int", -1, "greater than or equal to 0"),
    ("0%", "0%", None),
    ("100%", "100%", None),
    ("101%", "101%", "not be greater than 100%"),
    ("leading zeros read as 100", "0100%", None),
    ("leading zeros read as 101", "0101%", "not be greater than 100%"),
    ("plain number string", "5", "integer or percentage"),
    ("negative percent", "-5%", "integer or percentage"),
    ("signed percent", "+5%", "integer or percentage"),
    ("decimal percent", "5.5%", "integer or percentage"),
    ("empty string", "", "integer or percentage"),
    ("percent sign only", "%", "integer or percentage"),
    ("space before percent", "5 %", "integer or percentage"),
    # apimachinery getPercentValue: strconv.Atoi returns the largest int64 with ErrRange
    # (strconv.ParseInt clamps), the error is dropped, and IsNotMoreThan100Percent refuses it
    ("percent beyond int64", "99999999999999999999%", "must not be greater than 100%"),
    ("boolean", True, "integer or percentage"),
    ("float", 1.5, "integer or percentage"),
    ("list", [1], "integer or percentage"),
    ("object", {"value": 1}, "integer or percentage"),
    ("int beyond int32", 2**31, "32-bit"),
]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [row[1:] for row in VALIDATE_ROWS],
    ids=[row[0] for row in VALIDATE_ROWS],
)
def test_validate_int_or_percent(value: object, fragment: str | None) -> None:
    messages = validate_int_or_percent(value)
    if fragment is None:
        assert messages == []
    else:
        assert len(messages) == 1
        assert fragment in messages[0]
