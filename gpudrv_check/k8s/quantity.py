"""Kubernetes resource quantities (``1``, ``"500m"``, ``1Gi``, ``2e3``) as exact numbers.

Reproduces (not copies) k8s.io/apimachinery/pkg/api/resource/quantity.go:

- ``ParseQuantity`` / ``parseQuantityString``: optional sign, leading zeros, digits, an
  optional ``.`` and fraction (``1.`` and ``.5`` are numbers, ``.`` alone is 0), then one suffix:
  decimal SI ``n u m k M G T P E``, binary SI ``Ki Mi Gi Ti Pi Ei``, or a decimal exponent
  ``e``/``E`` followed by a signed integer (``E`` alone is exa); anything else is one of
  upstream's three errors, quoted in :data:`FORMAT_WRONG`, :data:`NUMERIC`, :data:`SUFFIX`;
- non-zero values are rounded up to the nano scale (``inf.RoundUp``), magnitudes capped at
  int64 (``maxAllowed``);
- ``Quantity.UnmarshalJSON``: JSON ``null`` is the zero quantity, the text is trimmed
  (``strings.TrimSpace``), a JSON number is read as its text (YAML ``1.0`` reaches the API server
  as ``1``);
- ``Value()`` and ``MilliValue()`` round up (``ScaledValue`` with ``RoundUp``).
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "FORMAT_WRONG",
    "NUMERIC",
    "SUFFIX",
    "parse_quantity",
    "quantity_value",
    "value",
    "milli_value",
]

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_INT64_MAX = 2**63 - 1
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = Fraction(1, 10**9)
# past this many decimal digits a value is capped anyway: never build 10**huge
_MAX_MAGNITUDE = 40


def _split(text: str) -> tuple[bool, str, str, str] | str:
    """``parseQuantityString``: (positive, numerator, denominator, suffix) or an error."""
    positive, pos, end = True, 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return FORMAT_WRONG
    return positive, num, denom, text[suffix_start:]


def _exponent(suffix: str) -> tuple[int, int] | None:
    """(base, exponent) of a suffix (``quantitySuffixer.interpret``), or None."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body) and len(body.lstrip("0")) <= 18:
            return 10, int(digits)
    return None


def parse_quantity(text: str) -> tuple[Fraction | None, str | None]:
    """``ParseQuantity(text)``: (value, None) or (None, upstream's error)."""
    if not text:
        return None, FORMAT_WRONG
    split = _split(text)
    if isinstance(split, str):
        return None, split
    positive, num, denom, suffix = split
    interpreted = _exponent(suffix)
    if interpreted is None:
        return None, SUFFIX
    base, exponent = interpreted
    mantissa = Fraction(int(num + denom), 10 ** len(denom)) if len(num + denom) < 400 else None
    if mantissa is None or (base == 10 and len(num.lstrip("0")) + exponent > _MAX_MAGNITUDE):
        magnitude = Fraction(_INT64_MAX) if num.strip("0") or denom.strip("0") else Fraction(0)
    elif base == 10 and exponent < -_MAX_MAGNITUDE:
        magnitude = _NANO if mantissa else Fraction(0)
    else:
        scale = Fraction(base) ** exponent
        magnitude = mantissa * scale
    if magnitude:
        magnitude = Fraction(math.ceil(magnitude / _NANO)) * _NANO  # round up to nano
    magnitude = min(magnitude, Fraction(_INT64_MAX))
    return (magnitude if positive else -magnitude), None


def quantity_value(value: object) -> tuple[Fraction | None, str | None]:
    """A quantity as written in a manifest (JSON/YAML scalar) → (value, None) or (None, why)."""
    if value is None:
        return Fraction(0), None  # JSON null: the zero quantity
    if isinstance(value, bool):
        return None, FORMAT_WRONG
    if isinstance(value, int):
        return parse_quantity(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            return None, FORMAT_WRONG
        text = repr(value)
        # JSON writes a float64 as its shortest text, without a trailing ".0"
        return parse_quantity(text[:-2] if text.endswith(".0") else text)
    if isinstance(value, str):
        return parse_quantity(value.strip())
    return None, FORMAT_WRONG


def value(quantity: Fraction) -> int:
    """``Quantity.Value()``: rounded up to a whole number."""
    return math.ceil(quantity)


def milli_value(quantity: Fraction) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up."""
    return math.ceil(quantity * 1000)
