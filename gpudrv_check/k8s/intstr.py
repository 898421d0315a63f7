"""IntOrString values ("int or percentage") as Kubernetes scales and validates them.

- :func:`scaled_value` mirrors ``GetScaledValueFromIntOrPercent``
  (k8s.io/apimachinery/pkg/util/intstr): an int passes through unchanged; a string must end
  in ``%`` and the rest must parse as Go ``strconv.Atoi`` (optional sign, ASCII digits,
  64-bit range), then ``ceil``/``floor(percent * total / 100)`` in float64; any other string
  is an error ("string is not a percentage"). ``"5"`` is an error, not 5.
- :func:`validate_int_or_percent` mirrors what PDB validation accepts
  (pkg/apis/policy/validation: ``ValidatePositiveIntOrPercent`` + ``IsNotMoreThan100Percent``
  from pkg/apis/apps/validation) plus what the JSON decoder accepts for an IntOrString:
  an int32 >= 0, or a string matching ``[0-9]+%`` whose number is <= 100.

Inputs are plain JSON-like data and may have wrong types; nothing here raises.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.k8s.labels import json_type_name
from gpudrv_check.k8s.numbers import parse_int64

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
_VALID_PERCENT_RE = lazy_compile(r"[0-9]+%")

INVALID_FORMAT_MESSAGE = "must be an integer or percentage (e.g '5%')"


class IntOrPercent(NamedTuple):
    """A parsed IntOrString: ``amount`` is the int, or the percentage number when ``is_percent``."""

    amount: int
    is_percent: bool


def _decode_error(value: object) -> str | None:
    """Why ``value`` cannot be decoded into an IntOrString at all, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        # a located mapping from the loader is still "an object" to the author
        kind = json_type_name(value)
        if isinstance(value, float):
            kind = f"number {quoted(value)}"
        return f"{INVALID_FORMAT_MESSAGE}, not {kind}"
    if isinstance(value, int) and not INT32_MIN <= value <= INT32_MAX:
        return f"{value} does not fit in a 32-bit integer"
    return None


def _parse(value: object) -> tuple[IntOrPercent | None, str | None]:
    """getIntOrPercentValueSafely after JSON decoding: (parsed, None) or (None, error)."""
    error = _decode_error(value)
    if error is not None:
        return None, error
    if not isinstance(value, str):
        assert isinstance(value, int)  # _decode_error lets only int and str through
        return IntOrPercent(int(value), False), None
    if not value.endswith("%"):
        return None, f"invalid value {quoted(value)}: string is not a percentage"
    number = parse_int64(value[:-1])  # Go strconv.Atoi (64-bit)
    if number is None:
        return None, f"invalid value {quoted(value)}: not a number before '%'"
    return IntOrPercent(number, True), None


def parse_int_or_percent(value: object) -> IntOrPercent | None:
    """Parse an IntOrString the way the scaling helper does; None where it errors."""
    return _parse(value)[0]


def scaling_error(value: object) -> str | None:
    """The reason :func:`scaled_value` fails for ``value``, or None when it succeeds."""
    return _parse(value)[1]


def scaled_value(value: object, total: object, *, round_up: bool) -> int | None:
    """``GetScaledValueFromIntOrPercent(value, total, round_up)``; None where upstream errors.

    Ints pass through; ``"N%"`` becomes ceil (``round_up``) or floor of ``N * total / 100``
    computed in float64 exactly like upstream (so 90% of 95 rounds to 86 up, 85 down).
    """
    parsed, _ = _parse(value)
    if parsed is None:
        return None
    if not parsed.is_percent:
        return parsed.amount
    if isinstance(total, bool) or not isinstance(total, int):
        return None
    try:
        # Same float64 arithmetic as Go, so rounding at the edges matches bit for bit.
        product = float(parsed.amount) * float(total) / 100
        return math.ceil(product) if round_up else math.floor(product)
    except (OverflowError, ValueError):
        return None


def validate_int_or_percent(value: object) -> list[str]:
    """Messages PDB validation gives for a set ``minAvailable``/``maxUnavailable`` value.

    Null means "not set" and is valid. A percentage too large for int64
    ("99999999999999999999%") is over 100: `getPercentValue` (apimachinery validation) reads it
    with strconv.Atoi, which returns the largest int64 with its range error, and the error is
    dropped.
    """
    if value is None:
        return []
    error = _decode_error(value)
    if error is not None:
        return [error]
    if not isinstance(value, str):
        assert isinstance(value, int)  # _decode_error lets only int and str through
        return ["must be greater than or equal to 0"] if int(value) < 0 else []
    if not _VALID_PERCENT_RE.fullmatch(value):
        return [INVALID_FORMAT_MESSAGE]
    number = parse_int64(value[:-1])  # Go strconv.Atoi (64-bit); None: past int64, clamped
    if number is None or number > 100:
        return ["must not be greater than 100%"]
    return []
