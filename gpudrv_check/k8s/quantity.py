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
- ``Value()`` and ``MilliValue()`` round up, away from zero (``ScaledValue``);
- ``Quantity.String()`` (``CanonicalizeBytes``), what the API server prints in its messages: the
  text as written when ``ParseQuantity`` found it canonical, else the value in the format of its
  suffix (decimal SI, binary SI below 1024 or inexact as decimal SI, or a decimal exponent),
  mantissa without trailing zeros and exponent a multiple of 3 (``0.5`` → ``500m``);
- sigs.k8s.io/yaml writes a YAML float as Go's ``encoding/json`` does (``'f'`` notation from
  1e-6 to 1e21, else ``'e'`` with ``e-7`` not ``e-07``), which is the text the API server parses.

Deliberate: magnitudes past int64 are capped (upstream keeps a decimal exactly and its
``Value()`` overflows int64; such amounts are reported as too large instead).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "FORMAT_WRONG",
    "NUMERIC",
    "SUFFIX",
    "parse_quantity",
    "canonical",
    "go_float_text",
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


@lru_cache(maxsize=4096)  # a repo writes the same few amounts thousands of times
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
    if not _fast(num, denom, base, exponent) and not _DIGITS & set(text[: -len(suffix) or None]):
        return None, NUMERIC  # inf.Dec.SetString refuses a number without digits ("Pi")
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


def _int32(number: int) -> int:
    """Go ``int32(n)``: the exponent of an ``e`` suffix wraps (``quantitySuffixer.interpret``)."""
    return (number + 2**31) % 2**32 - 2**31


def _format(suffix: str) -> tuple[int, int, str] | None:
    """(base, exponent, format) of a suffix: ``DecimalSI``, ``BinarySI`` or ``DecimalExponent``."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    interpreted = _exponent(suffix)
    return None if interpreted is None else (10, _int32(interpreted[1]), "DecimalExponent")


def _fast(num: str, denom: str, base: int, exponent: int) -> bool:
    """Whether ``ParseQuantity`` takes its int64 fast path (else ``inf.Dec.SetString``)."""
    shifted = num + denom
    if base == 2:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        return not denom and exponent >= 0 and precision >= 0 and int(num) << exponent <= _INT64_MAX
    return 18 - len(shifted) >= 0 and exponent - len(denom) >= -9


def _kept(num: str, denom: str, base: int, exponent: int, scale_limit: int) -> bool:
    """``ParseQuantity``'s fast path keeps the text as written when it is already canonical
    (and ``RoundUp(scale_limit)`` does not change it)."""
    if not _fast(num, denom, base, exponent):
        return False
    shifted = num + denom
    if base == 2:
        return exponent % 10 == 0 and int(shifted) & 7 != 0
    scale = exponent - len(denom)
    if scale < scale_limit:
        return False
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def _decimal_text(mantissa: int, exponent: int, form: str) -> str:
    """``AsCanonicalBytes`` + the suffix: trailing zeros into the exponent, a multiple of 3."""
    while mantissa and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if form == "DecimalExponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    names = {v: k for k, v in _DECIMAL.items()}
    return str(mantissa) + names.get(exponent, "")


def _binary_text(amount: int) -> str:
    exponent = 0
    while amount and amount % 1024 == 0 and exponent < 6:
        amount //= 1024
        exponent += 1
    return str(amount) + ({v // 10: k for k, v in _BINARY.items()}.get(exponent, ""))


def canonical(text: str, scale_limit: int = -9) -> str | None:
    """``ParseQuantity(text).String()``, after ``RoundUp(scale_limit)`` (``-3``: what defaulting,
    ``SetDefaults_ResourceList``, does to every resource list); None where the text is no
    quantity (or is too long to be one worth printing)."""
    if text == "0":
        return text
    if len(text) >= 400 or parse_quantity(text)[0] is None:
        return None
    split = _split(text)
    if isinstance(split, str):
        return None
    positive, num, denom, suffix = split
    interpreted = _format(suffix)
    if interpreted is None:
        return None
    base, exponent, form = interpreted
    if _kept(num, denom, base, exponent, scale_limit):
        return text
    sign, limit = ("" if positive else "-"), max(-9, scale_limit)
    if base == 10:
        mantissa, scale = int(num + denom), exponent - len(denom)
        if scale < limit:  # round up, away from zero
            drop = limit - scale
            mantissa = -(-mantissa // 10**drop) if drop < 420 else int(mantissa > 0)
            scale = limit
        return (sign + _decimal_text(mantissa, scale, form)) if mantissa else "0"
    amount = Fraction(int(num + denom), 10 ** len(denom)) * 2**exponent
    step = Fraction(1, 10**-limit)
    amount = min(Fraction(math.ceil(amount / step)) * step, Fraction(_INT64_MAX))
    if not amount:
        return "0"
    if amount < 1024 or amount.denominator != 1:
        nanos = int(amount / _NANO)
        return sign + _decimal_text(nanos, -9, "DecimalSI")
    return sign + _binary_text(int(amount))


def go_float_text(number: float) -> str:
    """A float64 as Go's ``encoding/json`` writes it (what sigs.k8s.io/yaml hands the server)."""
    text = repr(number)
    if number == 0 or 1e-6 <= abs(number) < 1e21:
        fixed = format(Decimal(text), "f")
        return fixed[:-2] if fixed.endswith(".0") else fixed
    mantissa, _, exponent = text.partition("e")
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    sign = "-" if exponent.startswith("-") else "+"
    return f"{mantissa}e{sign}{digits.zfill(2) if sign == '+' else digits}"


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
        return parse_quantity(go_float_text(value))
    if isinstance(value, str):
        return parse_quantity(value.strip())
    return None, FORMAT_WRONG


def _away_from_zero(amount: Fraction) -> int:
    return math.ceil(amount) if amount >= 0 else -math.ceil(-amount)


def _ratio_away_from_zero(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` (denominator > 0) rounded up, away from zero."""
    if numerator >= 0:
        return -(-numerator // denominator)
    return numerator // denominator


def value(quantity: Fraction) -> int:
    """``Quantity.Value()``: rounded up, away from zero, to a whole number."""
    if type(quantity) is Fraction or type(quantity) is int:  # exact integers, no new Fraction
        return _ratio_away_from_zero(quantity.numerator, quantity.denominator)
    return _away_from_zero(quantity)


def milli_value(quantity: Fraction) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up away from zero."""
    if type(quantity) is Fraction or type(quantity) is int:
        return _ratio_away_from_zero(quantity.numerator * 1000, quantity.denominator)
    return _away_from_zero(quantity * 1000)
