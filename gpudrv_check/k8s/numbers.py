"""Numbers from the repo and the command line, parsed in one place with the API server's limits.

Every number the checker reads out of text (a node-affinity `Gt`/`Lt` value, a percentage, a
GPU count, a version component, a list index in a Helm path) goes through this module, never
through a bare `int()`: Python's `int()` refuses a string of more than 4,300 digits (its
`sys.int_max_str_digits`, an internal error for the checker) and `str.isdigit()` accepts digits
`int()` refuses (`"²"`). Go, which the API server and the operator are written in, never turns
such text into a number either:

- `parse_int64` is `strconv.ParseInt(s, 10, 64)` (and `strconv.Atoi` on 64-bit platforms):
  optional sign, ASCII digits, leading zeros allowed, int64 range; what node affinity's
  `Gt`/`Lt` (k8s.io/component-helpers/scheduling/corev1/nodeaffinity) and intstr's percentages
  (k8s.io/apimachinery/pkg/util/intstr) use;
- `parse_digits` is the unsigned form, for version components and list indices, bounded at
  int64 as well (a 30-digit "version" is not a release of anything);
- `gpu_count` reads an extended-resource quantity (`nvidia.com/gpu`) as the whole number the
  scheduler counts: a non-negative integer, at most int64 (k8s.io/apimachinery/pkg/api/resource
  `Quantity.Value()` is an int64; the API server requires extended resources to be integers,
  pkg/apis/core/validation `ValidateResourceQuantityValue`/"must be an integer").

All functions take any value and never raise; the callers report at the key what `why` says.
"""

from __future__ import annotations

from gpudrv_check.core.lazy_re import lazy_compile

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_MAX_DIGITS = len(str(INT64_MAX))  # 19: longer (after leading zeros) is out of range
TOO_LARGE = f"larger than the API server accepts (at most {INT64_MAX})"
_SIGNED = lazy_compile(r"[+-]?[0-9]+")
_DIGITS = lazy_compile(r"[0-9]+")


def _bounded(digits: str, negative: bool = False) -> int | None:
    """int() of ASCII digits only when it can be in int64 range (checked before converting)."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        return None
    number = -int(digits) if negative else int(digits)
    return number if INT64_MIN <= number <= INT64_MAX else None


def parse_int64(text: object) -> int | None:
    """Go `strconv.ParseInt(text, 10, 64)`; None where Go returns an error."""
    if not isinstance(text, str) or not _SIGNED.fullmatch(text):
        return None
    return _bounded(text.lstrip("+-"), text[0] == "-")


def parse_digits(text: object, limit: int = INT64_MAX) -> int | None:
    """Unsigned ASCII digits (`"0206"`) as a number no larger than `limit`; else None."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    number = _bounded(text)
    return number if number is not None and number <= limit else None


def too_large(text: str) -> bool:
    """Whether `text` is all ASCII digits but out of int64 range (say so, not "not a number")."""
    return bool(_DIGITS.fullmatch(text)) and parse_digits(text) is None


def oversized_number(text: str) -> str | None:
    """The first run of digits in `text` (a version such as `v25.10.0`) that is out of int64
    range, or None: such a version names no release, and is an error where it is given."""
    for match in _DIGITS.finditer(text):
        if parse_digits(match.group()) is None:
            return match.group()
    return None


def gpu_count(value: object) -> tuple[int | None, str | None]:
    """An extended-resource quantity as a whole number: (count, None) or (None, why)."""
    if isinstance(value, bool):
        return None, "not a number"
    if isinstance(value, int):
        if value < 0:
            return None, "negative"
        if value > INT64_MAX:
            return None, TOO_LARGE
        return value, None
    if isinstance(value, str):
        number = parse_digits(value)
        if number is not None:
            return number, None
        if too_large(value):
            return None, TOO_LARGE
    return None, "not a whole number"
